import type { CoreDeps } from '../deps.js';
import type { BulkRequest } from '../domain/types.js';
import { isCoreError } from '../errors.js';
import { layoutHeader } from '../csv/header.js';
import type { HeaderLayout } from '../csv/types.js';
import { completeBulkRequest, failBulkRequest } from './complete.js';
import { csvRecordChunks, storedRecordChunks } from './csv-stream.js';
import { csvSafeLine, csvSafeLineCells } from './csv-text.js';
import { writeResultHeaderPart } from './result.js';
import { BULK_BATCH_SIZE, RowImporter, type PendingRow } from './row-importer.js';
import { recordsKeyOf } from './upload.js';

/*
 * The import pipeline of a bulk request: the stored records read a chunk at a time, cut into batches,
 * each prepared, matched and written by the row importer (row-importer.ts), then completion
 * (complete.ts). Row mapping and the candidate index live beside it.
 */

/**
 * The records of the upload as their lines (`csvSafeLine`), header first, a chunk at a time: the ones the
 * upload check stored (see `recordsKeyOf`), or, when those are gone or damaged, the CSV parsed again.
 */
async function uploadRecords(deps: CoreDeps, request: BulkRequest): Promise<AsyncIterable<string[]> | undefined> {
  const recordsKey = recordsKeyOf(request.uploadKey);
  const stored = await deps.blob.stream(recordsKey);
  if (stored) {
    return (async function* () {
      try {
        yield* storedRecordChunks(stored);
      } catch (error) {
        // Damaged: the retried job parses the CSV instead, resuming after the last committed batch.
        await deps.blob.delete(recordsKey);
        throw error;
      }
    })();
  }
  const source = await deps.blob.stream(request.uploadKey);
  if (!source) return undefined;
  return (async function* () {
    for await (const records of csvRecordChunks(source)) yield records.map(csvSafeLine);
  })();
}

/**
 * Imports the rows of a `processing` request, in file order, in batches that each commit patients and
 * row outcomes together. Resumable: it starts after the last committed row, so a crash (or a retried
 * job) never applies a row twice. Then writes the result CSV and completes the request.
 * A request that is not `processing` is left alone (the job is idempotent).
 *
 * Pipelined, so the storage's writer seldom waits for this thread: while batch N is written, batch N+1
 * is read, validated, looked up and matched, ready to be written the moment N commits. Batches commit one
 * after the other, in file order. A lookup is made only once every batch but the one being written has
 * committed, and matching patches in what that one writes, so a row sees every patient the earlier rows
 * created or changed. What other writers (imports, API calls, instances) do meanwhile is checked at each
 * batch's write, which matches the batch again when it has to (see `RowImporter.write`).
 */
export async function processBulkRequest(deps: CoreDeps, requestId: string): Promise<void> {
  let request = await deps.storage.bulkRequests.getById(requestId);
  if (!request || request.status !== 'processing') return;

  const records = await uploadRecords(deps, request);
  if (!records) {
    await failBulkRequest(deps, request, 'The uploaded file is no longer stored; start a new bulk request');
    return;
  }

  const importer = new RowImporter(deps, request);
  let layout: HeaderLayout | undefined;
  let rowIndex = 0;
  const resumeAt = await deps.storage.bulkRows.nextRowIndex(request.id);
  if (resumeAt > 0) await importer.resumeAfter(resumeAt);
  let batch: PendingRow[] = [];
  // Batches start at fixed row indexes (0, BATCH, 2*BATCH...), so a resumed import names its parts as the first run did.
  const partStarts: number[] = [];
  // The last batch's write (chained after every earlier one) and the one before it: at most two batches
  // are held, one being written and one matched, whatever the file size.
  let lastWrite: Promise<BulkRequest> | undefined;
  let writeBefore: Promise<BulkRequest> | undefined;
  const applyNext = async (rows: PendingRow[], header: HeaderLayout) => {
    const prepared = importer.prepare(rows, header);
    // Everything but the last batch has committed: the lookup misses at most what that one writes.
    if (writeBefore) await writeBefore;
    // Unless that one will be matched again at its write (someone else wrote the account's patients): this
    // batch would then have to be too, and so on; waiting for it matches this one right the first time.
    if (lastWrite && importer.pendingWillRematch) await lastWrite;
    const decided = importer.decide(prepared, await importer.lookUp(prepared));
    const previous = lastWrite;
    writeBefore = previous;
    lastWrite = (previous ?? Promise.resolve()).then(() => importer.write(decided));
    // Awaited by the next batch (or at the end); until then a failure must not count as unhandled.
    lastWrite.catch(() => undefined);
  };
  try {
    for await (const chunk of records) {
      for (const line of chunk) {
        if (!layout) {
          const cells = csvSafeLineCells(line);
          layout = layoutHeader(cells);
          await writeResultHeaderPart(deps, request, cells);
          continue;
        }
        if (rowIndex % BULK_BATCH_SIZE === 0) partStarts.push(rowIndex);
        if (rowIndex >= resumeAt) batch.push({ rowIndex, line, cellCount: 0 });
        rowIndex++;
        if (rowIndex % BULK_BATCH_SIZE === 0 && batch.length > 0) {
          await applyNext(batch, layout);
          batch = [];
        }
      }
    }
    if (layout && batch.length > 0) await applyNext(batch, layout);
    if (lastWrite) request = await lastWrite;
  } catch (error) {
    // Batches still with the storage finish (or fail) before the request is failed or the job retried.
    const writeFailure = lastWrite && (await lastWrite.then(() => undefined, (failure: unknown) => failure));
    if (writeFailure) throw writeFailure;
    // The file passed the upload check, so a CSV error here means the stored bytes changed: unrecoverable.
    if (isCoreError(error) && (error.code === 'CSV_INVALID' || error.code === 'CSV_TOO_MANY_ROWS')) {
      await failBulkRequest(deps, importer.current, error.message);
      return;
    }
    throw error;
  }
  await completeBulkRequest(deps, request, partStarts);
}
