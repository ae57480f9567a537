/**
 * Deduplication of a patient's FHIR resources gathered from several documents ("the same coded
 * condition, medication, allergy, immunization or observation from several documents appears once"),
 * aware of episodes: the same code twice is one fact only when the times agree.
 *
 * When two resources are "the same" (always both of one resourceType):
 * - Condition: the same primary code of `code` and the same episode: the same onset and the same end,
 *   each compared by the day it names as written (`2012`, `2012-08`, `2012-08-06`). The end is the
 *   abatement; without one, a Condition whose clinical status is resolved, inactive or in remission has
 *   ended at an unknown time, any other is unresolved. Distinct episodes of a problem (pneumonia in 1998
 *   and in 2012) stay distinct; so do an unresolved record and a later one giving its end, and a mention
 *   with no date beside a dated one: joining those would make the outcome depend on which documents
 *   arrived first (a dateless mention beside two open episodes could be either), and folding documents
 *   in any order must give the same record.
 * - MedicationRequest, MedicationStatement: the same drug (the primary code of `medicationCodeableConcept`,
 *   or the `code` of the Medication that `medicationReference` points to, contained or among the
 *   resources), the same dose (value and unit of the first dose) and overlapping periods (a statement's
 *   effective[x], a request's dispenseRequest.validityPeriod; dates compared by the days they cover, a
 *   period without an end open to the future). Overlap chains: what overlaps any of a group joins it.
 *   Two without a period are the same; one with and one without are not.
 * - AllergyIntolerance, Medication: the primary code of `code`.
 * - Immunization: the primary code of `vaccineCode` + the day of `occurrence[x]`.
 * - Observation: the primary code of `code` + `effective[x]` as written + the value (`value[x]`, compared
 *   exactly, codes by primary code) + `component` values.
 * - Procedure: a shared identifier, or the same primary code and day performed. Encounter: a shared
 *   identifier, or the same primary code of its first type and day it started.
 * - Practitioner, Organization: a shared identifier (an NPI is one), or the same content.
 * - Other types (PractitionerRole, RelatedPerson, Location, Goal, CarePlan, FamilyMemberHistory...): the
 *   same content, references included (so roles of merged practitioners merge once their references
 *   agree). Composition, Patient, DocumentReference, Provenance and Bundle are never merged.
 * Whatever the type, a resource that denies its fact (a refuted Condition or AllergyIntolerance, a
 * `not-done` Procedure or Immunization, a `not-taken` statement, an order not to give a drug) or was
 * entered in error is never the same as one that asserts it.
 * "The same content" ignores `id` and `meta`. The primary code is the first coding with both a system and
 * a code (both trimmed); a coded type without a primary code is never merged. Request and Statement never
 * merge with each other: an order and a statement of use are different facts.
 *
 * What survives: the resource with the most data (non-empty primitive values at any depth, leaving out
 * identifiers, meta and its dates, which merging changes), then the smallest id; it is kept as it is, then
 * completed so that nothing merged is lost: the identifiers of every merged resource, each date element
 * (onset, abatement, recorded, effective, performed...) at the earliest value any of them has, and for
 * medications the period covering them all. The outcome depends only on the set of resources, never on
 * their order or on which of them survived.
 *
 * References: every `reference: "Type/id"` at any depth of the kept resources that named a merged
 * resource is rewritten to its survivor, so no reference that resolved before dangles after. Merging is
 * repeated until nothing more merges (a merge may make two resources' references agree).
 *
 * Output: survivors sorted by resourceType then id. Input keys (`Type/id`) are expected to be unique; if
 * one repeats, only the richest copy is kept (by the same rule, then by content).
 */
import type { FhirResource } from '../ports/ccda.port.js';
import { referencesIn, withReferencesReplaced } from './references.js';

export interface DedupeResult {
  /** One resource per identity, references rewritten, sorted by resourceType then id. */
  resources: FhirResource[];
  /** `Type/id` of each merged-away resource -> `Type/id` of the resource that replaced it. */
  replaced: Map<string, string>;
}

type Json = Record<string, unknown>;

