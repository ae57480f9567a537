/**
 * Upkeep of the patient's search index. The index is kept current as
 * documents land (download, conversion, upload), and it may forget (an in-memory index after a restart,
 * or one that keeps only the patients used last) or miss changes made by another process. So it carries a stamp: a digest of the stored state it
 * reflects, which is the set of the patient's documents with a file and the conversion status of each
 * (every change to what is searchable goes with such a change). Before searching, the stamp of the
 * stored state is compared with the index's; on a difference the patient's index is rebuilt from storage.
 * A change applied incrementally moves the stamp only when the index was current before it, so an index
 * that missed something is never stamped as current. The resources a search reads are kept the same way:
 * a snapshot per patient (a few patients per process), valid while its stamp is the data's.
 */
import { DEFAULT_MAX_CONVERSION_BYTES, type CoreConfig, type CoreDeps } from '../deps.js';
import type { DocumentRecord } from '../domain/types.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { isCoreError } from '../errors.js';
import type { SearchDocument, SearchIndexPort } from '../ports/search-index.port.js';
import { digest } from './digest.js';
import { isCcdaMediaType } from './document-reference.js';
import { searchTextOf, searchTextOfCcda } from './search-text.js';
import type { PatientSnapshot, PatientSnapshots } from './patient-snapshots.js';

type SnapshotDeps = Pick<CoreDeps, 'snapshots'>;
type IndexDeps = Pick<CoreDeps, 'storage' | 'blob' | 'search' | 'snapshots'> & DocumentTextDeps;

/** What making a document's search text may use: the converter's threads, and the size limit. */
export type DocumentTextDeps = Partial<Pick<CoreDeps, 'ccda'>> & { config?: Pick<CoreConfig, 'maxConversionBytes'> };

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
 * no searchable document yet: a search of such a patient needs no rebuild. (Changes are not applied to an
 * index that holds nothing for the patient: see `applyIndexChange`.)
 */
const EMPTY_STAMP = dataStamp([]);

function scope(accountId: string, patientId: string): string {
  return `${accountId}\u0000${patientId}`;
}

async function stampOf(index: SearchIndexPort, accountId: string, patientId: string): Promise<string> {
  return (await index.stampOf(accountId, patientId)) ?? EMPTY_STAMP;
}

function setStamp(index: SearchIndexPort, accountId: string, patientId: string, stamp: string): Promise<void> {
  return index.setStamp(accountId, patientId, stamp);
}

/** True when the patient's index still reflects the stored state of `stamp` (it may have been forgotten since). */
export async function indexReflects(deps: Pick<CoreDeps, 'search'>, accountId: string, patientId: string, stamp: string): Promise<boolean> {
  return (await stampOf(deps.search, accountId, patientId)) === stamp;
}

/**
 * What the index holds for one resource: its human text; for the DocumentReference of a C-CDA document,
 * the text of the document as well ("C-CDA documents are included"). Undefined when there is no
 * text to find it by.
 */
export function searchDocumentOf(resource: FhirResource, documentText?: string): SearchDocument | undefined {
  const text = [searchTextOf(resource), documentText ?? ''].join(' ').trim();
  return text ? { key: `${resource.resourceType}/${resource.id ?? ''}`, text } : undefined;
}

/**
 * The text of a stored C-CDA document, or undefined for other files, missing ones and those past the
 * conversion size limit (not read at all: they are found by their description and file name).
 */
export async function ccdaTextOf(deps: Pick<CoreDeps, 'blob'> & DocumentTextDeps, document: DocumentRecord): Promise<string | undefined> {
  if (!hasFile(document) || !isCcdaMediaType(document.mimeType) || document.size > sizeLimit(deps)) return undefined;
  const bytes = await deps.blob.get(document.blobKey);
  return bytes ? documentText(deps, bytes) : undefined;
}

const sizeLimit = (deps: DocumentTextDeps) => deps.config?.maxConversionBytes ?? DEFAULT_MAX_CONVERSION_BYTES;

/**
 * The search text of a C-CDA document within the size limit, made where the converter runs. A converter
 * too busy to take it (its queue full) leaves it to this thread: the scan is linear and the size limit
 * bounds it, and a document is never stored unsearchable.
 */
export async function documentText(deps: DocumentTextDeps, bytes: Uint8Array | undefined): Promise<string | undefined> {
  if (bytes === undefined || bytes.byteLength > sizeLimit(deps)) return undefined;
  const xml = new TextDecoder().decode(bytes);
  if (!deps.ccda?.searchText) return searchTextOfCcda(xml);
  try {
    return await deps.ccda.searchText(xml);
  } catch (error) {
    if (isCoreError(error) && error.code === 'RATE_LIMITED') return searchTextOfCcda(xml);
    throw error;
  }
}

/** Without a snapshot cache in the deps, each search reads the patient's resources from storage. */
function snapshotsOf(deps: SnapshotDeps): Pick<PatientSnapshots, 'get' | 'set'> {
  return deps.snapshots ?? { get: () => undefined, set: () => undefined };
}

/**
 * The patient's stored resources, with the patient's index made to reflect them (rebuilt from storage
 * when its stamp differs from the data's). Documents are read before resources, so a snapshot is never
 * older than its stamp: a change landing in between only causes one more read later.
 *
 * This relies on the rule every writer of the consolidated store follows: a change to a patient's
 * resources commits together with a change of the documents' stamp (a document added, or its conversion
 * status changed).
 */
