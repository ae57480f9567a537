/**
 * A full disk or database, whichever adapter hit it: the file system (ENOSPC, EDQUOT), SQLite
 * (SQLITE_FULL) or PostgreSQL (53100 disk_full, 53200 out of memory on a temp file is not this). The
 * error may be wrapped (Sequelize keeps the driver's as `parent`/`original`, others as `cause`).
 */
import { CoreError } from '../../core/errors.js';

const FULL_CODES = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL', '53100']);

/** Whether the error, or one it wraps, says the storage is full. */
export function isStorageFull(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  const record = error as { code?: unknown; errno?: unknown; parent?: unknown; original?: unknown; cause?: unknown; message?: unknown };
  if (typeof record.code === 'string' && FULL_CODES.has(record.code)) return true;
  // node-sqlite3 puts the code in the message only on some paths.
  if (typeof record.message === 'string' && record.message.startsWith('SQLITE_FULL')) return true;
  return [record.parent, record.original, record.cause].some((inner) => inner !== error && isStorageFull(inner, depth + 1));
}

/** STORAGE_FULL for an error that says the storage is full; undefined for any other. */
export function classifyStorageError(error: unknown): CoreError | undefined {
  return isStorageFull(error)
    ? new CoreError('STORAGE_FULL', 'The service has no space left to store this. Try again once space is freed.')
    : undefined;
}