export function resourceKey(resource: Pick<FhirResource, 'resourceType' | 'id'>): string {
  return `${resource.resourceType}/${resource.id ?? ''}`;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `system|code` of the first coding with both, or undefined. */
export function primaryCode(concept: unknown): string | undefined {
  if (!isObject(concept) || !Array.isArray(concept.coding)) return undefined;
  for (const coding of concept.coding) {
    if (!isObject(coding)) continue;
    const system = typeof coding.system === 'string' ? coding.system.trim() : '';
    const code = typeof coding.code === 'string' ? coding.code.trim() : '';
    if (system && code) return `${system}|${code}`;
  }
  return undefined;
}

/** JSON.stringify's replacer that writes each object's keys in sorted order. */
function sortedKeys(_key: string, value: unknown): unknown {
  if (!isObject(value)) return value;
  const keys = Object.keys(value);
  let sorted = true;
  for (let i = 1; i < keys.length; i++) if (keys[i - 1]! > keys[i]!) sorted = false;
  if (sorted) return value;
  // Without a prototype, so that a `__proto__` key (JSON.parse makes one an own key) is copied as the content
  // it is, not taken for the prototype's setter and lost.
  const copy: Json = Object.create(null) as Json;
  for (const key of keys.sort()) copy[key] = value[key];
  return copy;
}

/** JSON with object keys sorted, so equal content gives equal text whatever the key order. */
export function canonicalJson(value: unknown): string {
  return canonicalText(value) ?? 'null';
}

/** Keys JavaScript lists before the others whatever their order of insertion (array indices). */
const INDEX_KEY = /^(?:0|[1-9][0-9]*)$/;

/**
 * `JSON.stringify(value, sortedKeys)`, the same text, written without a replacer, which JSON.stringify calls
 * on every value: this is on the path of every deduplication. Undefined where JSON.stringify gives nothing
 * (undefined, a function). Anything but a plain object or array, an object with a `toJSON`, and one with an
 * index-like key (which JavaScript orders first, whatever the sort) are left to JSON.stringify; FHIR JSON
 * has none of them.
 */
function canonicalText(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      const prototype: unknown = Object.getPrototypeOf(value);
      // A Date, a boxed value, a Map...: JSON.stringify's own rules.
      if ((prototype !== Object.prototype && prototype !== null && !Array.isArray(value)) || typeof (value as { toJSON?: unknown }).toJSON === 'function') {
        return JSON.stringify(value, sortedKeys);
      }
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + (canonicalText(value[i]) ?? 'null');
        return out + ']';
      }
      const keys = Object.keys(value).sort();
      let out = '{';
      let first = true;
      for (const key of keys) {
        if (INDEX_KEY.test(key)) return JSON.stringify(value, sortedKeys);
        const text = canonicalText((value as Json)[key]);
        if (text === undefined) continue;
        out += (first ? '' : ',') + JSON.stringify(key) + ':' + text;
        first = false;
      }
      return out + '}';
    }
    case 'bigint':
      return JSON.stringify(value);
    default:
      return undefined;
  }
}

function amountOfData(value: unknown): number {
  if (Array.isArray(value)) return value.reduce<number>((sum, item) => sum + amountOfData(item), 0);
  if (isObject(value)) return Object.values(value).reduce<number>((sum, child) => sum + amountOfData(child), 0);
  if (value === undefined || value === null || value === '') return 0;
  return 1;
}

/** Elements holding one date of a resource, each with its [x] variants (`onsetDateTime`, `onsetPeriod`...). */
const DATE_ELEMENTS = ['onset', 'abatement', 'effective', 'occurrence', 'performed', 'recordedDate', 'authoredOn', 'dateAsserted', 'issued', 'period'];

function dateElementOf(key: string): string | undefined {
  return DATE_ELEMENTS.find((element) => key === element || (key.startsWith(element) && /^[A-Z]/.test(key.slice(element.length))));
}

/** The resource's data that merging never changes: what the survivor is chosen on. */
function rankedData(resource: FhirResource): number {
  let total = 0;
  for (const [key, value] of Object.entries(resource)) {
    if (key === 'identifier' || key === 'meta' || dateElementOf(key) !== undefined) continue;
    if (key === 'dispenseRequest' && isObject(value)) {
      const { validityPeriod: _period, ...rest } = value;
      total += amountOfData(rest);
    } else total += amountOfData(value);
  }
  return total;
}

/** Total order: more data first, then smaller id, then smaller content (only ties of a repeated key reach it). */
function better(a: FhirResource, b: FhirResource): number {
  const data = rankedData(b) - rankedData(a);
  if (data !== 0) return data;
  const ka = resourceKey(a);
  const kb = resourceKey(b);
  if (ka !== kb) return ka < kb ? -1 : 1;
  const ja = canonicalJson(a);
  const jb = canonicalJson(b);
  return ja < jb ? -1 : ja > jb ? 1 : 0;
}

