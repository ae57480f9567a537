/**
 * The consolidated store of a patient ("resources from all documents of a patient,
 * deduplicated"). Each converted document is folded into what is stored:
 *
 * 1. The document is adopted: its own Patient resources are dropped and every `Patient/...` reference in
 *    it points to our patient (the documents describe the patient we queried for; its FHIR Patient is made
 *    from our record, see patient-resource.ts).
 * 2. The adopted resources join everything stored for the patient, and the whole set is deduplicated
 *    with the rules of dedupe.ts (the same fact appears once, episode by episode; the richest survives,
 *    completed with the others' identifiers and dates; references are rewritten to survivors). A key
 *    already stored (the same document converted again) is replaced by its new copy, completed with what
 *    the stored one gained by merging, so converting a document again takes nothing back.
 * 3. A survivor's `sourceDocumentIds` is the union of those of every resource merged into it, and the
 *    resource itself names them: one `source-document` extension per document (see withProvenance), so
 *    whoever reads a merged resource sees every document it came from.
 *
 * Folding documents one at a time gives the same set as deduplicating all of them at once, in any order,
 * and folding a document twice changes nothing (see consolidate.test.ts), so a retried job is harmless.
 */
import type { FhirResourceRecord } from '../domain/types.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { canonicalJson, completeWith, dedupeResources, resourceKey, rewriteReferences } from './dedupe.js';
import { patientReference } from './patient-resource.js';

export interface ConsolidationInput {
  accountId: string;
  patientId: string;
  /** ISO instant written on records that change. */
  now: string;
  /** Everything stored for the patient now. */
  existing: readonly FhirResourceRecord[];
  /** The document being folded in, with its converted resources as the converter gave them. */
  incoming: { documentId: string; resources: readonly FhirResource[] };
}

export interface ConsolidationResult {
  /** The patient's whole consolidated set afterwards, ordered by resourceType then id. */
  records: FhirResourceRecord[];
  /** Records to write: new ones and stored ones whose content or sources changed. */
  changed: FhirResourceRecord[];
  /** Stored resources that are gone afterwards (merged into a survivor). */
  removed: { resourceType: string; id: string }[];
  /** `Type/id` of each merged-away resource -> `Type/id` of its survivor. */
  replaced: Map<string, string>;
}

/**
 * The document's resources as they belong to our patient: its Patient resources dropped, every
 * `Patient/...` reference rewritten to ours, resources without a type or id left out.
 */
export function adoptDocumentResources(resources: readonly FhirResource[], patientId: string): FhirResource[] {
  const ours = patientReference(patientId);
  const patientKeys = new Map<string, string>();
  for (const resource of resources) {
    if (resource.resourceType === 'Patient' && resource.id) patientKeys.set(resourceKey(resource), ours);
  }
  return resources
    .filter((resource) => typeof resource.resourceType === 'string' && typeof resource.id === 'string' && resource.id !== '')
    .filter((resource) => resource.resourceType !== 'Patient')
    .map((resource) => pointPatientReferencesTo(rewriteReferences(resource, patientKeys), ours));
}

/** Any `Patient/...` reference left (to a Patient the document did not carry) also means our patient. */
function pointPatientReferencesTo<T>(value: T, ours: string): T {
  if (Array.isArray(value)) return value.map((item) => pointPatientReferencesTo(item, ours)) as T;
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    copy[key] = key === 'reference' && typeof child === 'string' && child.startsWith('Patient/') ? ours : pointPatientReferencesTo(child, ours);
  }
  return copy as T;
}

/** The extension naming a document a consolidated resource came from (`valueString`: the document's id). */
export const SOURCE_DOCUMENT_EXTENSION = 'urn:carebridge:source-document';

const isSourceDocument = (extension: unknown) =>
  typeof extension === 'object' && extension !== null && (extension as { url?: unknown }).url === SOURCE_DOCUMENT_EXTENSION;

/** The resource without its source-document extensions (as the converter made it, or as merged). */
export function withoutProvenance(resource: FhirResource): FhirResource {
  if (!Array.isArray(resource.extension) || !resource.extension.some(isSourceDocument)) return resource;
  const { extension, ...rest } = resource;
  const others = (extension as unknown[]).filter((item) => !isSourceDocument(item));
  return others.length > 0 ? { ...rest, extension: others } : rest;
}

/** The resource naming each of `documentIds` (sorted) in a source-document extension, after its own extensions. */
export function withProvenance(resource: FhirResource, documentIds: readonly string[]): FhirResource {
  const bare = withoutProvenance(resource);
  if (documentIds.length === 0) return bare;
  const own = Array.isArray(bare.extension) ? bare.extension : [];
  return { ...bare, extension: [...own, ...[...documentIds].sort().map((id) => ({ url: SOURCE_DOCUMENT_EXTENSION, valueString: id }))] };
}

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])].sort();
}

export function consolidate(input: ConsolidationInput): ConsolidationResult {
  const { accountId, patientId, now } = input;
  const sources = new Map<string, string[]>();
  const stored = new Map<string, FhirResourceRecord>();
  const candidates = new Map<string, FhirResource>();

  for (const record of input.existing) {
    const key = `${record.resourceType}/${record.id}`;
    stored.set(key, record);
    sources.set(key, [...record.sourceDocumentIds]);
    // Deduplication sees resources as documents gave them: provenance is the store's, written back below.
    candidates.set(key, withoutProvenance(record.resource as FhirResource));
  }
  for (const resource of adoptDocumentResources(input.incoming.resources, patientId)) {
    const key = resourceKey(resource);
    sources.set(key, union(sources.get(key) ?? [], [input.incoming.documentId]));
    // The new copy of a key replaces the stored one (converting a document again is the same document),
    // keeping what the stored one gained from resources merged into it.
    const before = candidates.get(key);
    candidates.set(key, before ? completeWith(resource, before) : resource);
  }

  const { resources, replaced } = dedupeResources([...candidates.values()]);
  for (const [from, to] of replaced) sources.set(to, union(sources.get(to) ?? [], sources.get(from) ?? []));

  const records: FhirResourceRecord[] = [];
  const changed: FhirResourceRecord[] = [];
  const kept = new Set<string>();
  for (const deduplicated of resources) {
    const key = resourceKey(deduplicated);
    kept.add(key);
    const sourceDocumentIds = union([], sources.get(key) ?? []);
    const resource = withProvenance(deduplicated, sourceDocumentIds);
    const before = stored.get(key);
    const same =
      before !== undefined &&
      canonicalJson(before.resource) === canonicalJson(resource) &&
      canonicalJson(union([], before.sourceDocumentIds)) === canonicalJson(sourceDocumentIds);
    const record: FhirResourceRecord = same
      ? before
      : { accountId, patientId, resourceType: resource.resourceType, id: resource.id!, resource, sourceDocumentIds, updatedAt: now };
    records.push(record);
    if (!same) changed.push(record);
  }
  const removed = [...stored.values()]
    .filter((record) => !kept.has(`${record.resourceType}/${record.id}`))
    .map((record) => ({ resourceType: record.resourceType, id: record.id }));
  return { records, changed, removed, replaced };
}
