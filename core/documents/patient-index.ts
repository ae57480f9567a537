/**
 * Upkeep of the patient's search index (PRODUCT, Search Patient Data). The index is kept current as
 * documents land (download, conversion, upload), and it may forget (an in-memory index after a restart)
 * or miss changes made by another process. So it carries a stamp: a digest of the stored state it
 * reflects, which is the set of the patient's documents with a file and the conversion status of each
 * (every change to what is searchable goes with such a change). Before searching, the stamp of the
 * stored state is compared with the index's; on a difference the patient's index is rebuilt from storage.
 * A change applied incrementally moves the stamp only when the index was current before it, so an index
 * that missed something is never stamped as current.
 */
import type { CoreDeps } from '../deps.js';
import type { DocumentRecord, FhirResourceRecord } from '../domain/types.js';
import type { FhirResource } from '../ports/ccda.port.js';
import type { SearchDocument, SearchIndexPort } from '../ports/search-index.port.js';
import { digest } from './digest.js';
import { isCcdaMediaType } from './document-reference.js';
import { searchTextOf, searchTextOfCcda } from './search-text.js';

type IndexDeps = Pick<CoreDeps, 'storage' | 'blob' | 'search'>;

/** Documents whose file is not there yet are not searchable and do not count. */
export function hasFile(document: DocumentRecord): boolean {
  return document.conversionStatus !== 'waiting-upload';
}

/** The stamp of the patient's searchable state, from the patient's documents. */
export function dataStamp(documents: readonly DocumentRecord[]): string {
  const parts = documents
    .filter(hasFile)
    .map((document) => `${document.id}:${document.conversionStatus}`)
    .sort();
  return `${parts.length}-${digest(parts.join('|'))}`;
}

/**
 * An index that has no stamp for a patient holds nothing for it, which is exactly right for a patient with
 * no searchable document yet: so a new patient's index is kept current from its first document on.
 */
const EMPTY_STAMP = dataStamp([]);

/**
 * Stamps of indexes whose adapter does not keep them (the port's optional `stampOf`): held in process
 * memory beside the index instance, so they are forgotten together with an in-memory index.
 */
const stampsInProcess = new WeakMap<SearchIndexPort, Map<string, string>>();

function scope(accountId: string, patientId: string): string {
  return `${accountId}\u0000${patientId}`;
}

async function stampOf(index: SearchIndexPort, accountId: string, patientId: string): Promise<string> {
  const stamp = index.stampOf ? await index.stampOf(accountId, patientId) : stampsInProcess.get(index)?.get(scope(accountId, patientId));
  return stamp ?? EMPTY_STAMP;
}

async function setStamp(index: SearchIndexPort, accountId: string, patientId: string, stamp: string): Promise<void> {
  if (index.setStamp) return index.setStamp(accountId, patientId, stamp);
  let stamps = stampsInProcess.get(index);
  if (!stamps) {
    stamps = new Map();
    stampsInProcess.set(index, stamps);
  }
  stamps.set(scope(accountId, patientId), stamp);
}

/**
 * What the index holds for one resource: its human text; for the DocumentReference of a C-CDA document,
 * the text of the document as well (PRODUCT: "C-CDA documents are included"). Undefined when there is no
 * text to find it by.
 */
export function searchDocumentOf(resource: FhirResource, documentText?: string): SearchDocument | undefined {
  const text = [searchTextOf(resource), documentText ?? ''].join(' ').trim();
  return text ? { key: `${resource.resourceType}/${resource.id ?? ''}`, text } : undefined;
}

/** The text of a stored C-CDA document, or undefined for other files and missing ones. */
export async function ccdaTextOf(deps: Pick<CoreDeps, 'blob'>, document: DocumentRecord): Promise<string | undefined> {
  if (!hasFile(document) || !isCcdaMediaType(document.mimeType)) return undefined;
  const bytes = await deps.blob.get(document.blobKey);
  return bytes ? searchTextOfCcda(new TextDecoder().decode(bytes)) : undefined;
}

export interface CurrentPatientData {
  documents: DocumentRecord[];
  records: FhirResourceRecord[];
}

/**
 * Makes sure the patient's index reflects what is stored (rebuilding it when the stamps differ) and
 * returns the stored data it was checked against. Documents are read before resources, so the resources
 * are at least as new as the stamp: a change landing in between only causes one more rebuild later.
 */
export async function ensurePatientIndex(deps: IndexDeps, accountId: string, patientId: string): Promise<CurrentPatientData> {
  const documents = await deps.storage.documents.listByPatient(accountId, patientId);
  const records = await deps.storage.fhirResources.listByPatient(accountId, patientId);
  const stamp = dataStamp(documents);
  if ((await stampOf(deps.search, accountId, patientId)) !== stamp) {
    const byId = new Map(documents.map((document) => [document.id, document]));
    const entries: SearchDocument[] = [];
    for (const record of records) {
      const document = record.resourceType === 'DocumentReference' ? byId.get(record.id) : undefined;
      const entry = searchDocumentOf(record.resource as FhirResource, document ? await ccdaTextOf(deps, document) : undefined);
      if (entry) entries.push(entry);
    }
    // Keys the index may hold for resources merged away since are not removed here (the port cannot list
    // them); search results are always read back from storage, so such a key never shows.
    await deps.search.upsert(accountId, patientId, entries);
    await setStamp(deps.search, accountId, patientId, stamp);
  }
  return { documents, records };
}

export interface IndexChange {
  /** Stamp of the stored state before the change (see dataStamp). */
  before: string;
  /** Stamp of the stored state the change leads to. */
  after: string;
  upsert: readonly SearchDocument[];
  remove: readonly string[];
}

/**
 * Applies a change to the patient's index if the index was current before it, and stamps it current.
 * An index that was not current is left alone: the next search rebuilds it from storage anyway.
 */
export async function applyIndexChange(deps: Pick<CoreDeps, 'search'>, accountId: string, patientId: string, change: IndexChange): Promise<void> {
  if ((await stampOf(deps.search, accountId, patientId)) !== change.before) return;
  if (change.remove.length > 0) await deps.search.remove(accountId, patientId, change.remove);
  if (change.upsert.length > 0) await deps.search.upsert(accountId, patientId, change.upsert);
  await setStamp(deps.search, accountId, patientId, change.after);
}