function byTypeThenId(a: FhirResource, b: FhirResource): number {
  if (a.resourceType !== b.resourceType) return a.resourceType < b.resourceType ? -1 : 1;
  const ia = a.id ?? '';
  const ib = b.id ?? '';
  return ia < ib ? -1 : ia > ib ? 1 : 0;
}

// ---- what the rules compare -------------------------------------------------------------------------

/** What resolves a reference to a resource of the same set. */
export type ResourceLookup = Pick<ReadonlyMap<string, FhirResource>, 'get'>;

function medicationCode(resource: FhirResource, byKey: ResourceLookup): string | undefined {
  const inline = primaryCode(resource.medicationCodeableConcept);
  if (inline) return inline;
  const reference = isObject(resource.medicationReference) ? resource.medicationReference.reference : undefined;
  if (typeof reference !== 'string') return undefined;
  if (reference.startsWith('#')) {
    const contained = Array.isArray(resource.contained) ? resource.contained : [];
    const medication = contained.find(
      (item): item is Json => isObject(item) && item.resourceType === 'Medication' && `#${String(item.id)}` === reference,
    );
    return medication ? primaryCode(medication.code) : undefined;
  }
  const target = byKey.get(reference);
  return target?.resourceType === 'Medication' ? primaryCode(target.code) : undefined;
}

function observationValue(resource: FhirResource): string {
  for (const [key, value] of Object.entries(resource)) {
    if (!key.startsWith('value') || value === undefined) continue;
    if (key === 'valueCodeableConcept') return `${key}:${primaryCode(value) ?? canonicalJson(value)}`;
    return `${key}:${canonicalJson(value)}`;
  }
  return '';
}

function observationComponents(resource: FhirResource): string {
  if (!Array.isArray(resource.component)) return '';
  return resource.component
    .map((component) => (isObject(component) ? `${primaryCode(component.code) ?? ''}=${observationValue(component as FhirResource)}` : ''))
    .join(';');
}

const text = (value: unknown): string => (typeof value === 'string' ? value.trim() : '');
const startOf = (period: unknown): string => (isObject(period) ? text(period.start) : '');

function effectiveOf(resource: FhirResource): string {
  return text(resource.effectiveDateTime) || text(resource.effectiveInstant) || startOf(resource.effectivePeriod);
}

/** The day a FHIR date or dateTime names, as precise as it is written (`2012`, `2012-08`, `2012-08-06`). */
const dayOf = (date: string): string => date.slice(0, 10);

/** The days a date covers: `2012` the year, `2012-08` the month, a dateTime its day. */
function daysCovered(date: string): [string, string] | undefined {
  const match = /^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?/.exec(date);
  if (!match) return undefined;
  const [, year, month, day] = match;
  if (day) return [`${year}-${month}-${day}`, `${year}-${month}-${day}`];
  if (month) return [`${year}-${month}-01`, `${year}-${month}-31`];
  return [`${year}-01-01`, `${year}-12-31`];
}

function occurrenceDayOf(resource: FhirResource): string {
  return dayOf(text(resource.occurrenceDateTime) || text(resource.occurrenceString));
}

function identifierKeys(resource: FhirResource): string[] {
  if (!Array.isArray(resource.identifier)) return [];
  return resource.identifier.flatMap((identifier) => {
    if (!isObject(identifier)) return [];
    const system = text(identifier.system);
    const value = text(identifier.value);
    return system && value ? [`id\u0000${system}\u0000${value}`] : [];
  });
}

function contentKey(resource: FhirResource): string {
  const { id: _id, meta: _meta, ...content } = resource;
  return `content\u0000${canonicalJson(content)}`;
}

const RESOLVED = new Set(['resolved', 'inactive', 'remission']);

function conditionIsResolved(resource: FhirResource): boolean {
  if (['abatementDateTime', 'abatementPeriod', 'abatementAge', 'abatementRange', 'abatementString'].some((key) => resource[key] !== undefined)) return true;
  const status = isObject(resource.clinicalStatus) && Array.isArray(resource.clinicalStatus.coding) ? resource.clinicalStatus.coding : [];
  return status.some((coding) => isObject(coding) && RESOLVED.has(text(coding.code)));
}

