import type { CoreDeps } from '../deps.js';
import type { BulkQueriesProgress, BulkRequest } from '../domain/types.js';
import { startDocumentQueryUnlessOptedOut } from '../documents/query.js';
import { newJob } from '../job-catalogue.js';

/** Patients handled per job: a 100,000-row import becomes 200 small, resumable jobs, not one long one. */
const PAGE = 500;

/**
 * After an import completes, every patient it created or updated gets a document query, except opted-out
 * ones, who never reach the network. Runs in pages, each a queued job that queues the next, so a crash
 * resumes at the page it stopped on; a query already running for a patient is reused. The pages are
 * interactive work (short: they only record queries and queue them), so every query of the import is
 * recorded within seconds and its progress counts the whole import; the queries themselves run in the
 * background lane, behind whatever a person is waiting for.
 */
export async function queueBulkDocumentQueries(deps: Pick<CoreDeps, 'queue'>, request: { id: string; accountId: string }, fromRow = 0): Promise<void> {
  await deps.queue.enqueue(newJob('bulk.document-queries', { requestId: request.id, fromRow }, { fairnessKey: request.accountId }));
}

/**
 * The document queries a completed import set off so far, by state, counted as they start and end;
 * `undefined` for an import that is not completed or a dry run, which sets off none. Throws nothing.
 */
export async function bulkDocumentQueryProgress(deps: Pick<CoreDeps, 'storage'>, request: BulkRequest): Promise<BulkQueriesProgress | undefined> {
  if (request.status !== 'completed' || request.dryRun) return undefined;
  return deps.storage.documentQueries.progressOfBulkRequest(request.accountId, request.id);
}

export async function startBulkDocumentQueries(deps: CoreDeps, requestId: string, fromRow: number): Promise<void> {
  const request = await deps.storage.bulkRequests.getById(requestId);
  if (!request || request.status !== 'completed' || request.dryRun) return;
  const outcomes = await deps.storage.bulkRows.range(requestId, fromRow, fromRow + PAGE);
  const patientIds = new Set(outcomes.flatMap((outcome) => (outcome.status === 'succeeded' && outcome.patientId ? [outcome.patientId] : [])));
  for (const patientId of patientIds) {
    const patient = await deps.storage.patients.get(request.accountId, patientId);
    if (!patient) continue;
    const facilityId = patient.facilityIds.includes(request.facilityId) ? request.facilityId : patient.facilityIds[0];
    if (facilityId) await startDocumentQueryUnlessOptedOut(deps, patient, { facilityId, bulkRequestId: request.id });
  }
  if (request.total !== undefined && fromRow + PAGE < request.total) await queueBulkDocumentQueries(deps, request, fromRow + PAGE);
}
