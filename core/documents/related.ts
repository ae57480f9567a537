/**
 * The resources that come along with search matches ("related resources
 * are returned"; names them): what a matching resource references among Patient, Practitioner,
 * Organization, Encounter, Medication and Location, and the Observations that make up a matching
 * DiagnosticReport (`result`) or a matching Observation panel (`hasMember`; C-CDA result organizers
 * convert to such panels rather than to DiagnosticReports).
 */
import type { FhirResource } from '../ports/ccda.port.js';
import { resourceKey } from './dedupe.js';
import { referencesIn } from './references.js';

/** Resource types that a matching resource brings along when it references them. */
export const RELATED_TYPES: ReadonlySet<string> = new Set(['Patient', 'Practitioner', 'Organization', 'Encounter', 'Medication', 'Location']);

function referenceList(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item) => {
    const reference = typeof item === 'object' && item !== null ? (item as { reference?: unknown }).reference : undefined;
    return typeof reference === 'string' ? [reference] : [];
  });
}

/**
 * Keys (`Type/id`) of the resources related to `matching`, taken from `all` (keyed by `Type/id`):
 * one level deep, at any depth inside each matching resource. References to resources not in `all` are
 * ignored. A key of a matching resource is returned too when another matching resource references it;
 * callers union the result with the matches.
 */
export function relatedKeys(matching: readonly FhirResource[], all: ReadonlyMap<string, FhirResource>): Set<string> {
  const related = new Set<string>();
  const add = (reference: string) => {
    if (all.has(reference)) related.add(reference);
  };
  for (const resource of matching) {
    for (const reference of referencesIn(resource)) {
      const slash = reference.indexOf('/');
      if (slash > 0 && RELATED_TYPES.has(reference.slice(0, slash))) add(reference);
    }
    const parts =
      resource.resourceType === 'DiagnosticReport' ? referenceList(resource.result) : resource.resourceType === 'Observation' ? referenceList(resource.hasMember) : [];
    for (const reference of parts) {
      if (reference.startsWith('Observation/')) add(reference);
    }
  }
  return related;
}

/** `all` as relatedKeys wants it. */
export function byKey(resources: readonly FhirResource[]): Map<string, FhirResource> {
  return new Map(resources.map((resource) => [resourceKey(resource), resource]));
}