function onsetDayOf(resource: FhirResource): string {
  return dayOf(text(resource.onsetDateTime) || startOf(resource.onsetPeriod) || text(resource.onsetString));
}

function abatementDayOf(resource: FhirResource): string {
  return dayOf(text(resource.abatementDateTime) || startOf(resource.abatementPeriod) || text(resource.abatementString));
}

interface Interval {
  /** First and last day covered; an open end is `9999-12-31`. */
  days: [string, string];
  start?: string;
  end?: string;
}

/** A medication's period as written (start and end strings) and the days it covers. */
function medicationInterval(resource: FhirResource): Interval | undefined {
  let start: string | undefined;
  let end: string | undefined;
  if (resource.resourceType === 'MedicationStatement') {
    const point = text(resource.effectiveDateTime) || text(resource.effectiveInstant);
    if (point) [start, end] = [point, point];
    else if (isObject(resource.effectivePeriod)) [start, end] = [text(resource.effectivePeriod.start) || undefined, text(resource.effectivePeriod.end) || undefined];
  } else if (isObject(resource.dispenseRequest) && isObject(resource.dispenseRequest.validityPeriod)) {
    const period = resource.dispenseRequest.validityPeriod;
    [start, end] = [text(period.start) || undefined, text(period.end) || undefined];
  }
  if (start === undefined && end === undefined) return undefined;
  const first = start ? daysCovered(start)?.[0] : '0000-01-01';
  const last = end ? daysCovered(end)?.[1] : '9999-12-31';
  if (!first || !last) return undefined;
  return { days: [first, last], ...(start ? { start } : {}), ...(end ? { end } : {}) };
}

function doseOf(resource: FhirResource): string {
  const dosages = (resource.resourceType === 'MedicationStatement' ? resource.dosage : resource.dosageInstruction) as unknown;
  const first = Array.isArray(dosages) && isObject(dosages[0]) ? dosages[0] : undefined;
  const doseAndRate = first && Array.isArray(first.doseAndRate) && isObject(first.doseAndRate[0]) ? first.doseAndRate[0] : undefined;
  const quantity = doseAndRate && isObject(doseAndRate.doseQuantity) ? doseAndRate.doseQuantity : undefined;
  if (!quantity) return '';
  return `${String(quantity.value ?? '')} ${text(quantity.code) || text(quantity.unit)}`;
}

// ---- grouping -----------------------------------------------------------------------------------------

const NEVER_MERGED = new Set(['Composition', 'Patient', 'DocumentReference', 'Provenance', 'Bundle']);

/** Union-find over resource keys. */
class Groups {
  private readonly parent = new Map<string, string>();
  find(key: string): string {
    let root = key;
    while (this.parent.get(root) !== undefined && this.parent.get(root) !== root) root = this.parent.get(root)!;
    this.parent.set(key, root);
    return root;
  }
  union(a: string, b: string): void {
    const ra = this.find(a);
    const rb = this.find(b);
    if (ra !== rb) this.parent.set(ra < rb ? rb : ra, ra < rb ? ra : rb);
  }
  /** Joins every resource in `members` into one group. */
  all(members: readonly FhirResource[]): void {
    for (let i = 1; i < members.length; i++) this.union(resourceKey(members[0]!), resourceKey(members[i]!));
  }
}

function bucket<T>(items: readonly T[], keyOf: (item: T) => string | undefined): Map<string, T[]> {
  const buckets = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    if (key === undefined) continue;
    const list = buckets.get(key);
    if (list) list.push(item);
    else buckets.set(key, [item]);
  }
  return buckets;
}

/**
 * A Condition's episode: its onset day and how it ended (the abatement day, or `resolved` when its status
 * says so without a date, or `open`).
 */
function episodeOf(resource: FhirResource): string {
  const end = abatementDayOf(resource) || (conditionIsResolved(resource) ? 'resolved' : 'open');
  return `${onsetDayOf(resource)}\u0000${end}`;
}

/** Medications of one drug and dose: those whose periods overlap (through others) form one group. */
function groupMedications(medications: FhirResource[], groups: Groups): void {
  const withPeriod = medications.map((m) => ({ m, interval: medicationInterval(m) }));
  groups.all(withPeriod.filter((x) => !x.interval).map((x) => x.m));
  const dated = withPeriod.filter((x): x is { m: FhirResource; interval: Interval } => x.interval !== undefined).sort((a, b) => (a.interval.days[0] < b.interval.days[0] ? -1 : a.interval.days[0] > b.interval.days[0] ? 1 : 0));
  let current: FhirResource[] = [];
  let reach = '';
  for (const { m, interval } of dated) {
    if (current.length > 0 && interval.days[0] <= reach) {
      current.push(m);
      if (interval.days[1] > reach) reach = interval.days[1];
      continue;
    }
    groups.all(current);
    current = [m];
    reach = interval.days[1];
  }
  groups.all(current);
}

