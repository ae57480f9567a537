import { threadId } from 'node:worker_threads';
import { searchTextOfCcda } from '../../core/documents/search-text.js';
import { isCoreError } from '../../core/errors.js';
import { foldDocuments } from '../../core/documents/fold.js';
import type { FhirBundle, FoldOutcome, FoldRequest } from '../../core/ports/ccda.port.js';
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

/** A conversion as `read` sends it back: the bundle as its JSON text, one copy across the thread boundary. */
export type ReadTaskConversion = { ok: true; bundleJson: string; threadId: number } | Exclude<CcdaTaskResult, { ok: true }>;

/** The search text and the conversion of a document (the port's `read`), inside a pool thread. Never throws. */
export async function readTask(xml: string): Promise<{ ok: true; searchText: string; conversion: ReadTaskConversion; threadId: number }> {
  const conversion = await convertCcdaTask(xml);
  return {
    ok: true,
    searchText: searchTextOfCcda(xml),
    conversion: conversion.ok ? { ok: true, bundleJson: JSON.stringify(conversion.bundle), threadId } : conversion,
    threadId,
  };
}

/** What a fold sends back: its outcome, or only the fact that it failed (the records hold PHI). */
export type FoldTaskResult = { ok: true; outcome: FoldOutcome; threadId: number } | { ok: false; code: 'INTERNAL'; threadId: number };

/** The core's fold of converted documents into a patient's record (the port's `fold`), inside a pool thread. Never throws. */
export function foldTask(request: FoldRequest): FoldTaskResult {
  try {
    return { ok: true, outcome: foldDocuments(request), threadId };
  } catch {
    return { ok: false, code: 'INTERNAL', threadId };
  }
}

/** The search text of a document, inside a pool thread. Never throws. */
export function searchTextTask(xml: string): { ok: true; text: string; threadId: number } {
  return { ok: true, text: searchTextOfCcda(xml), threadId };
}
