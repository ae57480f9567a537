import type { CoreDeps } from '../deps.js';
import type { BulkRequest } from '../domain/types.js';
import { nowIso } from '../time.js';
import { nextStatus } from './machine.js';
import { notifyBulkStatus } from './notify.js';
import { withoutPause } from './pause.js';
import { assembleResultCsv, removeResultParts, resultDownloadUrl } from './result.js';
import { BULK_BATCH_SIZE } from './row-importer.js';
import { recordsKeyOf } from './upload.js';

/** processing -> completed: the result CSV assembled from its parts, the `completed` webhook, the parsed records removed. */
export async function completeBulkRequest(deps: CoreDeps, request: BulkRequest, partStarts: readonly number[]): Promise<void> {
  const resultKey = await assembleResultCsv(deps, request, partStarts);
  const completed: BulkRequest = { ...withoutPause(request), status: await nextStatus(request.status, 'complete'), resultKey, updatedAt: nowIso(deps.clock) };
  await deps.storage.transaction(async (tx) => {
    const stored = await tx.bulkRequests.updateIfStatus(completed, 'processing');
    if (stored) {
      await notifyBulkStatus(tx, deps, stored, { status: 'completed', result: resultDownloadUrl(deps, stored), created: stored.created, updated: stored.updated });
    }
  });
  await removeParsedRecords(deps, request);
}

/** The parsed records were for the import only; the upload itself stays. */
async function removeParsedRecords(deps: CoreDeps, request: BulkRequest): Promise<void> {
  await deps.blob.delete(recordsKeyOf(request.uploadKey));
}

/**
 * processing -> failed with a reason and the `failed` webhook, atomically, then removes what only the
 * import needed: the parsed records (as large as the upload) and the result parts written so far. The
 * upload itself stays, as for a completed request. A no-op if the request already left processing.
 */
export async function failBulkRequest(deps: CoreDeps, request: BulkRequest, reason: string): Promise<void> {
  const failed: BulkRequest = { ...withoutPause(request), status: await nextStatus(request.status, 'fail'), reason, updatedAt: nowIso(deps.clock) };
  const stored = await deps.storage.transaction(async (tx) => {
    const updated = await tx.bulkRequests.updateIfStatus(failed, 'processing');
    if (updated) await notifyBulkStatus(tx, deps, updated, { status: 'failed', reason });
    return updated;
  });
  if (!stored) return;
  await removeParsedRecords(deps, request);
  // Parts exist for the committed batches and for the (at most two) the pipeline had matched beyond them.
  const partStarts: number[] = [];
  for (let start = 0; start <= stored.processed + 2 * BULK_BATCH_SIZE; start += BULK_BATCH_SIZE) partStarts.push(start);
  await removeResultParts(deps, stored, partStarts);
}
