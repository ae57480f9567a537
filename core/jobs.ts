import { BULK_DOCUMENT_QUERIES_JOB, queueBulkDocumentQueries, startBulkDocumentQueries } from './bulk/document-queries.js';
import { failBulkRequest } from './bulk/complete.js';
import { isStorageFullRetry, pauseForFullStorage, storageFullRetry } from './bulk/pause.js';
import { processBulkRequest } from './bulk/process.js';
import { BULK_JOB, expireIfDue } from './bulk/start.js';
import { enqueueBulkProcessing } from './bulk/upload.js';
import type { CoreDeps } from './deps.js';
import { documentJobHandlers } from './documents/jobs.js';
import { isCoreError, type CoreError } from './errors.js';
import { networkJobHandlers } from './network/query.js';
import type { ClaimedJob, JsonValue } from './ports/queue.port.js';

export type JobHandler = (payload: JsonValue, job: ClaimedJob) => Promise<void>;

function requestIdOf(payload: JsonValue): string {
  const requestId = (payload as { requestId?: unknown } | null)?.requestId;
  if (typeof requestId !== 'string') throw new Error('job payload has no requestId');
  return requestId;
}

export interface CoreJobOptions {
  /**
   * Recognises an adapter's error a job can act on and says which CoreError it is, as for the API handler
   * (`ApiHandlerOptions.classifyError`). A full storage (STORAGE_FULL) pauses an import and has every job
   * tried again until space is freed, never failed for it (see core/bulk/pause.ts).
   */
  classifyError?: (error: unknown) => CoreError | undefined;
}

/** Whether a job that failed with `error` on this attempt ends its work as failed (see `CoreJobOptions`). */
export type GivesUp = (job: Pick<ClaimedJob, 'attempt' | 'maxAttempts'>, error: unknown) => boolean;

/**
 * The background work of the core, by job type. Handlers are idempotent: the queue delivers at least
 * once, and a retried or resumed job picks up where the last one stopped.
 */
export function coreJobHandlers(deps: CoreDeps, options: CoreJobOptions = {}): Record<string, JobHandler> {
  // An adapter may have wrapped the cause in an INTERNAL CoreError (the SQL storage does): the classifier looks inside.
  const storageFull = (error: unknown) => (isCoreError(error) && error.code === 'STORAGE_FULL') || options.classifyError?.(error)?.code === 'STORAGE_FULL';
  // A full storage is no fault of the job: its tries do not count (the queue gives the attempt back).
  const givesUp: GivesUp = (job, error) => job.attempt >= job.maxAttempts && !storageFull(error);
  const handlers: Record<string, JobHandler> = {
    ...documentJobHandlers(deps, givesUp),
    ...networkJobHandlers(deps, givesUp),
    async [BULK_JOB.process](payload, job) {
      const requestId = requestIdOf(payload);
      try {
        await processBulkRequest(deps, requestId);
        const request = await deps.storage.bulkRequests.getById(requestId);
        if (request?.status === 'completed' && !request.dryRun) await queueBulkDocumentQueries(deps, request);
      } catch (error) {
        if (storageFull(error)) throw await pauseForFullStorage(deps, requestId, error);
        // Transient failures are retried by the queue; on the last attempt the request fails visibly
        // rather than sitting in `processing` forever.
        if (givesUp(job, error)) {
          const request = await deps.storage.bulkRequests.getById(requestId);
          if (request?.status === 'processing') {
            await failBulkRequest(deps, request, 'The import stopped on an internal error; start a new bulk request');
          }
        }
        throw error;
      }
      deps.pauses?.forget(requestId);
    },
    async [BULK_DOCUMENT_QUERIES_JOB](payload) {
      const fromRow = (payload as { fromRow?: unknown }).fromRow;
      await startBulkDocumentQueries(deps, requestIdOf(payload), typeof fromRow === 'number' ? fromRow : 0);
    },
    async [BULK_JOB.expire](payload) {
      const request = await deps.storage.bulkRequests.getById(requestIdOf(payload));
      if (request) await expireIfDue(deps, request);
    },
  };
  return Object.fromEntries(
    Object.entries(handlers).map(([type, handle]): [string, JobHandler] => [
      type,
      async (payload, job) => {
        try {
          await handle(payload, job);
        } catch (error) {
          if (storageFull(error) && !isStorageFullRetry(error)) throw storageFullRetry(deps, undefined, error);
          throw error;
        }
      },
    ]),
  );
}

/**
 * Re-queues work a stopped process left behind (crash safety): every `processing` request gets
 * its import job again (deduplicated by key, so a job still queued is not doubled) and resumes after its
 * last committed batch. Hosts call this once on start. Called while imports run, `unchangedForMs` leaves
 * alone the requests changed more recently than that: those are moving, and one about to complete would
 * otherwise be queued again and set off its first page of document queries a second time.
 */
export async function resumeInterruptedWork(deps: CoreDeps, options: { unchangedForMs?: number } = {}): Promise<{ resumed: number }> {
  const changedBefore = options.unchangedForMs === undefined ? undefined : deps.clock.now().getTime() - options.unchangedForMs;
  let resumed = 0;
  for (const request of await deps.storage.bulkRequests.listByStatus('processing', 10_000)) {
    if (changedBefore !== undefined && Date.parse(request.updatedAt) > changedBefore) continue;
    await enqueueBulkProcessing(deps, request);
    resumed++;
  }
  return { resumed };
}
