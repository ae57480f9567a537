import type { CoreDeps } from '../deps.js';
import type { Account, BulkRequest } from '../domain/types.js';
import { CoreError, isCoreError } from '../errors.js';
import { headerProblem, layoutHeader } from '../csv/header.js';
import { nowIso } from '../time.js';
import { csvRecordChunks, MAX_BULK_ROWS, RecordsWriter } from './csv-stream.js';
import { nextStatus } from './machine.js';
import { notifyBulkStatus } from './notify.js';
import { expireIfDue } from './start.js';
import { newJob } from '../job-catalogue.js';

/** Content types a CSV arrives with from browsers, curl and spreadsheet tools (the upload asks for text/csv). */
const CSV_CONTENT_TYPES = new Set(['text/csv', 'application/csv', 'text/plain', 'application/octet-stream', 'application/vnd.ms-excel']);

export function isCsvContentType(contentType: string | undefined): boolean {
  if (!contentType) return true;
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  return CSV_CONTENT_TYPES.has(mediaType);
}

export interface FileCheck {
  /** Data rows (blank rows excluded). */
  rows: number;
  /** Header cells of the columns the importer does not know (see `ignoredColumnsOf`). */
  ignoredColumns: string[];
}

/** How many unknown columns the status lists, and how much of each name. */
const MAX_IGNORED_LISTED = 100;
const MAX_IGNORED_NAME = 100;

/**
 * The unknown columns as the status lists them: kept in the result CSV and otherwise ignored, so a person
 * sees that `e-mail` or `zip_code` was not read. A header of thousands of columns lists its first hundred.
 */
function ignoredColumnsOf(ignored: readonly string[]): string[] {
  return ignored.slice(0, MAX_IGNORED_LISTED).map((name) => (name.length > MAX_IGNORED_NAME ? `${name.slice(0, MAX_IGNORED_NAME)}…` : name));
}

/**
 * Where the upload check stores the records it parsed (header first, see `RecordsWriter`), so the import
 * does not parse the CSV again. Derived from the upload's key: each upload attempt has its own.
 */
export function recordsKeyOf(uploadKey: string): string {
  return `${uploadKey.replace(/\.csv$/, '')}.records-v3`;
}

/** The file-level rules of the upload check, record by record (header first). */
class FileChecker {
  private header: string[] | undefined;
  private ignored: string[] = [];
  private rows = 0;

  /** Throws CSV_INVALID or CSV_TOO_MANY_ROWS as soon as the records so far break a rule. */
  accept(record: string[]): void {
    if (!this.header) {
      this.header = record;
      const layout = layoutHeader(record);
      const problem = headerProblem(layout);
      if (problem) throw new CoreError('CSV_INVALID', problem);
      this.ignored = ignoredColumnsOf(layout.ignored);
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
    return { rows: this.rows, ignoredColumns: this.ignored };
  }
}

/**
 * Reads the whole stored upload once to decide whether it can be imported at all (the service
 * checks the file is CSV, then validates each row). Throws CSV_INVALID or CSV_TOO_MANY_ROWS with a reason
 * a person can act on; row-level problems are not looked at here.
 */
export async function checkCsvFile(source: AsyncIterable<Uint8Array>): Promise<FileCheck> {
  const checker = new FileChecker();
  for await (const records of csvRecordChunks(source)) for (const record of records) checker.accept(record);
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
    for await (const records of csvRecordChunks(source)) {
      for (const record of records) {
        checker.accept(record);
        const chunk = writer.add(record);
        if (chunk) yield chunk;
      }
    }
    check = checker.finish();
    const tail = writer.flush();
    if (tail) yield tail;
  }
  await deps.blob.put(recordsKeyOf(uploadKey), storedRecords(), { contentType: 'application/octet-stream' });
  return check!;
}

/** Chunks one branch of `tee` may run ahead of the other before it waits. */
const TEE_MAX_AHEAD = 16;

