import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { patientResourcesArb } from '../../spec/arbitraries/fhir.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { resourceKey } from './dedupe.js';
import { referencesIn } from './references.js';
import { byKey, RELATED_TYPES, relatedKeys } from './related.js';

describe('relatedKeys', () => {
  const patient: FhirResource = { resourceType: 'Patient', id: 'p' };
  const doctor: FhirResource = { resourceType: 'Practitioner', id: 'd' };
  const clinic: FhirResource = { resourceType: 'Organization', id: 'o' };
  const visit: FhirResource = { resourceType: 'Encounter', id: 'e', serviceProvider: { reference: 'Organization/o' } };
  const drug: FhirResource = { resourceType: 'Medication', id: 'm' };
  const glucose: FhirResource = { resourceType: 'Observation', id: 'g' };
  const sodium: FhirResource = { resourceType: 'Observation', id: 'na' };
  const problem: FhirResource = { resourceType: 'Condition', id: 'c' };
  const panel: FhirResource = { resourceType: 'DiagnosticReport', id: 'r', subject: { reference: 'Patient/p' }, result: [{ reference: 'Observation/g' }, { reference: 'Observation/gone' }] };
  const request: FhirResource = {
    resourceType: 'MedicationRequest', id: 'mr', subject: { reference: 'Patient/p' }, encounter: { reference: 'Encounter/e' },
    requester: { reference: 'Practitioner/d' }, medicationReference: { reference: 'Medication/m' }, reasonReference: [{ reference: 'Condition/c' }],
  };
  const all = byKey([patient, doctor, clinic, visit, drug, glucose, sodium, problem, panel, request]);

  test('brings what a match references among the related types, one level deep', () => {
    expect(relatedKeys([request], all)).toEqual(new Set(['Patient/p', 'Encounter/e', 'Practitioner/d', 'Medication/m']));
  });

  test("brings a matching report's result observations, ignoring those that are gone", () => {
    expect(relatedKeys([panel], all)).toEqual(new Set(['Patient/p', 'Observation/g']));
  });

  test("brings a matching observation panel's members", () => {
    const vitals: FhirResource = { resourceType: 'Observation', id: 'v', hasMember: [{ reference: 'Observation/na' }] };
    expect(relatedKeys([vitals], byKey([vitals, sodium]))).toEqual(new Set(['Observation/na']));
  });

  test('no match, nothing related', () => {
    expect(relatedKeys([], all)).toEqual(new Set());
  });

  test('returns only keys of `all` that a match references', () => {
    fc.assert(
      fc.property(patientResourcesArb(), fc.array(fc.nat()), (resources, picks) => {
        const index = byKey(resources);
        const matching = picks.map((p) => resources[p % resources.length]!);
        const referenced = new Set(matching.flatMap((r) => referencesIn(r)));
        for (const key of relatedKeys(matching, index)) {
          expect(index.has(key)).toBe(true);
          expect(referenced.has(key)).toBe(true);
          const type = key.split('/')[0]!;
          expect(RELATED_TYPES.has(type) || type === 'Observation').toBe(true);
        }
        for (const match of matching) {
          for (const reference of referencesIn(match)) {
            if (index.has(reference) && RELATED_TYPES.has(reference.split('/')[0]!)) expect(relatedKeys(matching, index).has(reference)).toBe(true);
          }
        }
        expect(matching.every((m) => index.has(resourceKey(m)))).toBe(true);
      }),
      { numRuns: 100 },
    );
  });
});
