/**
 * Deduplication of a patient's FHIR resources gathered from several documents ("the same coded
 * condition, medication, allergy, immunization or observation from several documents appears once").
 *
 * When two resources are "the same" — both of one resourceType and with equal identity:
 * - Condition, AllergyIntolerance, Medication: the primary code of `code`.
 * - MedicationRequest, MedicationStatement: the primary code of the drug: `medicationCodeableConcept`, or
 *   the `code` of the Medication that `medicationReference` points to (a contained `#id`, or a
 *   `Medication/id` among the resources given).
 * - Immunization: the primary code of `vaccineCode` + the day of `occurrence[x]` (a vaccine is given at
 *   most once a day; two doses on different days stay two).
 * - Observation: the primary code of `code` + `effective[x]` as written (dateTime, instant or
 *   period.start) + the value (`value[x]`, compared exactly, codes by primary code) + `component` values.
 * The primary code is the first coding that has both a system and a code (both trimmed). A resource of
 * another type, or without a primary code, is never merged. Request and Statement never merge with each
 * other: an order and a statement of use are different facts.
 *
 * Which one survives: the one with the most data (count of non-empty primitive values at any depth), then
 * the smallest id; so the outcome depends only on the set of resources, never on their order. The
 * survivor is kept as it is: nothing is copied from the others (their document provenance is the
 * caller's to merge, using `replaced`).
 *
 * References: every `reference: "Type/id"` at any depth of the kept resources that named a merged
 * resource is rewritten to its survivor, so no reference that resolved before dangles after.
 *
 * Output: survivors sorted by resourceType then id. Input keys (`Type/id`) are expected to be unique; if
 * one repeats, only the richest copy is kept (by the same rule, then by content).
 */
import type { FhirResource } from '../ports/ccda.port.js';

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

/** Every `reference` string at any depth, in document order. */
export function referencesIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const item of value) referencesIn(item, out);
  } else if (isObject(value)) {
    for (const [key, child] of Object.entries(value)) {
      if (key === 'reference' && typeof child === 'string') out.push(child);
      else referencesIn(child, out);
    }
  }
  return out;
}

/** A deep copy of `value` where each `reference` found in `map` is replaced by its target. */
export function rewriteReferences<T>(value: T, map: ReadonlyMap<string, string>): T {
  if (Array.isArray(value)) return value.map((item) => rewriteReferences(item, map)) as T;
  if (!isObject(value)) return value;
  const copy: Json = {};
  for (const [key, child] of Object.entries(value)) {
    copy[key] = key === 'reference' && typeof child === 'string' ? (map.get(child) ?? child) : rewriteReferences(child, map);
  }
  return copy as T;
}

/** JSON with object keys sorted, so equal content gives equal text whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).filter((key) => value[key] !== undefined).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function amountOfData(value: unknown): number {
  if (Array.isArray(value)) return value.reduce<number>((sum, item) => sum + amountOfData(item), 0);
  if (isObject(value)) return Object.values(value).reduce<number>((sum, child) => sum + amountOfData(child), 0);
  if (value === undefined || value === null || value === '') return 0;
  return 1;
}

function medicationCode(resource: FhirResource, byKey: ReadonlyMap<string, FhirResource>): string | undefined {
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

function effectiveOf(resource: FhirResource): string {
  const period = isObject(resource.effectivePeriod) ? resource.effectivePeriod.start : undefined;
  const value = resource.effectiveDateTime ?? resource.effectiveInstant ?? period ?? '';
  return typeof value === 'string' ? value.trim() : '';
}

function occurrenceDayOf(resource: FhirResource): string {
  const value = resource.occurrenceDateTime ?? resource.occurrenceString ?? '';
  return typeof value === 'string' ? value.trim().slice(0, 10) : '';
}

/**
 * The identity two resources must share to be merged (see the file header), or undefined when the
 * resource is never merged. `byKey` resolves `Medication/id` references.
 */
export function identityOf(resource: FhirResource, byKey: ReadonlyMap<string, FhirResource> = new Map()): string | undefined {
  const type = resource.resourceType;
  const key = (...parts: string[]) => [type, ...parts].map((part) => part.replaceAll('\u0000', '')).join('\u0000');
  switch (type) {
    case 'Condition':
    case 'AllergyIntolerance':
    case 'Medication': {
      const code = primaryCode(resource.code);
      return code ? key(code) : undefined;
    }
    case 'MedicationRequest':
    case 'MedicationStatement': {
      const code = medicationCode(resource, byKey);
      return code ? key(code) : undefined;
    }
    case 'Immunization': {
      const code = primaryCode(resource.vaccineCode);
      return code ? key(code, occurrenceDayOf(resource)) : undefined;
    }
    case 'Observation': {
      const code = primaryCode(resource.code);
      return code ? key(code, effectiveOf(resource), observationValue(resource), observationComponents(resource)) : undefined;
    }
    default:
      return undefined;
  }
}

/** Total order: more data first, then smaller id, then smaller content (only ties of a repeated key reach it). */
function better(a: FhirResource, b: FhirResource): number {
  const data = amountOfData(b) - amountOfData(a);
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

export function dedupeResources(resources: readonly FhirResource[]): DedupeResult {
  // One resource per key first, so lookups and the outcome do not depend on input order.
  const byKey = new Map<string, FhirResource>();
  for (const resource of resources) {
    const key = resourceKey(resource);
    const current = byKey.get(key);
    if (!current || better(resource, current) < 0) byKey.set(key, resource);
  }

  const groups = new Map<string, FhirResource[]>();
  const kept: FhirResource[] = [];
  for (const resource of byKey.values()) {
    const identity = identityOf(resource, byKey);
    if (identity === undefined) {
      kept.push(resource);
      continue;
    }
    const group = groups.get(identity);
    if (group) group.push(resource);
    else groups.set(identity, [resource]);
  }

  const replaced = new Map<string, string>();
  for (const group of groups.values()) {
    group.sort(better);
    const [survivor, ...others] = group;
    kept.push(survivor!);
    for (const other of others) replaced.set(resourceKey(other), resourceKey(survivor!));
  }

  // Copies even when nothing merged: callers may change the result without touching their input.
  const rewritten = kept.map((resource) => rewriteReferences(resource, replaced));
  const sortedReplaced = new Map([...replaced].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { resources: rewritten.sort(byTypeThenId), replaced: sortedReplaced };
}
