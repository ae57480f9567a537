import { startBulkDocumentQueries } from './bulk/document-queries.js';
import { isStorageFullRetry, storageFullRetry } from './bulk/pause.js';
import { runImport } from './bulk/run.js';
import { expireIfDue } from './bulk/start.js';
import { enqueueBulkProcessing } from './bulk/upload.js';
import type { CoreDeps } from './deps.js';
import { documentJobHandlers } from './documents/jobs.js';
import { isCoreError, type CoreError } from './errors.js';
import { runnableHandlers, type GivesUp, type JobHandler, type JobHandlers, type JobType } from './job-catalogue.js';
import { networkJobHandlers } from './network/query.js';

export type { GivesUp, JobHandler } from './job-catalogue.js';

export interface CoreJobOptions {
  /**
   * Recognises an adapter's error a job can act on and says which CoreError it is, as for the API handler
   * (`ApiHandlerOptions.classifyError`). A full storage (STORAGE_FULL) pauses an import and has every job
   * tried again until space is freed, never failed for it (see core/bulk/pause.ts).
   */
  classifyError?: (error: unknown) => CoreError | undefined;
}

/**
 * The background work of the core, by job type (core/job-catalogue.ts). Handlers are idempotent: the queue
 * delivers at least once, and a retried or resumed job picks up where the last one stopped.
 */
export function coreJobHandlers(deps: CoreDeps, options: CoreJobOptions = {}): Record<JobType, JobHandler> {
  // An adapter may have wrapped the cause in an INTERNAL CoreError (the SQL storage does): the classifier looks inside.
  const storageFull = (error: unknown) => (isCoreError(error) && error.code === 'STORAGE_FULL') || options.classifyError?.(error)?.code === 'STORAGE_FULL';
  // A full storage is no fault of the job: its tries do not count (the queue gives the attempt back).
  const givesUp: GivesUp = (job, error) => job.attempt >= job.maxAttempts && !storageFull(error);
  const handlers: JobHandlers = {
    ...documentJobHandlers(deps, givesUp),
    ...networkJobHandlers(deps, givesUp),
    'bulk.process': ({ requestId }, job) => runImport(deps, requestId, job, { givesUp, storageFull }),
    'bulk.document-queries': ({ requestId, fromRow }) => startBulkDocumentQueries(deps, requestId, fromRow),
    'bulk.expire': async ({ requestId }) => {
      const request = await deps.storage.bulkRequests.getById(requestId);
      if (request) await expireIfDue(deps, request);
    },
  };
  const runnable = runnableHandlers(handlers);
  return Object.fromEntries(
    Object.entries(runnable).map(([type, handle]): [string, JobHandler] => [
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
  ) as Record<JobType, JobHandler>;
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