/** Statuses that deny a statement or withdraw it, by the element that holds them. */
const DENIED = new Set(['refuted', 'entered-in-error', 'not-done', 'not-taken']);

/**
 * Whether a resource asserts its fact, denies it (refuted, not done, not taken, an order not to) or was
 * entered in error: resources of different polarity never merge.
 */
function polarityOf(resource: FhirResource): string {
  const verification = isObject(resource.verificationStatus) && Array.isArray(resource.verificationStatus.coding) ? resource.verificationStatus.coding : [];
  const code = verification.map((coding) => (isObject(coding) ? text(coding.code) : '')).find((c) => DENIED.has(c));
  if (code) return code;
  if (resource.doNotPerform === true) return 'do-not-perform';
  const status = text(resource.status);
  return DENIED.has(status) ? status : 'asserted';
}

/**
 * What makes `resource` the same fact as another, as strings: two resources sharing one of their `keys`
 * are the same; those sharing a `medication` key (drug and dose) are the same when their periods overlap
 * (through others). Every key starts with the resource type and its polarity, so resources of different
 * types, or a statement and its denial, never share one. Undefined for what is never merged.
 * `byKey` resolves a `medicationReference` to the Medication it names.
 */
export function matchKeysOf(resource: FhirResource, byKey: ResourceLookup): { keys: string[] } | { medication: string } | undefined {
  const type = resource.resourceType;
  if (NEVER_MERGED.has(type)) return undefined;
  // A statement and its denial (or a record entered in error) are never one fact, whatever else they share.
  const prefix = `${type}\u0000${polarityOf(resource)}\u0000`;
  const keys = (list: readonly (string | undefined)[]) => ({ keys: list.filter((k): k is string => k !== undefined).map((k) => prefix + k) });
  switch (type) {
    case 'Condition': {
      const code = primaryCode(resource.code);
      return keys([code ? `${code}\u0000${episodeOf(resource)}` : undefined]);
    }
    case 'MedicationRequest':
    case 'MedicationStatement': {
      const code = medicationCode(resource, byKey);
      return code ? { medication: `${prefix}${code}\u0000${doseOf(resource)}` } : undefined;
    }
    case 'AllergyIntolerance':
    case 'Medication':
      return keys([primaryCode(resource.code)]);
    case 'Immunization': {
      const code = primaryCode(resource.vaccineCode);
      return keys([code ? `${code}\u0000${occurrenceDayOf(resource)}` : undefined]);
    }
    case 'Observation': {
      const code = primaryCode(resource.code);
      return keys([code ? [code, effectiveOf(resource), observationValue(resource), observationComponents(resource)].join('\u0000') : undefined]);
    }
    case 'Procedure': {
      const code = primaryCode(resource.code);
      const day = dayOf(text(resource.performedDateTime) || startOf(resource.performedPeriod));
      return keys([...identifierKeys(resource), code && day ? `${code}\u0000${day}` : undefined]);
    }
    case 'Encounter': {
      const code = Array.isArray(resource.type) ? primaryCode(resource.type[0]) : undefined;
      const day = dayOf(startOf(resource.period));
      return keys([...identifierKeys(resource), code && day ? `${code}\u0000${day}` : undefined]);
    }
    case 'Practitioner':
    case 'Organization':
      return keys([...identifierKeys(resource), contentKey(resource)]);
    default:
      return keys([contentKey(resource)]);
  }
}

export type MatchKeys = ReturnType<typeof matchKeysOf>;

/**
 * The match keys of resources already worked out, by resource object, for one deduplication or one fold:
 * a resource passed on unchanged from one merge pass to the next (or from one round of a fold to the next)
 * is the same object, and its keys are the same. Only for resources nothing changes in place; a
 * medication's keys are never kept, as they depend on the Medication it names.
 */
export type MatchKeyMemo = WeakMap<FhirResource, MatchKeys>;

