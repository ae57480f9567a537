import { describe, expect, test } from 'vitest';
import { errorToResponse } from '../../core/api/problem.js';
import { CoreError } from '../../core/errors.js';
import { classifyStorageError, isStorageFull } from './storage-full.js';

describe('a full disk or database', () => {
  test('is recognised from the file system, SQLite and PostgreSQL, also when wrapped', () => {
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const sqlite = Object.assign(new Error('SQLITE_FULL: database or disk is full'), { errno: 13, code: 'SQLITE_FULL' });
    const wrapped = Object.assign(new Error('SequelizeDatabaseError'), { parent: sqlite, original: sqlite });
    const pg = Object.assign(new Error('could not extend file'), { code: '53100' });
    const message = new Error('SQLITE_FULL: database or disk is full');
    for (const error of [enospc, sqlite, wrapped, pg, message, new Error('outer', { cause: enospc })]) expect(isStorageFull(error)).toBe(true);
    for (const error of [new Error('SQLITE_BUSY'), Object.assign(new Error('x'), { code: 'ECONNRESET' }), undefined, 'ENOSPC']) expect(isStorageFull(error)).toBe(false);
  });

  test('answers 507 STORAGE_FULL with a problem a client can act on, never a 500 without a word', () => {
    const error = Object.assign(new Error('SequelizeDatabaseError'), { parent: Object.assign(new Error('SQLITE_FULL'), { code: 'SQLITE_FULL' }) });
    const logged: unknown[] = [];
    const response = errorToResponse(error, (unexpected) => void logged.push(unexpected), classifyStorageError);
    expect(response.status).toBe(507);
    expect(response.body).toMatchObject({ code: 'STORAGE_FULL', title: 'Insufficient Storage' });
    expect(logged).toEqual([]);
    // As the SQL storage lets it out: an INTERNAL CoreError, the driver's error its cause.
    const wrapped = new CoreError('INTERNAL', 'storage query failed (SQLITE_FULL)', { cause: Object.assign(new Error('SQLITE_FULL'), { code: 'SQLITE_FULL' }) });
    expect(errorToResponse(wrapped, (unexpected) => void logged.push(unexpected), classifyStorageError).status).toBe(507);
    expect(logged).toEqual([]);
    expect(errorToResponse(new CoreError('INTERNAL', 'storage query failed (SQLITE_BUSY)'), () => 'id', classifyStorageError).status).toBe(500);
    // Without the classifier (or for another error) it stays an unexpected error.
    expect(errorToResponse(error, () => 'id').status).toBe(500);
    expect(errorToResponse(new Error('boom'), () => 'id', classifyStorageError).status).toBe(500);
  });
});
