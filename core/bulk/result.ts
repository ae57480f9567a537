import type { CoreDeps } from '../deps.js';
import type { BulkRequest, BulkRowOutcome } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { issueSignedUrl } from '../signed-urls.js';
import { csvRecords } from './csv-stream.js';
import { csvSafeCell, csvText } from './csv-text.js';
import { requestTo } from '../../contract/endpoints.js';

// csv-stringify, used before, ran at 10 ms per 1,000 result rows on the import's main thread, and with
// `record_delimiter` alone left a lone LF unquoted, so a multi-line cell broke its result row.
export { csvText };

/** The result CSV URL is valid 600 seconds. */
export const RESULT_URL_VALIDITY_MS = 600_000;

/** Result CSV row — same columns as the input plus these, named exactly so. */
export const RESULT_COLUMNS = ['metriportId', 'status', 'reason'] as const;

const OUTCOME_PAGE = 1_000;

export function resultPath(requestId: string): string {
  return requestTo('downloadBulkPatientCreateResult', { requestId }).path;
}

export function resultDownloadUrl(deps: Pick<CoreDeps, 'urlSigner' | 'clock' | 'config'>, request: BulkRequest): string {
  return issueSignedUrl(deps, { method: 'GET', path: resultPath(request.id), accountId: request.accountId }, RESULT_URL_VALIDITY_MS).url;
}

/**
 * The result CSV of the account's import `requestId` as a stream, with the request it belongs to.
 * @throws CoreError `FILE_NOT_FOUND` when the import is missing, another account's, or has no result file
 * (yet, or any more).
 */
export async function bulkResultFile(deps: Pick<CoreDeps, 'storage' | 'blob'>, accountId: string, requestId: string): Promise<{ request: BulkRequest; stream: AsyncIterable<Uint8Array> }> {
  const request = await deps.storage.bulkRequests.get(accountId, requestId);
  const stream = request?.resultKey ? await deps.blob.stream(request.resultKey) : undefined;
  if (!request || !stream) throw new CoreError('FILE_NOT_FOUND', 'No result file for this bulk request');
  return { request, stream };
}

const encoder = new TextEncoder();

function resultKeyOf(request: BulkRequest): string {
  return `${request.accountId}/bulk/${request.id}/result.csv`;
}

function partKey(request: BulkRequest, part: 'header' | number): string {
  const name = part === 'header' ? 'header' : String(part).padStart(9, '0');
  return `${request.accountId}/bulk/${request.id}/result-parts/${name}.csv`;
}

/** One result row: the input cells (padded to the header's width), then metriportId, status and reason. */
export function resultLine(cells: readonly string[], width: number, outcome: BulkRowOutcome | undefined): string[] {
  const line = cells.slice();
  while (line.length < width) line.push('');
  if (outcome) line.push(outcome.patientId ?? '', outcome.status, outcome.reason ?? '');
  else line.push('', 'failed', 'row was not processed');
  return line;
}

/**
 * The text of `resultLine(cells, width, outcome)` from the cells' line as `csvSafeLine` wrote it and their
 * count: the input cells are not quoted or marked a second time.
 */
export function resultLineText(line: string, cellCount: number, width: number, outcome: BulkRowOutcome | undefined): string {
  let text = line;
  for (let i = cellCount; i < width; i++) text += ',';
  if (outcome) return `${text},${csvSafeCell(outcome.patientId ?? '')},${outcome.status},${csvSafeCell(outcome.reason ?? '')}`;
  return `${text},,failed,row was not processed`;
}

function csvBytes(lines: readonly (readonly string[])[]): Uint8Array {
  return encoder.encode(csvText(lines));
}

/**
 * The result CSV is written as the import goes: one part per batch, stored before the batch commits (a
 * replayed batch rewrites the same part), so completing needs no second read of the input.
 */
export async function writeResultHeaderPart(deps: Pick<CoreDeps, 'blob'>, request: BulkRequest, header: readonly string[]): Promise<void> {
  await deps.blob.put(partKey(request, 'header'), csvBytes([[...header, ...RESULT_COLUMNS]]), { contentType: 'text/csv' });
}