/** `matchKeysOf`, kept in `memo` (see MatchKeyMemo). */
export function memoisedMatchKeys(resource: FhirResource, byKey: ResourceLookup, memo: MatchKeyMemo | undefined): MatchKeys {
  if (memo === undefined || resource.resourceType === 'MedicationRequest' || resource.resourceType === 'MedicationStatement') return matchKeysOf(resource, byKey);
  if (memo.has(resource)) return memo.get(resource);
  const keys = matchKeysOf(resource, byKey);
  memo.set(resource, keys);
  return keys;
}

/** Groups `resources` (one per key) into the sets that are the same fact. */
function group(resources: readonly FhirResource[], byKey: ReadonlyMap<string, FhirResource>, memo: MatchKeyMemo): FhirResource[][] {
  const groups = new Groups();
  const owner = new Map<string, string>();
  const medications = new Map<string, FhirResource[]>();
  for (const resource of resources) {
    const match = memoisedMatchKeys(resource, byKey, memo);
    if (match === undefined) continue;
    if ('medication' in match) {
      const same = medications.get(match.medication);
      if (same) same.push(resource);
      else medications.set(match.medication, [resource]);
      continue;
    }
    for (const key of match.keys) {
      const first = owner.get(key);
      if (first) groups.union(first, resourceKey(resource));
      else owner.set(key, resourceKey(resource));
    }
  }
  for (const same of medications.values()) groupMedications(same, groups);
  return [...bucket(resources, (r) => groups.find(resourceKey(r))).values()];
}

// ---- merging ------------------------------------------------------------------------------------------

/** The period covering every interval: the earliest start and the latest end as written, open if any is. */
function covering(intervals: Interval[]): { start?: string; end?: string } {
  const earliest = [...intervals].sort((a, b) => (a.days[0] !== b.days[0] ? (a.days[0] < b.days[0] ? -1 : 1) : (a.start ?? '') < (b.start ?? '') ? -1 : 1))[0]!;
  const open = intervals.some((i) => i.end === undefined);
  const latest = [...intervals].sort((a, b) => (a.days[1] !== b.days[1] ? (a.days[1] > b.days[1] ? -1 : 1) : (a.end ?? '') > (b.end ?? '') ? -1 : 1))[0]!;
  return { ...(earliest.start ? { start: earliest.start } : {}), ...(!open && latest.end ? { end: latest.end } : {}) };
}

/** The survivor of `members` (sorted best first), completed with what the others hold that it lacks. */
function merged(members: FhirResource[]): FhirResource {
  const [survivor, ...others] = members;
  const result: FhirResource = structuredClone(survivor!);
  // Identifiers of every member, survivor's first, the rest in a fixed order.
  const identifiers = members.flatMap((m) => (Array.isArray(m.identifier) ? m.identifier : []));
  if (identifiers.length > 0) {
    const byText = new Map<string, unknown>();
    for (const identifier of identifiers) {
      const key = canonicalJson(identifier);
      if (!byText.has(key)) byText.set(key, identifier);
    }
    result.identifier = [...byText.keys()].sort().map((key) => structuredClone(byText.get(key)));
  }
  // Each date element any member has, at its earliest value among them (written as that member wrote it):
  // a merged resource loses no date, and the choice does not depend on which member survived. A
  // medication's period is the one covering them all (below).
  const medication = result.resourceType === 'MedicationStatement' || result.resourceType === 'MedicationRequest';
  const dates = new Map<string, [string, unknown, string]>();
  for (const member of members) {
    for (const [key, value] of Object.entries(member)) {
      const element = dateElementOf(key);
      if (element === undefined || value === undefined || (medication && element === 'effective')) continue;
      const rank = canonicalJson(value);
      const current = dates.get(element);
      if (!current || rank < current[2] || (rank === current[2] && key < current[0])) dates.set(element, [key, value, rank]);
    }
  }
  for (const [element, [key, value]] of dates) {
    for (const own of Object.keys(result)) if (dateElementOf(own) === element) delete result[own];
    result[key] = structuredClone(value);
  }
  // An end taken from another member means the condition is over: its clinical status comes along.
  if (result.resourceType === 'Condition' && conditionIsResolved(result) && !conditionIsResolved({ ...result, abatementDateTime: undefined, abatementPeriod: undefined, abatementAge: undefined, abatementRange: undefined, abatementString: undefined })) {
    const status = others.find((other) => other.clinicalStatus !== undefined && conditionIsResolved({ resourceType: 'Condition', clinicalStatus: other.clinicalStatus }))?.clinicalStatus;
    if (status !== undefined) result.clinicalStatus = structuredClone(status);
  }
  if (result.resourceType === 'MedicationStatement' || result.resourceType === 'MedicationRequest') {
    const intervals = members.map(medicationInterval).filter((i): i is Interval => i !== undefined);
    if (intervals.length > 0) {
      const period = covering(intervals);
      const own = medicationInterval(survivor!);
      if (!own || own.start !== period.start || own.end !== period.end) {
        if (result.resourceType === 'MedicationStatement') {
          delete result.effectiveDateTime;
          delete result.effectiveInstant;
          result.effectivePeriod = period;
        } else {
          result.dispenseRequest = { ...(isObject(result.dispenseRequest) ? result.dispenseRequest : {}), validityPeriod: period };
        }
      }
    }
  }
  return result;
}

