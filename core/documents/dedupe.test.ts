import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { patientResourcesArb, shuffled } from '../../spec/arbitraries/fhir.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { dedupeResources, primaryCode, referencesIn, resourceKey } from './dedupe.js';

const numRuns = 150;

/** The code two merged resources must share, computed here independently of dedupe.ts. */
function codeOf(resource: FhirResource, all: Map<string, FhirResource>): string | undefined {
  if (resource.resourceType === 'Immunization') return primaryCode(resource.vaccineCode);
  if (resource.resourceType === 'MedicationRequest' || resource.resourceType === 'MedicationStatement') {
    const ref = (resource.medicationReference as { reference?: string } | undefined)?.reference;
    if (ref?.startsWith('#')) return primaryCode((resource.contained as FhirResource[])[0]?.code);
    if (ref) return primaryCode(all.get(ref)?.code);
    return primaryCode(resource.medicationCodeableConcept);
  }
  return primaryCode(resource.code);
}

const keysOf = (resources: FhirResource[]) => new Map(resources.map((r) => [resourceKey(r), r]));

describe('dedupeResources (properties)', () => {
  test('is idempotent', () => {
    fc.assert(
      fc.property(patientResourcesArb(), (resources) => {
        const once = dedupeResources(resources);
        const twice = dedupeResources(once.resources);
        expect(twice.resources).toEqual(once.resources);
        expect(twice.replaced.size).toBe(0);
      }),
      { numRuns },
    );
  });

  test('does not depend on the order of its input', () => {
    fc.assert(
      fc.property(
        patientResourcesArb().chain((resources) => fc.tuple(fc.constant(resources), shuffled(resources))),
        ([resources, reordered]) => {
          const a = dedupeResources(resources);
          const b = dedupeResources(reordered);
          expect(b.resources).toEqual(a.resources);
          expect([...b.replaced]).toEqual([...a.replaced]);
        },
      ),
      { numRuns },
    );
  });

  test('never merges resources of different types or codes, and merges only the five families', () => {
    fc.assert(
      fc.property(patientResourcesArb(), (resources) => {
        const all = keysOf(resources);
        const { replaced } = dedupeResources(resources);
        for (const [from, to] of replaced) {
          const loser = all.get(from)!;
          const survivor = all.get(to)!;
          expect(survivor.resourceType).toBe(loser.resourceType);
          expect(['Condition', 'AllergyIntolerance', 'Immunization', 'Observation', 'MedicationRequest', 'MedicationStatement', 'Medication']).toContain(
            loser.resourceType,
          );
          const code = codeOf(loser, all);
          expect(code).toBeDefined();
          expect(codeOf(survivor, all)).toBe(code);
        }
      }),
      { numRuns },
    );
  });

  test('keeps every resource it does not merge, and only survivors', () => {
    fc.assert(
      fc.property(patientResourcesArb(), (resources) => {
        const { resources: kept, replaced } = dedupeResources(resources);
        const keptKeys = new Set(kept.map(resourceKey));
        expect(keptKeys.size).toBe(kept.length);
        for (const resource of resources) {
          const key = resourceKey(resource);
          expect(keptKeys.has(key)).toBe(!replaced.has(key));
        }
        for (const survivor of replaced.values()) expect(keptKeys.has(survivor)).toBe(true);
      }),
      { numRuns },
    );
  });

  test('never leaves dangling a reference that resolved before', () => {
    fc.assert(
      fc.property(patientResourcesArb(), (resources) => {
        const before = new Set(resources.map(resourceKey));
        const { resources: kept } = dedupeResources(resources);
        const after = new Set(kept.map(resourceKey));
        for (const resource of kept) {
          for (const reference of referencesIn(resource)) {
            if (before.has(reference)) expect(after.has(reference)).toBe(true);
          }
        }
      }),
      { numRuns },
    );
  });

  test('does not change its input', () => {
    fc.assert(
      fc.property(patientResourcesArb(), (resources) => {
        const copy = structuredClone(resources);
        dedupeResources(resources);
        expect(resources).toEqual(copy);
      }),
      { numRuns: 50 },
    );
  });
});