/**
 * Two streams of the same chunks, read from `source` once: each branch moves at its own pace, the
 * faster at most TEE_MAX_AHEAD chunks ahead. A branch that stops early (its reader returns) stops
 * holding the other back; a failing source fails both.
 */
function tee(source: AsyncIterable<Uint8Array>): [AsyncIterable<Uint8Array>, AsyncIterable<Uint8Array>] {
  const iterator = source[Symbol.asyncIterator]();
  const queues: Uint8Array[][] = [[], []];
  const open = [true, true];
  let ended = false;
  let failure: { error: unknown } | undefined;
  let pulling: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  const wake = () => {
    wakeUp?.();
    wakeUp = undefined;
  };

  const pull = (): Promise<void> =>
    (pulling ??= (async () => {
      try {
        const next = await iterator.next();
        if (next.done) ended = true;
        else for (const branch of [0, 1]) if (open[branch]) queues[branch]!.push(next.value);
      } catch (error) {
        failure = { error };
      } finally {
        pulling = undefined;
      }
    })());

  async function* branch(self: number): AsyncGenerator<Uint8Array> {
    const other = 1 - self;
    try {
      for (;;) {
        const queued = queues[self]!.shift();
        if (queued) {
          wake();
          yield queued;
          continue;
        }
        if (failure) throw failure.error;
        if (ended) return;
        if (open[other] && queues[other]!.length >= TEE_MAX_AHEAD) {
          await new Promise<void>((resolve) => (wakeUp = resolve));
          continue;
        }
        await pull();
      }
    } finally {
      open[self] = false;
      queues[self] = [];
      wake();
      // Neither branch reads any more: let the source release what it holds.
      if (!open[other] && !ended && !failure) await iterator.return?.();
    }
  }
  return [branch(0), branch(1)];
}

async function* chunksOf(body: UploadInput['body']): AsyncGenerator<Uint8Array> {
  if (typeof body === 'string') yield new TextEncoder().encode(body);
  else if (body instanceof Uint8Array) yield body;
  else yield* body;
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
  // Stored and checked as it arrives: the check (a full parse) runs while the bytes come in and go to disk.
  const [toStore, toCheck] = tee(chunksOf(input.body));
  const checking = checkAndKeepRecords(deps, toCheck, uploadKey).then(
    (result): FileCheck | { error: unknown } => result,
    (error: unknown) => ({ error }),
  );
  const storeFailure = await deps.blob.put(uploadKey, toStore, { contentType: 'text/csv' }).then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  const checked = await checking;
  // Storing comes first: an upload that never arrived whole (too large, cut off) is refused as it was.
  const failure = storeFailure ?? ('error' in checked && !isCoreError(checked.error) ? checked : undefined);
  if (failure) {
    await deps.blob.delete(uploadKey);
    await deps.blob.delete(recordsKeyOf(uploadKey));
    throw failure.error;
  }
  const check: FileCheck | CoreError = 'error' in checked ? (checked.error as CoreError) : checked;

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

  const processing: BulkRequest = {
    ...request,
    status: await nextStatus('waiting', 'accept-upload'),
    total: check.rows,
    ignoredColumns: check.ignoredColumns,
    uploadKey,
    updatedAt: now,
  };
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
  await enqueueBulkProcessing(deps, stored);
  return stored;
}

/**
 * Idempotent: a request already queued is not queued twice (hosts call this again on start to resume).
 * Interactive: a person waits for an import, so it never queues behind background work.
 */
export async function enqueueBulkProcessing(deps: Pick<CoreDeps, 'queue'>, request: { id: string; accountId: string }): Promise<void> {
  await deps.queue.enqueue(newJob('bulk.process', { requestId: request.id }, { fairnessKey: request.accountId }));
}

function assertWaiting(request: BulkRequest): void {
  if (request.status === 'expired') throw new CoreError('UPLOAD_URL_EXPIRED', 'The upload URL expired; start a new bulk request');
  if (request.status !== 'waiting') throw new CoreError('UPLOAD_URL_USED', 'This upload URL was already used');
}
