import type { CoreDeps } from '../deps.js';
import { endingOnLastAttempt, type GivesUp } from '../job-catalogue.js';
import type { ClaimedJob } from '../ports/queue.port.js';
import { failBulkRequest } from './complete.js';
import { queueBulkDocumentQueries } from './document-queries.js';
import { pauseForFullStorage } from './pause.js';
import { processBulkRequest } from './process.js';

/**
 * The import's job, from its first row to the document queries it sets off:
 * - the rows are applied in batches, resuming after the last committed one (process.ts), and the request
 *   completes with its result CSV and webhook (complete.ts);
 * - a completed import that is not a dry run then queues its document queries, page by page
 *   (document-queries.ts). A retry after a crash between the two finds the request completed and queues
 *   them again, which the job keys make a no-op when they were queued;
 * - a full storage pauses the import (pause.ts) and is never a reason to fail it;
 * - any other failure is retried by the queue, and on the last attempt the request fails visibly rather
 *   than sitting in `processing` forever.
 */
export async function runImport(deps: CoreDeps, requestId: string, job: Pick<ClaimedJob, 'attempt' | 'maxAttempts'>, rules: { givesUp: GivesUp; storageFull: (error: unknown) => boolean }): Promise<void> {
  try {
    await endingOnLastAttempt(
      job,
      rules.givesUp,
      async () => {
        await processBulkRequest(deps, requestId);
        const request = await deps.storage.bulkRequests.getById(requestId);
        if (request?.status === 'completed' && !request.dryRun) await queueBulkDocumentQueries(deps, request);
      },
      async () => {
        const request = await deps.storage.bulkRequests.getById(requestId);
        if (request?.status === 'processing') await failBulkRequest(deps, request, 'The import stopped on an internal error; start a new bulk request');
      },
    );
  } catch (error) {
    if (rules.storageFull(error)) throw await pauseForFullStorage(deps, requestId, error);
    throw error;
  }
  deps.pauses?.forget(requestId);
}
