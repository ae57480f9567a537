import type { CoreDeps } from '../deps.js';
import type { ClaimedJob, JsonValue } from '../ports/queue.port.js';
import { failConsolidatedQuery, runConsolidatedQuery } from './consolidated.js';
import { convertDocument } from './convert.js';
import { sendBulkDownloadUrls, type BulkUrlJob } from './downloads.js';
import { DOCUMENT_JOB } from './job-types.js';
import { failDocumentQuery, runDocumentQuery } from './query.js';

type Handler = (payload: JsonValue, job: ClaimedJob) => Promise<void>;

function field(payload: JsonValue, name: string): string {
  const value = (payload as Record<string, unknown> | null)?.[name];
  if (typeof value !== 'string') throw new Error(`job payload has no ${name}`);
  return value;
}

/**
 * Handlers of the document jobs (job-types.ts). Each is idempotent (the queue delivers at least once).
 * Transient failures are thrown for the queue to retry; once `givesUp` (the last attempt, unless the storage
 * is full: that is tried until space is freed) a query is ended as `failed` with its messages, rather than
 * left `processing` forever.
 */
export function documentJobHandlers(deps: CoreDeps, givesUp: (job: ClaimedJob, error: unknown) => boolean): Record<string, Handler> {
  return {
    async [DOCUMENT_JOB.query](payload, job) {
      const accountId = field(payload, 'accountId');
      const queryId = field(payload, 'queryId');
      try {
        await runDocumentQuery(deps, accountId, queryId);
      } catch (error) {
        const query = givesUp(job, error) ? await deps.storage.documentQueries.get(accountId, queryId) : undefined;
        if (query) await failDocumentQuery(deps, query);
        throw error;
      }
    },
    async [DOCUMENT_JOB.convert](payload) {
      const document = await deps.storage.documents.get(field(payload, 'accountId'), field(payload, 'documentId'));
      if (document) await convertDocument(deps, document);
    },
    async [DOCUMENT_JOB.bulkUrls](payload) {
      const metadata = (payload as Record<string, unknown>).metadata;
      const request: BulkUrlJob = {
        accountId: field(payload, 'accountId'),
        patientId: field(payload, 'patientId'),
        requestId: field(payload, 'requestId'),
        messageId: field(payload, 'messageId'),
        ...(metadata && typeof metadata === 'object' ? { metadata: metadata as Record<string, string> } : {}),
      };
      await sendBulkDownloadUrls(deps, request);
    },
    async [DOCUMENT_JOB.consolidated](payload, job) {
      const accountId = field(payload, 'accountId');
      const queryId = field(payload, 'queryId');
      try {
        await runConsolidatedQuery(deps, accountId, queryId);
      } catch (error) {
        const query = givesUp(job, error) ? await deps.storage.consolidatedQueries.get(accountId, queryId) : undefined;
        if (query) await failConsolidatedQuery(deps, query);
        throw error;
      }
    },
    async [DOCUMENT_JOB.deleteBlob](payload) {
      await deps.blob.delete(field(payload, 'key'));
    },
  };
}
