/**
 * Consolidated data search (deprecated; `GET /medical/v1/patient/{id}/consolidated/search?query=`).
 * Matching is the index's (search-index.port.ts: case-insensitive, all terms, typo-tolerant); around the matches come the resources they relate to
 * (related.ts) and always the Patient. The result is a FHIR searchset Bundle behind a URL valid 60 s.
 */
import type { CoreDeps } from '../deps.js';
import { getPatient } from '../entities/patients.js';
import { CoreError } from '../errors.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { issueSignedUrl } from '../signed-urls.js';
import { resourceKey } from './dedupe.js';
import { currentPatientData, indexReflects } from './patient-index.js';
import { patientResourceOf } from './patient-resource.js';
import { relatedKeys } from './related.js';
import { newJob } from '../job-catalogue.js';
import { requestTo } from '../../contract/endpoints.js';

/** The search result URL is valid 60 seconds. */
export const SEARCH_URL_VALIDITY_MS = 60_000;
/** Searches made when the index forgets the patient while they run; beyond, the last answer stands. */
const SEARCH_ATTEMPTS = 3;
/** The stored result outlives its URL a little, then is deleted. */
const SEARCH_RESULT_KEPT_MS = 2 * SEARCH_URL_VALIDITY_MS;

export interface SearchOutcome {
  /** Absent when nothing matched. */
  url?: string;
  resourceCount: number;
}

export interface SearchsetEntry {
  resource: FhirResource;
  search: { mode: 'match' | 'include' };
}

/**
 * The searchset of a query over the patient's consolidated data: the matching resources (best first),
 * then the resources related to them, then the Patient, each once. An empty list when nothing matches.
 * No query (or only blanks) matches every resource. The index is brought up to date first (rebuilt from
 * storage when it is not current, e.g. after a restart). Resources are shared with later searches: read-only.
 */
export async function searchEntries(deps: Pick<CoreDeps, 'storage' | 'blob' | 'search'>, accountId: string, patientId: string, query: string | undefined): Promise<SearchsetEntry[]> {
  const patient = await getPatient(deps, accountId, patientId);
  const terms = query?.trim() ?? '';
  let snapshot = await currentPatientData(deps, accountId, patientId);
  let found = terms === '' ? [] : await deps.search.search(accountId, patientId, terms);
  // An index kept within a budget may forget this patient between its rebuild and the search (other
  // patients' searches running meanwhile): the answer would then be empty, so the search is made again.
  for (let attempt = 1; terms !== '' && attempt < SEARCH_ATTEMPTS && !(await indexReflects(deps, accountId, patientId, snapshot.stamp)); attempt++) {
    snapshot = await currentPatientData(deps, accountId, patientId);
    found = await deps.search.search(accountId, patientId, terms);
  }
  const stored = snapshot.resources;
  // Keys come back from the index but resources from the stored snapshot: a key the index still holds for
  // a resource merged away since is dropped here.
  const matchedKeys = terms === '' ? [...stored.keys()] : found.filter((key) => stored.has(key));
  if (matchedKeys.length === 0) return [];

  const patientResource = patientResourceOf(patient);
  const patientKey = resourceKey(patientResource);
  const all = new Map(stored).set(patientKey, patientResource);
  const matches = matchedKeys.map((key) => all.get(key)!);
  const entries: SearchsetEntry[] = matches.map((resource) => ({ resource, search: { mode: 'match' } }));
  const included = new Set(matchedKeys);
  for (const key of [...relatedKeys(matches, all), patientKey]) {
    if (included.has(key)) continue;
    included.add(key);
    entries.push({ resource: all.get(key)!, search: { mode: 'include' } });
  }
  return entries;
}

export function searchResultPath(patientId: string, searchId: string): string {
  return requestTo('downloadSearchResult', { id: patientId, searchId }).path;
}

export function searchResultBlobKey(accountId: string, searchId: string): string {
  return `${accountId}/consolidated-search/${searchId}.json`;
}

/** Searches, stores the searchset and hands out its URL (valid 60 s); no URL when nothing matched. */
export async function searchPatientData(deps: CoreDeps, accountId: string, patientId: string, query: string | undefined): Promise<SearchOutcome> {
  const entries = await searchEntries(deps, accountId, patientId, query);
  if (entries.length === 0) return { resourceCount: 0 };
  const searchId = deps.ids.next();
  const key = searchResultBlobKey(accountId, searchId);
  const bundle = { resourceType: 'Bundle', type: 'searchset', total: entries.length, entry: entries };
  await deps.blob.put(key, JSON.stringify(bundle), { contentType: 'application/fhir+json' });
  const { url, expiresAt } = issueSignedUrl(deps, { method: 'GET', path: searchResultPath(patientId, searchId), accountId }, SEARCH_URL_VALIDITY_MS);
  await deps.queue.enqueue(
    // Housekeeping: nobody waits for it.
    newJob('documents.delete-blob', { key }, { runAt: new Date(expiresAt.getTime() + SEARCH_RESULT_KEPT_MS - SEARCH_URL_VALIDITY_MS).toISOString(), lane: 'background' }),
  );
  return { url, resourceCount: entries.length };
}

/** The stored searchset behind a signed search URL; FILE_NOT_FOUND once deleted. */
export async function searchResultStream(deps: Pick<CoreDeps, 'blob'>, accountId: string, searchId: string): Promise<AsyncIterable<Uint8Array>> {
  const stream = await deps.blob.stream(searchResultBlobKey(accountId, searchId));
  if (!stream) throw new CoreError('FILE_NOT_FOUND', 'This search result is no longer available; search again');
  return stream;
}
