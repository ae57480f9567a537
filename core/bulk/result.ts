import { stringify } from 'csv-stringify/sync';
import type { CoreDeps } from '../deps.js';
import type { BulkRequest, BulkRowOutcome } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { issueSignedUrl } from '../signed-urls.js';
import { csvRecords } from './csv-stream.js';

/** PRODUCT: Limits — result CSV URL validity, 600 seconds. */
export const RESULT_URL_VALIDITY_MS = 600_000;

/** PRODUCT: Result CSV row — same columns as the input plus these, named exactly so. */
export const RESULT_COLUMNS = ['metriportId', 'status', 'reason'] as const;

const OUTCOME_PAGE = 1_000;

export function resultPath(requestId: string): string {
  return `/medical/v1/patient/bulk/${requestId}/result`;
}

export function resultDownloadUrl(deps: Pick<CoreDeps, 'urlSigner' | 'clock' | 'config'>, request: BulkRequest): string {
  return issueSignedUrl(deps, { method: 'GET', path: resultPath(request.id), accountId: request.accountId }, RESULT_URL_VALIDITY_MS).url;
}

/**
 * Writes the result CSV of a request whose rows all have outcomes: the input's columns in input order
 * (unknown ones included), then metriportId, status and reason. Streams both the input and the output,
 * so memory stays flat whatever the file size. Returns the blob key.
 */
export async function writeResultCsv(deps: Pick<CoreDeps, 'blob' | 'storage'>, request: BulkRequest): Promise<string> {
  const source = await deps.blob.stream(request.uploadKey);
  if (!source) throw new CoreError('FILE_NOT_FOUND', 'The uploaded file is no longer stored');
  const resultKey = `${request.accountId}/bulk/${request.id}/result.csv`;
  await deps.blob.put(resultKey, resultChunks(deps, request, source), { contentType: 'text/csv' });
  return resultKey;
}

async function* resultChunks(deps: Pick<CoreDeps, 'storage'>, request: BulkRequest, source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder();
  let width = -1;
  let rowIndex = 0;
  let page = new Map<number, BulkRowOutcome>();
  let pageEnd = 0;
  let lines: (readonly string[])[] = [];

  const flush = () => {
    const text = stringify(lines, { record_delimiter: '\r\n' });
    lines = [];
    return encoder.encode(text);
  };

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
    const outcome = page.get(rowIndex);
    const padded = cells.length >= width ? cells : [...cells, ...Array<string>(width - cells.length).fill('')];
    lines.push(
      outcome
        ? [...padded, outcome.patientId ?? '', outcome.status, outcome.reason ?? '']
        : [...padded, '', 'failed', 'row was not processed'],
    );
    rowIndex++;
    if (lines.length >= OUTCOME_PAGE) yield flush();
  }
  if (lines.length > 0) yield flush();
}