export async function currentPatientData(deps: IndexDeps, accountId: string, patientId: string): Promise<PatientSnapshot> {
  const documents = await deps.storage.documents.listByPatient(accountId, patientId);
  const stamp = dataStamp(documents);
  const snapshots = snapshotsOf(deps);
  const key = scope(accountId, patientId);
  let snapshot = snapshots.get(key);
  if (snapshot?.stamp !== stamp) {
    const records = await deps.storage.fhirResources.listByPatient(accountId, patientId);
    snapshot = { stamp, resources: new Map(records.map((record) => [`${record.resourceType}/${record.id}`, record.resource as FhirResource])) };
  }
  snapshots.set(key, snapshot);

  if ((await stampOf(deps.search, accountId, patientId)) !== stamp && !(await restoreIndex(deps, accountId, patientId, stamp))) {
    const byId = new Map(documents.map((document) => [document.id, document]));
    const entries: SearchDocument[] = [];
    for (const resource of snapshot.resources.values()) {
      const document = resource.resourceType === 'DocumentReference' ? byId.get(resource.id ?? '') : undefined;
      const entry = searchDocumentOf(resource, document ? await ccdaTextOf(deps, document) : undefined);
      if (entry) entries.push(entry);
    }
    // Keys the index may hold for resources merged away since are not removed here (the port cannot list
    // them); search results are always read back from the snapshot, so such a key never shows.
    await deps.search.upsert(accountId, patientId, entries);
    await setStamp(deps.search, accountId, patientId, stamp);
    await persistIndex(deps, accountId, patientId, stamp);
  }
  return snapshot;
}

/**
 * Where the patient's serialized index is kept, with the stamp of the data it reflects: one per patient,
 * replaced by each rebuild, so it weighs about what the patient's text does.
 */
export function persistedIndexBlobKey(accountId: string, patientId: string): string {
  return `${accountId}/search-index/${patientId}`;
}

/**
 * Saves the patient's index beside its stamp (`<stamp>\n<serialized index>`), for an index that can be
 * serialized: reading it back costs a fraction of a rebuild, which re-derives and tokenizes the text of
 * every resource and document. Saved only while the index still reflects `stamp`. A failed write is let go:
 * the saved copy is a shortcut, and without it the next rebuild only takes longer.
 */
async function persistIndex(deps: IndexDeps, accountId: string, patientId: string, stamp: string): Promise<void> {
  if (!deps.search.serialize || !deps.search.restore) return;
  if ((await stampOf(deps.search, accountId, patientId)) !== stamp) return;
  const serialized = await deps.search.serialize(accountId, patientId);
  if (serialized === undefined) return;
  try {
    await deps.blob.put(persistedIndexBlobKey(accountId, patientId), `${stamp}\n${serialized}`, { contentType: 'text/plain' });
  } catch {
    // See above: a missing copy is rebuilt, never wrong.
  }
}

/**
 * Restores the patient's index from its saved copy when that copy reflects exactly the data of `stamp`,
 * and stamps it; false when there is none, it is stale (another stamp), or the index cannot read it. A
 * stale copy is never used, not even as a base: it may hold text of resources merged away or changed since.
 */
async function restoreIndex(deps: IndexDeps, accountId: string, patientId: string, stamp: string): Promise<boolean> {
  if (!deps.search.serialize || !deps.search.restore) return false;
  const bytes = await deps.blob.get(persistedIndexBlobKey(accountId, patientId));
  if (!bytes) return false;
  // The stamp is read first, so a stale copy is not decoded whole.
  const head = `${stamp}\n`;
  if (new TextDecoder().decode(bytes.subarray(0, head.length)) !== head) return false;
  if (!(await deps.search.restore(accountId, patientId, new TextDecoder().decode(bytes.subarray(head.length))))) return false;
  await setStamp(deps.search, accountId, patientId, stamp);
  return true;
}

export interface IndexChange {
  /** Stamp of the stored state before the change (see dataStamp). */
  before: string;
  /** Stamp of the stored state the change leads to. */
  after: string;
  /** What the index gets for the resources written; made only when the index is kept current by this change. */
  upsert: () => readonly SearchDocument[];
  /** The resources written (new or changed); asked for only when a snapshot is kept current by this change. */
  resources: () => readonly FhirResource[];
  /** `Type/id` of the resources deleted. */
  remove: readonly string[];
}

/**
 * Applies a change to the patient's index, and to the snapshot searches read, each only if it was current
 * before the change; then stamps it current. One that was not current is left alone: the next search
 * rebuilds or re-reads it from storage anyway. So is a patient the index holds nothing for (never searched,
 * or forgotten): an import's patients are indexed at their first search, not as their documents land, so an
 * import neither spends its time on indexes nobody reads nor fills the index's memory budget with them.
 */
export async function applyIndexChange(deps: Pick<CoreDeps, 'search' | 'snapshots'>, accountId: string, patientId: string, change: IndexChange): Promise<void> {
  const snapshots = snapshotsOf(deps);
  const key = scope(accountId, patientId);
  const snapshot = snapshots.get(key);
  if (snapshot?.stamp === change.before) {
    // A new map: searches running now keep reading the one they have.
    const resources = new Map(snapshot.resources);
    for (const removed of change.remove) resources.delete(removed);
    for (const resource of change.resources()) resources.set(`${resource.resourceType}/${resource.id ?? ''}`, resource);
    snapshots.set(key, { stamp: change.after, resources });
  }
  if ((await deps.search.stampOf(accountId, patientId)) !== change.before) return;
  if (change.remove.length > 0) await deps.search.remove(accountId, patientId, change.remove);
  const upsert = change.upsert();
  if (upsert.length > 0) await deps.search.upsert(accountId, patientId, upsert);
  // An index that forgets (within a budget) may have forgotten the patient meanwhile and started afresh
  // with just this change: stamping that as current would hide the rest of the patient's data for good.
  if ((await stampOf(deps.search, accountId, patientId)) !== change.before) return;
  await setStamp(deps.search, accountId, patientId, change.after);
}
