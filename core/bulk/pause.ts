import type { ClockPort, StoragePort } from '../ports/index.js';
import type { BulkPause, BulkRequest } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { nowIso } from '../time.js';

/*
 * The rules of a full storage:
 * - An import whose write the storage refuses for want of space pauses. It stays `processing`, its status says
 *   why and since when, and it is never failed for it.
 * - Its job is tried again after as long as the pause has lasted so far, 1 s at first and 30 s at most, and
 *   such a try never uses up one of the job's attempts: freed space is noticed within 30 s, however long the
 *   disk stayed full. Other jobs are tried again every 30 s on the same terms.
 * - The first batch written afterwards ends the pause (it is cleared in that batch's transaction).
 * - Nothing is half-written meanwhile: a batch is one transaction, a blob is renamed into place once whole.
 *
 * The pause is written to the request when the storage takes that one-row write, which it usually still does
 * where a batch no longer fits, and then every instance shows it. It is also noted in the process running
 * the import, so the status this process answers shows it even when the storage takes no write at all.
 */

/** Delay before the first try after a refused write, and the longest between two tries. */
export const STORAGE_FULL_RETRY_MS = { first: 1_000, max: 30_000 } as const;

/** Pauses noted per process at most; past it the oldest note goes (a pause written to the request stays). */
const MAX_NOTED_PAUSES = 1_000;

/**
 * The pauses this process noted, by request. A note holds only while the request has not moved on: once a
 * batch is written (here or by another instance, which the request's `processed` count shows) or the request
 * leaves `processing`, it no longer counts, whatever this process saw last.
 */
export class NotedPauses {
  private readonly notes = new Map<string, { pause: BulkPause; processed: number }>();

  note(request: BulkRequest, pause: BulkPause): void {
    this.notes.delete(request.id);
    this.notes.set(request.id, { pause, processed: request.processed });
    // A Map iterates in insertion order: the first key is the oldest note.
    if (this.notes.size > MAX_NOTED_PAUSES) this.notes.delete(this.notes.keys().next().value!);
  }

  /** The pause noted for `request`, while it still holds (see the class); otherwise undefined. */
  of(request: BulkRequest): BulkPause | undefined {
    const noted = this.notes.get(request.id);
    return noted && request.status === 'processing' && noted.processed === request.processed ? noted.pause : undefined;
  }

  forget(requestId: string): void {
    this.notes.delete(requestId);
  }

  get size(): number {
    return this.notes.size;
  }
}

/** The pause a request is in: the one written to it, else the one this process noted; none unless processing. */
export function pauseOf(deps: { pauses?: NotedPauses }, request: BulkRequest): BulkPause | undefined {
  if (request.status !== 'processing') return undefined;
  return request.paused ?? deps.pauses?.of(request);
}

/** The pause as the status shows it to people. */
export function pauseReason(pause: BulkPause): string {
  return `paused: the storage is full since ${pause.since}; resumes by itself once space is freed`;
}

/** The request without a pause: what a written batch, a completion or a failure stores. */
export function withoutPause(request: BulkRequest): BulkRequest {
  if (request.paused === undefined) return request;
  const { paused: _ended, ...rest } = request;
  return rest;
}

/** Whether `error` is a job's storage-full retry (`storageFullRetry`), already built. */
export function isStorageFullRetry(error: unknown): boolean {
  return error instanceof CoreError && error.code === 'STORAGE_FULL' && error.details?.countsAsAttempt === false;
}

/**
 * What a job fails with when the storage is full: STORAGE_FULL, to be tried again (the runner reads
 * `details.retryAt`) after as long as the pause has lasted, within `STORAGE_FULL_RETRY_MS`, or after the
 * longest delay when its start is not known, without using up an attempt (`details.countsAsAttempt`).
 */
export function storageFullRetry(deps: { clock: ClockPort }, since: string | undefined, cause: unknown): CoreError {
  const nowMs = deps.clock.now().getTime();
  const waited = since === undefined ? STORAGE_FULL_RETRY_MS.max : nowMs - Date.parse(since);
  const delay = Math.min(STORAGE_FULL_RETRY_MS.max, Math.max(STORAGE_FULL_RETRY_MS.first, waited));
  return new CoreError('STORAGE_FULL', 'The storage is full; the job is tried again until space is freed', {
    cause,
    details: { retryAt: new Date(nowMs + delay).toISOString(), countsAsAttempt: false },
  });
}

/**
 * Pauses the import of `requestId`, whose write the storage refused for want of space, and returns the error
 * its job fails with (`storageFullRetry`). A pause already under way keeps its start. Never throws: the
 * storage may refuse the pause's own write, and then the note in this process is what shows it.
 */
export async function pauseForFullStorage(deps: { storage: StoragePort; clock: ClockPort; pauses?: NotedPauses }, requestId: string, cause: unknown): Promise<CoreError> {
  let since: string | undefined;
  try {
    const request = await deps.storage.bulkRequests.getById(requestId);
    if (request?.status === 'processing') {
      const pause: BulkPause = pauseOf(deps, request) ?? { code: 'STORAGE_FULL', since: nowIso(deps.clock) };
      since = pause.since;
      deps.pauses?.note(request, pause);
      if (request.paused === undefined) await deps.storage.bulkRequests.updateIfStatus({ ...request, paused: pause, updatedAt: nowIso(deps.clock) }, 'processing');
    }
  } catch {
    // Refused too (or the storage is down): the note, when it was made, shows the pause in this process.
  }
  return storageFullRetry(deps, since, cause);
}
