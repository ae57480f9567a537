import type { CoreDeps } from '../deps.js';
import type { Account, BulkRequest } from '../domain/types.js';
import { CoreError, isCoreError } from '../errors.js';
import { headerProblem, layoutHeader } from '../csv/header.js';
import { nowIso } from '../time.js';
import { csvRecords, MAX_BULK_ROWS, RecordsWriter } from './csv-stream.js';
import { nextStatus } from './machine.js';
import { notifyBulkStatus } from './notify.js';
import { BULK_JOB, expireIfDue } from './start.js';

/** Content types a CSV arrives with from browsers, curl and spreadsheet tools (PRODUCT asks for text/csv). */
const CSV_CONTENT_TYPES = new Set(['text/csv', 'application/csv', 'text/plain', 'application/octet-stream', 'application/vnd.ms-excel']);

export function isCsvContentType(contentType: string | undefined): boolean {
  if (!contentType) return true;
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  return CSV_CONTENT_TYPES.has(mediaType);
}

export interface FileCheck {
  /** Data rows (blank rows excluded). */
  rows: number;
}

/**
 * Where the upload check stores the records it parsed (header first, see `RecordsWriter`), so the import
 * does not parse the CSV again. Derived from the upload's key: each upload attempt has its own.
 */
export function recordsKeyOf(uploadKey: string): string {
  return `${uploadKey.replace(/\.csv$/, '')}.records`;
}

/** The file-level rules of the upload check, record by record (header first). */
class FileChecker {
  private header: string[] | undefined;
  private rows = 0;

  /** Throws CSV_INVALID or CSV_TOO_MANY_ROWS as soon as the records so far break a rule. */
  accept(record: string[]): void {
    if (!this.header) {
      this.header = record;
      const problem = headerProblem(layoutHeader(record));
      if (problem) throw new CoreError('CSV_INVALID', problem);
      return;
    }
    this.rows++;
    if (this.rows > MAX_BULK_ROWS) {
      throw new CoreError('CSV_TOO_MANY_ROWS', `The file has more than ${MAX_BULK_ROWS.toLocaleString('en-US')} patient rows; split it into several files`);
    }
  }

  finish(): FileCheck {
    if (!this.header) throw new CoreError('CSV_INVALID', 'The file is empty');
    if (this.rows === 0) throw new CoreError('CSV_INVALID', 'The file has a header but no patient rows');
    return { rows: this.rows };
  }
}

/**
 * Reads the whole stored upload once to decide whether it can be imported at all (PRODUCT: the service
 * checks the file is CSV, then validates each row). Throws CSV_INVALID or CSV_TOO_MANY_ROWS with a reason
 * a person can act on; row-level problems are not looked at here.
 */
export async function checkCsvFile(source: AsyncIterable<Uint8Array>): Promise<FileCheck> {
  const checker = new FileChecker();
  for await (const record of csvRecords(source)) checker.accept(record);
  return checker.finish();
}

/**
 * `checkCsvFile`, also storing the records it parsed under `recordsKeyOf(uploadKey)`, streamed (memory does
 * not grow with the file). A file that fails the check leaves no records behind.
 */
async function checkAndKeepRecords(deps: Pick<CoreDeps, 'blob'>, source: AsyncIterable<Uint8Array>, uploadKey: string): Promise<FileCheck> {
  const checker = new FileChecker();
  let check: FileCheck | undefined;
  async function* storedRecords(): AsyncGenerator<Uint8Array> {
    const writer = new RecordsWriter();
    for await (const record of csvRecords(source)) {
      checker.accept(record);
      const chunk = writer.add(record);
      if (chunk) yield chunk;
    }
    check = checker.finish();
    const tail = writer.flush();
    if (tail) yield tail;
  }
  await deps.blob.put(recordsKeyOf(uploadKey), storedRecords(), { contentType: 'application/octet-stream' });
  return check!;
}

export interface UploadInput {
  contentType: string | undefined;
  body: AsyncIterable<Uint8Array> | Uint8Array | string;
}

