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
import { canonicalJson, completeWith, dedupeResources, memoisedMatchKeys, resourceKey, type MatchKeyMemo, type ResourceLookup } from './dedupe.js';
import { referencesIn, withReferencesMapped } from './references.js';
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
  // The document's own Patient resources and any other `Patient/...` it names (one it did not carry) alike.
  const toOurs = (reference: string) => (reference.startsWith('Patient/') ? ours : undefined);
  return resources
    .filter((resource) => typeof resource.resourceType === 'string' && typeof resource.id === 'string' && resource.id !== '')
    .filter((resource) => resource.resourceType !== 'Patient')
    .map((resource) => withReferencesMapped(resource, toOurs));
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
  return consolidateAdopted(input, adoptDocumentResources(input.incoming.resources, input.patientId));
}

type PassObserver = (resources: readonly FhirResource[], byKey: ReadonlyMap<string, FhirResource>) => void;

function consolidateAdopted(input: ConsolidationInput, adopted: readonly FhirResource[], onPass?: PassObserver, memo?: MatchKeyMemo): ConsolidationResult {
  const { accountId, patientId, now } = input;
  const sources = new Map<string, string[]>();
  const stored = new Map<string, FhirResourceRecord>();
  const candidates = new Map<string, FhirResource>();
  const storedBare = new Map<string, FhirResource>();

  for (const record of input.existing) {
    const key = `${record.resourceType}/${record.id}`;
    stored.set(key, record);
    sources.set(key, [...record.sourceDocumentIds]);
    // Deduplication sees resources as documents gave them: provenance is the store's, written back below.
    const bare = withoutProvenance(record.resource as FhirResource);
    storedBare.set(key, bare);
    candidates.set(key, bare);
  }
  for (const resource of adopted) {
    const key = resourceKey(resource);
    sources.set(key, union(sources.get(key) ?? [], [input.incoming.documentId]));
    // The new copy of a key replaces the stored one (converting a document again is the same document),
    // keeping what the stored one gained from resources merged into it.
    const before = candidates.get(key);
    candidates.set(key, before ? completeWith(resource, before) : resource);
  }

  // Nothing here changes a resource in place (provenance is added to a copy), so the deduplication need not copy.
  const { resources, replaced } = dedupeResources([...candidates.values()], onPass, { copies: false, memo });
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
    const sameSources = before !== undefined && canonicalJson(union([], before.sourceDocumentIds)) === canonicalJson(sourceDocumentIds);
    // A stored resource the deduplication passed on as it was, naming exactly the same sources, is unchanged:
    // known without writing both out.
    const untouched = sameSources && deduplicated === storedBare.get(key) && namesItsSources(before);
    const same = untouched || (sameSources && canonicalJson(before.resource) === canonicalJson(resource));
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

const recordKey = (record: Pick<FhirResourceRecord, 'resourceType' | 'id'>) => `${record.resourceType}/${record.id}`;

function matchStringsOf(resource: FhirResource, byKey: ResourceLookup, memo?: MatchKeyMemo): string[] {
  const match = memoisedMatchKeys(resource, byKey, memo);
  return match === undefined ? [] : 'keys' in match ? match.keys : [match.medication];
}

/** The strings a resource is found by in a ConsolidatedRecord: its match keys, and what it references. */
function lookupKeysOf(resource: FhirResource, byKey: ResourceLookup): { match: string[]; references: string[] } {
  return { match: matchStringsOf(resource, byKey), references: [...new Set(referencesIn(resource))] };
}

/**
 * A patient's consolidated set held in memory while documents are folded into it one after the other,
 * where each fold costs time in proportion to the document and the stored resources it can touch, not to
 * the whole set. The outcome is exactly `consolidate` over the whole set (consolidate.test.ts holds them
 * equal), because the stored set is already deduplicated: a document can change only
 * - the stored resources of the same keys as its own (the same document converted again),
 * - those sharing a match key (dedupe.ts `matchKeysOf`) with what the merge compares, at any pass,
 * - those referencing a resource merged away (their references are rewritten, which may merge them),
 * - the Medications its medications name (their code is the drug's).
 * `fold` gathers those candidates through two indexes (match key, reference), deduplicates them with
 * the document, and gathers again from what that pass compared until nothing more is found.
 */
export class ConsolidatedRecord {
  private readonly records = new Map<string, FhirResourceRecord>();
  /** Match key -> keys of the stored resources that have it. */
  private readonly byMatchKey = new Map<string, Set<string>>();
  /** Referenced `Type/id` -> keys of the stored resources that reference it. */
  private readonly byReference = new Map<string, Set<string>>();
  private readonly indexed = new Map<string, { match: string[]; references: string[] }>();
  /**
   * Stored records that do not name their sources yet (a document's DocumentReference as stored with the
   * document): the next fold writes them in that form, as consolidating the whole set does.
   */
  private readonly unsettled = new Set<string>();

  constructor(
    private readonly accountId: string,
    private readonly patientId: string,
    existing: readonly FhirResourceRecord[],
  ) {
    for (const record of existing) {
      this.records.set(recordKey(record), record);
      if (!namesItsSources(record)) this.unsettled.add(recordKey(record));
    }
    const bare = new Map([...this.records].map(([key, record]) => [key, withoutProvenance(record.resource as FhirResource)]));
    for (const [key, resource] of bare) this.index(key, resource, bare);
  }

  /** Every record, in no particular order. */
  all(): IterableIterator<FhirResourceRecord> {
    return this.records.values();
  }

  get(key: string): FhirResourceRecord | undefined {
    return this.records.get(key);
  }

  private index(key: string, resource: FhirResource, byKey: ResourceLookup): void {
    const keys = lookupKeysOf(resource, byKey);
    this.indexed.set(key, keys);
    for (const match of keys.match) add(this.byMatchKey, match, key);
    for (const reference of keys.references) add(this.byReference, reference, key);
  }

  private unindex(key: string): void {
    const keys = this.indexed.get(key);
    if (!keys) return;
    this.indexed.delete(key);
    for (const match of keys.match) remove(this.byMatchKey, match, key);
    for (const reference of keys.references) remove(this.byReference, reference, key);
  }

  /**
   * The stored records a document's adopted resources may merge with or change, as far as the resources
   * themselves tell (fold widens it with what the merge compares). Exposed for tests.
   */
  candidatesOf(adopted: readonly FhirResource[], memo?: MatchKeyMemo): FhirResourceRecord[] {
    const byKey = new Map(adopted.map((resource) => [resourceKey(resource), resource]));
    const found = new Set<string>();
    for (const resource of adopted) this.gather(resource, byKey, found, memo);
    return [...found].map((key) => this.records.get(key)!);
  }

  /** Adds to `found` the stored keys `resource` may merge with: the same key, a shared match key, a Medication it names. */
  private gather(resource: FhirResource, byKey: ResourceLookup, found: Set<string>, memo?: MatchKeyMemo): void {
    const own = resourceKey(resource);
    if (this.records.has(own)) found.add(own);
    this.gatherNamedMedication(resource, byKey, found);
    const lookup = { get: (key: string) => byKey.get(key) ?? this.bare(key) };
    for (const match of matchStringsOf(resource, lookup, memo)) for (const key of this.byMatchKey.get(match) ?? []) found.add(key);
  }

  /** Adds the stored Medication a medication names when `byKey` lacks it: its drug is that Medication's code. */
  private gatherNamedMedication(resource: FhirResource, byKey: ResourceLookup, found: Set<string>): void {
    const named = isMedicationUse(resource) ? medicationReferenceOf(resource) : undefined;
    if (named !== undefined && byKey.get(named) === undefined && this.records.has(named)) found.add(named);
  }

  /**
   * Folds one converted document into the set: the same outcome as `consolidate` with the whole set as
   * `existing`. Returns what changed (records written and removed), and applies it to the set.
   */
  fold(incoming: ConsolidationInput['incoming'], now: string): Pick<ConsolidationResult, 'changed' | 'removed'> {
    const adopted = adoptDocumentResources(incoming.resources, this.patientId);
    const adoptedKeys = new Set(adopted.map(resourceKey));
    // The fold's resources are never changed in place: each one's match keys are worked out once, however
    // many rounds and merge passes see it.
    const memo: MatchKeyMemo = new WeakMap();
    const candidates = new Set([...this.unsettled, ...this.candidatesOf(adopted, memo).map(recordKey)]);
    for (;;) {
      const more = new Set<string>();
      const existing = [...candidates].map((key) => this.records.get(key)!);
      // What a pass compares that is new since the pass before (merged, references rewritten, or a stored
      // key's new copy) is gathered from; the rest was, by candidatesOf, or is stored and already matches
      // no other stored resource but the Medication it may name.
      let previous: ReadonlySet<FhirResource> = new Set(adopted);
      let first = true;
      const result = consolidateAdopted({ accountId: this.accountId, patientId: this.patientId, now, existing, incoming }, adopted, (resources, byKey) => {
        for (const resource of resources) {
          if (previous.has(resource)) continue;
          if (first && candidates.has(resourceKey(resource)) && !adoptedKeys.has(resourceKey(resource))) this.gatherNamedMedication(resource, byKey, more);
          else this.gather(resource, byKey, more, memo);
        }
        previous = new Set(resources);
        first = false;
      }, memo);
      for (const from of result.replaced.keys()) for (const key of this.byReference.get(from) ?? []) more.add(key);
      const before = candidates.size;
      for (const key of more) candidates.add(key);
      if (candidates.size > before) continue;

      this.unsettled.clear();
      for (const { resourceType, id } of result.removed) {
        const key = recordKey({ resourceType, id });
        this.records.delete(key);
        this.unindex(key);
      }
      for (const record of result.changed) {
        const key = recordKey(record);
        this.unindex(key);
        this.records.set(key, record);
      }
      // Indexed once every record is in place, so a medication finds the Medication it names.
      const lookup = { get: (key: string) => this.bare(key) };
      for (const record of result.changed) this.index(recordKey(record), withoutProvenance(record.resource as FhirResource), lookup);
      return { changed: result.changed, removed: result.removed };
    }
  }

  private bare(key: string): FhirResource | undefined {
    const record = this.records.get(key);
    return record ? withoutProvenance(record.resource as FhirResource) : undefined;
  }
}

/** Whether the stored resource names exactly its record's sources, as `withProvenance` writes them (last, sorted). */
function namesItsSources(record: FhirResourceRecord): boolean {
  const extensions: unknown[] = Array.isArray(record.resource.extension) ? record.resource.extension : [];
  const ids = union([], record.sourceDocumentIds);
  const tail = extensions.slice(extensions.length - ids.length);
  if (ids.length > extensions.length || extensions.slice(0, extensions.length - ids.length).some(isSourceDocument)) return false;
  return tail.every((extension, i) => {
    const { url, valueString, ...rest } = extension as { url?: unknown; valueString?: unknown };
    return url === SOURCE_DOCUMENT_EXTENSION && valueString === ids[i] && Object.keys(rest).length === 0;
  });
}

const isMedicationUse = (resource: FhirResource) => resource.resourceType === 'MedicationStatement' || resource.resourceType === 'MedicationRequest';

function medicationReferenceOf(resource: FhirResource): string | undefined {
  const reference = resource.medicationReference;
  return typeof reference === 'object' && reference !== null && typeof (reference as { reference?: unknown }).reference === 'string'
    ? (reference as { reference: string }).reference
    : undefined;
}

function add(index: Map<string, Set<string>>, value: string, key: string): void {
  const keys = index.get(value);
  if (keys) keys.add(key);
  else index.set(value, new Set([key]));
}

function remove(index: Map<string, Set<string>>, value: string, key: string): void {
  const keys = index.get(value);
  if (!keys) return;
  keys.delete(key);
  if (keys.size === 0) index.delete(value);
}