/** Stores a batch's part: `text` holds its result lines (`resultLineText`), CRLF after each. */
export async function writeResultPart(deps: Pick<CoreDeps, 'blob'>, request: BulkRequest, firstRowIndex: number, text: string): Promise<void> {
  await deps.blob.put(partKey(request, firstRowIndex), encoder.encode(text), { contentType: 'text/csv' });
}

/** Removes a batch's part, when it has one. */
export async function removeResultPart(deps: Pick<CoreDeps, 'blob'>, request: BulkRequest, firstRowIndex: number): Promise<void> {
  await deps.blob.delete(partKey(request, firstRowIndex));
}

/**
 * Joins the parts into the result CSV and removes them. `partStarts` are the first row indexes of the
 * batches in order. When a part is missing (a file imported before parts existed, or a lost blob) the
 * result is rebuilt from the input and the stored outcomes instead. Returns the blob key.
 */
export async function assembleResultCsv(deps: Pick<CoreDeps, 'blob' | 'storage'>, request: BulkRequest, partStarts: readonly number[]): Promise<string> {
  const keys = partKeys(request, partStarts);
  const present = await Promise.all(keys.map((key) => deps.blob.head(key)));
  const resultKey = resultKeyOf(request);
  if (present.some((head) => head === undefined)) return writeResultCsv(deps, request);
  await deps.blob.put(resultKey, concatenate(deps, keys), { contentType: 'text/csv' });
  for (const key of keys) await deps.blob.delete(key);
  return resultKey;
}

/** Removes the result parts of a request that will not complete (missing ones are skipped). */
export async function removeResultParts(deps: Pick<CoreDeps, 'blob'>, request: BulkRequest, partStarts: readonly number[]): Promise<void> {
  for (const key of partKeys(request, partStarts)) await deps.blob.delete(key);
}

/** The keys of the header part and of the batches' parts, in result order. */
function partKeys(request: BulkRequest, partStarts: readonly number[]): string[] {
  return [partKey(request, 'header'), ...partStarts.map((start) => partKey(request, start))];
}

async function* concatenate(deps: Pick<CoreDeps, 'blob'>, keys: readonly string[]): AsyncGenerator<Uint8Array> {
  for (const key of keys) {
    const stream = await deps.blob.stream(key);
    if (!stream) throw new CoreError('FILE_NOT_FOUND', 'A part of the result file vanished while it was assembled');
    yield* stream;
  }
}

/**
 * Writes the result CSV from the stored input and the row outcomes: the input's columns in input order
 * (unknown ones included), then metriportId, status and reason. Streams both the input and the output,
 * so memory stays flat whatever the file size. Returns the blob key.
 */
export async function writeResultCsv(deps: Pick<CoreDeps, 'blob' | 'storage'>, request: BulkRequest): Promise<string> {
  const source = await deps.blob.stream(request.uploadKey);
  if (!source) throw new CoreError('FILE_NOT_FOUND', 'The uploaded file is no longer stored');
  const resultKey = resultKeyOf(request);
  await deps.blob.put(resultKey, resultChunks(deps, request, source), { contentType: 'text/csv' });
  return resultKey;
}

async function* resultChunks(deps: Pick<CoreDeps, 'storage'>, request: BulkRequest, source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let width = -1;
  let rowIndex = 0;
  let page = new Map<number, BulkRowOutcome>();
  let pageEnd = 0;
  let lines: string[][] = [];

  for await (const cells of csvRecords(source)) {
    if (width < 0) {
      width = cells.length;
      lines.push([...cells, ...RESULT_COLUMNS]);
      continue;
    }
    if (rowIndex >= pageEnd) {
      pageEnd = rowIndex + OUTCOME_PAGE;
      const outcomes = await deps.storage.bulkRows.range(request.id, rowIndex, pageEnd);
      page = new Map(outcomes.map((outcome) => [outcome.rowIndex, outcome]));
    }
    lines.push(resultLine(cells, width, page.get(rowIndex)));
    rowIndex++;
    if (lines.length >= OUTCOME_PAGE) {
      yield csvBytes(lines);
      lines = [];
    }
  }
  if (lines.length > 0) yield csvBytes(lines);
}