/**
 * `latest` (a new copy of a stored resource: the same key) completed with what `stored` holds that it
 * lacks, as a survivor is completed with what it merged (identifiers, dates, a medication's period), so a
 * document converted again never takes back what merging gave its resources. `latest` when they are equal.
 */
export function completeWith(latest: FhirResource, stored: FhirResource): FhirResource {
  if (canonicalJson(latest) === canonicalJson(stored)) return latest;
  return merged([latest, stored]);
}

/** Whether the resource references any key of `replaced` (a merged-away resource). */
function namesAny(resource: FhirResource, replaced: ReadonlyMap<string, string>): boolean {
  return replaced.size > 0 && referencesIn(resource).some((reference) => replaced.has(reference));
}

function mergePass(resources: readonly FhirResource[], byKey: ReadonlyMap<string, FhirResource>, memo: MatchKeyMemo): DedupeResult {
  const replaced = new Map<string, string>();
  const kept: FhirResource[] = [];
  for (const members of group(resources, byKey, memo)) {
    if (members.length === 1) {
      kept.push(members[0]!);
      continue;
    }
    members.sort(better);
    kept.push(merged(members));
    for (const other of members.slice(1)) replaced.set(resourceKey(other), resourceKey(members[0]!));
  }
  // Only what names a merged resource is rewritten (a copy); the rest is passed on as it is.
  const rewritten = replaced.size === 0 ? kept : kept.map((resource) => (namesAny(resource, replaced) ? withReferencesReplaced(resource, replaced) : resource));
  return { resources: rewritten, replaced };
}

/**
 * `onPass` sees what each merge pass compares (the resources, references rewritten by the passes before):
 * what a caller deduplicating part of a set checks its part against (consolidate.ts).
 */
export function dedupeResources(
  resources: readonly FhirResource[],
  onPass?: (resources: readonly FhirResource[], byKey: ReadonlyMap<string, FhirResource>) => void,
  options: { copies?: boolean; memo?: MatchKeyMemo } = {},
): DedupeResult {
  // Within this call nothing changes a resource in place (a merge makes a new one), so keys may be kept.
  const memo = options.memo ?? new WeakMap<FhirResource, MatchKeys>();
  // One resource per key first, so lookups and the outcome do not depend on input order.
  const byKey = new Map<string, FhirResource>();
  for (const resource of resources) {
    const key = resourceKey(resource);
    const current = byKey.get(key);
    if (!current || better(resource, current) < 0) byKey.set(key, resource);
  }

  let current = [...byKey.values()];
  const replaced = new Map<string, string>();
  // A merge rewrites references, which may make two resources' content agree: merge until nothing does.
  for (;;) {
    const byKey = new Map(current.map((r) => [resourceKey(r), r]));
    onPass?.(current, byKey);
    const pass = mergePass(current, byKey, memo);
    if (pass.replaced.size === 0) break;
    for (const [from, to] of replaced) replaced.set(from, pass.replaced.get(to) ?? to);
    for (const [from, to] of pass.replaced) replaced.set(from, to);
    current = pass.resources;
  }
  // Copies, whether merged or not, so callers may change the result without touching their input; a caller
  // that never changes either (`copies: false`) gets its own objects back where nothing named a merged one,
  // and can tell by identity what the deduplication left as it was.
  current = current.map((resource) =>
    options.copies === false && !namesAny(resource, replaced) ? resource : withReferencesReplaced(resource, replaced),
  );
  const sortedReplaced = new Map([...replaced].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { resources: current.sort(byTypeThenId), replaced: sortedReplaced };
}