/**
 * Accepts the CSV of a `waiting` request (the caller has verified the pre-signed URL for this account).
 * A usable file moves the request to `processing` and queues the import; an unusable one moves it to
 * `failed` and the CoreError explaining why is thrown, after the `failed` webhook is stored.
 * Single use: whichever upload commits first wins; any other gets UPLOAD_URL_USED.
 */
export async function acceptUpload(deps: CoreDeps, account: Account, requestId: string, input: UploadInput): Promise<BulkRequest> {
  const found = await deps.storage.bulkRequests.get(account.id, requestId);
  if (!found) throw new CoreError('BULK_REQUEST_NOT_FOUND', 'No bulk request with this id in your account');
  const request = await expireIfDue(deps, found);
  assertWaiting(request);
  if (!isCsvContentType(input.contentType)) {
    throw new CoreError('UNSUPPORTED_MEDIA_TYPE', 'Upload the file with Content-Type: text/csv');
  }

  // A fresh key per attempt: two racing uploads never overwrite each other's bytes.
  const uploadKey = `${account.id}/bulk/${requestId}/upload-${deps.ids.next()}.csv`;
  await deps.blob.put(uploadKey, input.body, { contentType: 'text/csv' });

  let check: FileCheck | CoreError;
  try {
    const stream = await deps.blob.stream(uploadKey);
    if (!stream) throw new Error('stored upload vanished');
    check = await checkAndKeepRecords(deps, stream, uploadKey);
  } catch (error) {
    if (!isCoreError(error)) {
      await deps.blob.delete(uploadKey);
      await deps.blob.delete(recordsKeyOf(uploadKey));
      throw error;
    }
    check = error;
  }

  const now = nowIso(deps.clock);
  if (check instanceof CoreError) {
    const rejection = check;
    const failed: BulkRequest = { ...request, status: await nextStatus('waiting', 'reject-upload'), reason: rejection.message, uploadKey, updatedAt: now };
    const stored = await deps.storage.transaction(async (tx) => {
      const updated = await tx.bulkRequests.updateIfStatus(failed, 'waiting');
      if (updated) await notifyBulkStatus(tx, deps, updated, { status: 'failed', reason: rejection.message });
      return updated;
    });
    if (!stored) {
      await deps.blob.delete(uploadKey);
      throw new CoreError('UPLOAD_URL_USED', 'This upload URL was already used');
    }
    throw rejection;
  }

  const processing: BulkRequest = { ...request, status: await nextStatus('waiting', 'accept-upload'), total: check.rows, uploadKey, updatedAt: now };
  const stored = await deps.storage.transaction(async (tx) => {
    const updated = await tx.bulkRequests.updateIfStatus(processing, 'waiting');
    if (updated) await notifyBulkStatus(tx, deps, updated, { status: 'processing' });
    return updated;
  });
  if (!stored) {
    await deps.blob.delete(uploadKey);
    await deps.blob.delete(recordsKeyOf(uploadKey));
    const current = await deps.storage.bulkRequests.get(account.id, requestId);
    if (current) assertWaiting(await expireIfDue(deps, current));
    throw new CoreError('UPLOAD_URL_USED', 'This upload URL was already used');
  }
  await enqueueBulkProcessing(deps, stored.id);
  return stored;
}

/** Idempotent: a request already queued is not queued twice (hosts call this again on start to resume). */
export async function enqueueBulkProcessing(deps: Pick<CoreDeps, 'queue'>, requestId: string): Promise<void> {
  await deps.queue.enqueue({ type: BULK_JOB.process, payload: { requestId }, key: `${BULK_JOB.process}:${requestId}` });
}

function assertWaiting(request: BulkRequest): void {
  if (request.status === 'expired') throw new CoreError('UPLOAD_URL_EXPIRED', 'The upload URL expired; start a new bulk request');
  if (request.status !== 'waiting') throw new CoreError('UPLOAD_URL_USED', 'This upload URL was already used');
}
