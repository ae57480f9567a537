import type { CoreDeps } from '../deps.js';
import { endingOnLastAttempt, type GivesUp, type JobHandlers } from '../job-catalogue.js';
import { failConsolidatedQuery, runConsolidatedQuery } from './consolidated.js';
import { convertDocument } from './convert.js';
import { sendBulkDownloadUrls } from './downloads.js';
import { failDocumentQuery, runDocumentQuery } from './query.js';

type DocumentJobType = 'documents.query' | 'documents.convert' | 'documents.bulk-urls' | 'documents.consolidated' | 'documents.delete-blob';

/**
 * Handlers of the document jobs (see core/job-catalogue.ts). Transient failures are thrown for the queue to
 * retry; once `givesUp` (the last attempt, unless the storage is full: that is tried until space is freed) a
 * query is ended as `failed` with its messages, rather than left `processing` forever.
 */
export function documentJobHandlers(deps: CoreDeps, givesUp: GivesUp): Pick<JobHandlers, DocumentJobType> {
  return {
    'documents.query': ({ accountId, queryId }, job) =>
      endingOnLastAttempt(
        job,
        givesUp,
        () => runDocumentQuery(deps, accountId, queryId),
        () => failDocumentQuery(deps, accountId, queryId),
      ),
    'documents.convert': async ({ accountId, documentId }) => {
      const document = await deps.storage.documents.get(accountId, documentId);
      if (document) await convertDocument(deps, document);
    },
    'documents.bulk-urls': (request) => sendBulkDownloadUrls(deps, request),
    'documents.consolidated': ({ accountId, queryId }, job) =>
      endingOnLastAttempt(
        job,
        givesUp,
        () => runConsolidatedQuery(deps, accountId, queryId),
        async () => {
          const query = await deps.storage.consolidatedQueries.get(accountId, queryId);
          if (query) await failConsolidatedQuery(deps, query);
        },
      ),
    'documents.delete-blob': ({ key }) => deps.blob.delete(key),
  };
}