describe('dedupeResources (examples)', () => {
  const pneumonia = { coding: [{ system: 'http://snomed.info/sct', code: '233604007', display: 'Pneumonia' }] };
  const patient: FhirResource = { resourceType: 'Patient', id: 'p' };

  test('the same condition from two documents appears once; the richer survives; references follow it', () => {
    const a: FhirResource = { resourceType: 'Condition', id: 'b-from-doc1', code: pneumonia, subject: { reference: 'Patient/p' } };
    const b: FhirResource = { resourceType: 'Condition', id: 'a-from-doc2', code: pneumonia, onsetDateTime: '2012-08-06', subject: { reference: 'Patient/p' } };
    const encounter: FhirResource = { resourceType: 'Encounter', id: 'e', diagnosis: [{ condition: { reference: 'Condition/b-from-doc1' } }] };
    const { resources, replaced } = dedupeResources([a, encounter, patient, b]);
    expect(replaced).toEqual(new Map([['Condition/b-from-doc1', 'Condition/a-from-doc2']]));
    expect(resources.map(resourceKey)).toEqual(['Condition/a-from-doc2', 'Encounter/e', 'Patient/p']);
    expect(resources[1]!.diagnosis).toEqual([{ condition: { reference: 'Condition/a-from-doc2' } }]);
  });

  test('with equal data the smaller id survives', () => {
    const x: FhirResource = { resourceType: 'AllergyIntolerance', id: 'y', code: pneumonia };
    const y: FhirResource = { resourceType: 'AllergyIntolerance', id: 'x', code: pneumonia };
    expect(dedupeResources([x, y]).replaced).toEqual(new Map([['AllergyIntolerance/y', 'AllergyIntolerance/x']]));
  });

  test('the primary code decides: a shared translation is not enough', () => {
    const icd = { system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'J18.9' };
    const a: FhirResource = { resourceType: 'Condition', id: 'a', code: { coding: [pneumonia.coding[0], icd] } };
    const b: FhirResource = { resourceType: 'Condition', id: 'b', code: { coding: [icd] } };
    expect(dedupeResources([a, b]).resources).toHaveLength(2);
  });

  test('observations merge only with the same time and value; immunizations only on the same day', () => {
    const hr = { coding: [{ system: 'http://loinc.org', code: '8867-4' }] };
    const obs = (id: string, at: string, value: number): FhirResource => ({
      resourceType: 'Observation', id, code: hr, effectiveDateTime: at, valueQuantity: { value, unit: '/min' },
    });
    const result = dedupeResources([obs('1', '2012-08-06', 72), obs('2', '2012-08-06', 72), obs('3', '2012-08-06', 80), obs('4', '2013-01-01', 72)]);
    expect(result.resources.map((r) => r.id)).toEqual(['1', '3', '4']);

    const flu = { coding: [{ system: 'http://hl7.org/fhir/sid/cvx', code: '88' }] };
    const shot = (id: string, at: string): FhirResource => ({ resourceType: 'Immunization', id, vaccineCode: flu, occurrenceDateTime: at });
    const shots = dedupeResources([shot('a', '2012-10-01T09:00:00Z'), shot('b', '2012-10-01'), shot('c', '2013-10-01')]);
    expect(shots.resources.map((r) => r.id)).toEqual(['a', 'c']);
  });

  test('medication requests merge on the drug, whether inline, contained or referenced', () => {
    const atenolol = { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '197380' }] };
    const inline: FhirResource = { resourceType: 'MedicationRequest', id: 'inline', medicationCodeableConcept: atenolol };
    const contained: FhirResource = {
      resourceType: 'MedicationRequest', id: 'contained', contained: [{ resourceType: 'Medication', id: 'm', code: atenolol }], medicationReference: { reference: '#m' },
    };
    const medication: FhirResource = { resourceType: 'Medication', id: 'med', code: atenolol };
    const referenced: FhirResource = { resourceType: 'MedicationRequest', id: 'referenced', medicationReference: { reference: 'Medication/med' } };
    const statement: FhirResource = { resourceType: 'MedicationStatement', id: 's', medicationCodeableConcept: atenolol };
    const { resources } = dedupeResources([inline, contained, medication, referenced, statement]);
    expect(resources.map(resourceKey)).toEqual(['Medication/med', 'MedicationRequest/contained', 'MedicationStatement/s']);
  });

  test('resources without a code, and other types, are never merged', () => {
    const a: FhirResource = { resourceType: 'Condition', id: 'a', code: { text: 'chest pain' } };
    const b: FhirResource = { resourceType: 'Condition', id: 'b', code: { text: 'chest pain' } };
    const c: FhirResource = { resourceType: 'Procedure', id: 'c', code: pneumonia };
    const d: FhirResource = { resourceType: 'Procedure', id: 'd', code: pneumonia };
    expect(dedupeResources([a, b, c, d]).resources).toHaveLength(4);
  });
});
