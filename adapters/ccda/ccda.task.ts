import { threadId } from 'node:worker_threads';
import { searchTextOfCcda } from '../../core/documents/search-text.js';
import { isCoreError } from '../../core/errors.js';
import type { FhirBundle } from '../../core/ports/ccda.port.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';

/**
 * What a conversion sends back across the thread boundary. Errors travel as data because structured
 * cloning keeps only an Error's message and name, not its class: the pooled adapter rebuilds the CoreError.
 * `threadId` lets callers (and tests) see which thread did the work.
 */
export type CcdaTaskResult =
  | { ok: true; bundle: FhirBundle; threadId: number }
  | { ok: false; code: 'CCDA_INVALID'; message: string; threadId: number }
  | { ok: false; code: 'INTERNAL'; threadId: number };

const converter = new MedplumCcdaConverter();

/** One conversion, run inside a pool thread (ccda.worker.mjs) or anywhere else. Never throws. */
export async function convertCcdaTask(xml: string): Promise<CcdaTaskResult> {
  try {
    return { ok: true, bundle: await converter.convert(xml), threadId };
  } catch (error) {
    // The converter's CCDA_INVALID messages describe the problem, never the document, so they may travel.
    if (isCoreError(error) && error.code === 'CCDA_INVALID') return { ok: false, code: 'CCDA_INVALID', message: error.message, threadId };
    // Anything else may be a library error quoting the document: only the fact crosses.
    return { ok: false, code: 'INTERNAL', threadId };
  }
}

/** The search text and the conversion of a document (the port's `read`), inside a pool thread. Never throws. */
export async function readTask(xml: string): Promise<{ ok: true; searchText: string; conversion: CcdaTaskResult; threadId: number }> {
  return { ok: true, searchText: searchTextOfCcda(xml), conversion: await convertCcdaTask(xml), threadId };
}

/** The search text of a document, inside a pool thread. Never throws. */
export function searchTextTask(xml: string): { ok: true; text: string; threadId: number } {
  return { ok: true, text: searchTextOfCcda(xml), threadId };
}
