import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { patientResourcesArb, shuffled } from '../../spec/arbitraries/fhir.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { canonicalJson, dedupeResources, matchKeysOf, memoisedMatchKeys, primaryCode, resourceKey, type MatchKeyMemo } from './dedupe.js';
import { referencesIn } from './references.js';

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

  test('never merges resources of different types or codes; coded families only on a shared primary code, others only on equal content', () => {
    const coded = ['Condition', 'AllergyIntolerance', 'Immunization', 'Observation', 'MedicationRequest', 'MedicationStatement', 'Medication'];
    fc.assert(
      fc.property(patientResourcesArb(), (resources) => {
        const all = keysOf(resources);
        const { replaced } = dedupeResources(resources);
        for (const [from, to] of replaced) {
          const loser = all.get(from)!;
          const survivor = all.get(to)!;
          expect(survivor.resourceType).toBe(loser.resourceType);
          expect(loser.resourceType).not.toBe('Patient');
          if (coded.includes(loser.resourceType)) {
            const code = codeOf(loser, all);
            expect(code).toBeDefined();
            expect(codeOf(survivor, all)).toBe(code);
          }
        }
      }),
      { numRuns },
    );
  });

  test('never merges two Conditions of different onsets', () => {
    fc.assert(
      fc.property(patientResourcesArb(), (resources) => {
        const all = keysOf(resources);
        for (const [from, to] of dedupeResources(resources).replaced) {
          const [loser, survivor] = [all.get(from)!, all.get(to)!];
          if (loser.resourceType === 'Condition') expect(loser.onsetDateTime?.toString().slice(0, 10)).toBe(survivor.onsetDateTime?.toString().slice(0, 10));
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
    const a: FhirResource = { resourceType: 'Condition', id: 'b-from-doc1', code: pneumonia, onsetDateTime: '2012-08-06', subject: { reference: 'Patient/p' } };
    const b: FhirResource = { resourceType: 'Condition', id: 'a-from-doc2', code: pneumonia, onsetDateTime: '2012-08-06T10:30:00-05:00', note: [{ text: 'x-ray' }], subject: { reference: 'Patient/p' } };
    const encounter: FhirResource = { resourceType: 'Encounter', id: 'e', diagnosis: [{ condition: { reference: 'Condition/b-from-doc1' } }] };
    const { resources, replaced } = dedupeResources([a, encounter, patient, b]);
    expect(replaced).toEqual(new Map([['Condition/b-from-doc1', 'Condition/a-from-doc2']]));
    expect(resources.map(resourceKey)).toEqual(['Condition/a-from-doc2', 'Encounter/e', 'Patient/p']);
    expect(resources[1]!.diagnosis).toEqual([{ condition: { reference: 'Condition/a-from-doc2' } }]);
  });

  test('a denial never merges with the statement it denies: refuted, not done, not taken, entered in error', () => {
    const verification = (code: string) => ({ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-verification', code }] });
    const diabetes = { coding: [{ system: 'http://snomed.info/sct', code: '44054006' }] };
    const active: FhirResource = { resourceType: 'Condition', id: 'active', code: diabetes, onsetDateTime: '2015-12-01', verificationStatus: verification('confirmed') };
    const refuted: FhirResource = { resourceType: 'Condition', id: 'refuted', code: diabetes, onsetDateTime: '2015-12-01', verificationStatus: verification('refuted') };
    const withdrawn: FhirResource = { resourceType: 'Condition', id: 'withdrawn', code: diabetes, onsetDateTime: '2015-12-01', verificationStatus: verification('entered-in-error') };
    expect(dedupeResources([active, refuted, withdrawn]).resources).toHaveLength(3);
    const appendectomy = { coding: [{ system: 'http://snomed.info/sct', code: '6025007' }] };
    const done: FhirResource = { resourceType: 'Procedure', id: 'done', status: 'completed', code: appendectomy, performedDateTime: '2014-02-03' };
    const refused: FhirResource = { resourceType: 'Procedure', id: 'refused', status: 'not-done', code: appendectomy, performedDateTime: '2014-02-03' };
    expect(dedupeResources([done, refused]).resources).toHaveLength(2);
    const peanut = { coding: [{ system: 'http://snomed.info/sct', code: '762952008' }] };
    const allergic: FhirResource = { resourceType: 'AllergyIntolerance', id: 'a', code: peanut };
    const notAllergic: FhirResource = { resourceType: 'AllergyIntolerance', id: 'b', code: peanut, verificationStatus: { coding: [{ code: 'refuted' }] } };
    expect(dedupeResources([allergic, notAllergic]).resources).toHaveLength(2);
    const take: FhirResource = { resourceType: 'MedicationRequest', id: 'give', medicationCodeableConcept: diabetes };
    const doNot: FhirResource = { resourceType: 'MedicationRequest', id: 'do-not', medicationCodeableConcept: diabetes, doNotPerform: true };
    expect(dedupeResources([take, doNot]).resources).toHaveLength(2);
    // Two denials of the same fact are one.
    expect(dedupeResources([refuted, { ...refuted, id: 'refuted-again' }]).resources).toHaveLength(1);
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

  test('episodes: the same problem in 1998 and in 2012 stays two; the same episode from two documents is one, with every date', () => {
    const condition = (id: string, extra: Record<string, unknown>): FhirResource => ({ resourceType: 'Condition', id, code: pneumonia, ...extra });
    const resolved = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'resolved' }] };
    const old1998 = condition('a', { onsetDateTime: '1998-03-10', abatementDateTime: '1998-03-16', clinicalStatus: resolved });
    const open2012 = condition('b', { onsetDateTime: '2012-09-25', recordedDate: '2013-01-01' });
    const again2012 = condition('c', { onsetDateTime: '2012-09-25T11:30:00-05:00', recordedDate: '2012-10-01', identifier: [{ system: 'urn:oid:1.2', value: 'c' }] });
    const ended2012 = condition('d', { onsetDateTime: '2012-09-25', abatementDateTime: '2012-10-20', clinicalStatus: resolved });
    const undated = condition('e', {});
    const { resources, replaced } = dedupeResources([old1998, open2012, again2012, ended2012, undated]);
    expect(replaced).toEqual(new Map([['Condition/c', 'Condition/b']]));
    expect(resources.map((r) => r.id)).toEqual(['a', 'b', 'd', 'e']);
    // The survivor keeps the other's identifier and the earliest of their recorded dates.
    expect(resources[1]).toMatchObject({ onsetDateTime: '2012-09-25', recordedDate: '2012-10-01', identifier: [{ system: 'urn:oid:1.2', value: 'c' }] });
    // A resolved problem without an end date is another episode than an open one.
    const resolvedUndated = condition('f', { clinicalStatus: resolved });
    expect(dedupeResources([undated, resolvedUndated, condition('g', {})]).resources.map((r) => r.id)).toEqual(['e', 'f']);
  });

  test('medications merge on drug, dose and overlapping periods; the survivor covers them all', () => {
    const atenolol = { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '197380' }] };
    const statement = (id: string, effective: Record<string, unknown>, dose = 1): FhirResource => ({
      resourceType: 'MedicationStatement', id, status: 'active', medicationCodeableConcept: atenolol, ...effective,
      dosage: [{ doseAndRate: [{ doseQuantity: { value: dose } }] }],
    });
    const a = statement('a', { effectivePeriod: { start: '2011-01-03', end: '2011-06-30' } });
    const b = statement('b', { effectivePeriod: { start: '2011-06', end: '2012-02-01' } });
    const c = statement('c', { effectiveDateTime: '2012-02-01T09:00:00Z' });
    const later = statement('d', { effectivePeriod: { start: '2014-01-01' } });
    const double = statement('e', { effectivePeriod: { start: '2011-01-03' } }, 2);
    const undated = statement('f', {});
    const { resources, replaced } = dedupeResources([c, later, a, double, b, undated]);
    // a overlaps b (June 2011), b reaches c (1 February 2012): one course; 2014 is another; 2 tablets another.
    expect([...replaced]).toEqual([['MedicationStatement/b', 'MedicationStatement/a'], ['MedicationStatement/c', 'MedicationStatement/a']]);
    expect(resources.find((r) => r.id === 'a')!.effectivePeriod).toEqual({ start: '2011-01-03', end: '2012-02-01T09:00:00Z' });
    expect(resources.map((r) => r.id)).toEqual(['a', 'd', 'e', 'f']);
    // A period without an end is open: whatever starts later overlaps it.
    const ongoing = statement('g', { effectivePeriod: { start: '2010-01-01' } });
    const merged = dedupeResources([ongoing, later]);
    expect(merged.resources).toHaveLength(1);
    expect(merged.resources[0]!.effectivePeriod).toEqual({ start: '2010-01-01' });
  });

  test('procedures and encounters merge on a shared identifier or on code and day; never on code alone', () => {
    const colonoscopy = { coding: [{ system: 'http://snomed.info/sct', code: '73761001' }] };
    const procedure = (id: string, extra: Record<string, unknown>): FhirResource => ({ resourceType: 'Procedure', id, status: 'completed', code: colonoscopy, ...extra });
    const shared = [{ system: 'urn:oid:1.2.3', value: '9' }];
    const { resources } = dedupeResources([
      procedure('a', { performedDateTime: '2012-05-12', identifier: shared }),
      procedure('b', { performedPeriod: { start: '2012-05-12T08:00:00Z' } }),
      procedure('c', { identifier: shared, note: [{ text: 'polyp' }] }),
      procedure('d', { performedDateTime: '2013-05-12' }),
    ]);
    expect(resources.map((r) => r.id)).toEqual(['c', 'd']);
    // The survivor (most data) gets the date it lacked: the earliest of those merged.
    expect(resources[0]).toMatchObject({ performedDateTime: '2012-05-12', identifier: shared });

    const visit = { coding: [{ system: 'http://www.ama-assn.org/go/cpt', code: '99213' }] };
    const encounter = (id: string, start: string): FhirResource => ({ resourceType: 'Encounter', id, status: 'finished', type: [visit], period: { start } });
    expect(dedupeResources([encounter('x', '2012-09-27T13:00:00-05:00'), encounter('y', '2012-09-27'), encounter('z', '2012-10-27')]).resources.map((r) => r.id)).toEqual(['x', 'z']);
  });

  test('practitioners and organizations merge on a shared identifier (an NPI) or equal content; their roles follow', () => {
    const npi = (value: string) => [{ system: 'http://hl7.org/fhir/sid/us-npi', value }];
    const resources: FhirResource[] = [
      { resourceType: 'Practitioner', id: 'p1', identifier: npi('555555555'), name: [{ family: 'Primary' }] },
      { resourceType: 'Practitioner', id: 'p2', identifier: npi('555555555') },
      { resourceType: 'Practitioner', id: 'p3', name: [{ family: 'Nightingale' }] },
      { resourceType: 'Practitioner', id: 'p4', name: [{ family: 'Nightingale' }] },
      { resourceType: 'Practitioner', id: 'p5', identifier: npi('222223333'), name: [{ family: 'Primary' }] },
      { resourceType: 'Organization', id: 'o1', identifier: npi('321CX'), name: 'Good Health HIE' },
      { resourceType: 'Organization', id: 'o2', identifier: npi('321CX'), name: 'Good Health HIE', telecom: [{ value: '555' }] },
      { resourceType: 'PractitionerRole', id: 'r1', practitioner: { reference: 'Practitioner/p1' }, organization: { reference: 'Organization/o1' } },
      { resourceType: 'PractitionerRole', id: 'r2', practitioner: { reference: 'Practitioner/p2' }, organization: { reference: 'Organization/o2' } },
    ];
    const { resources: kept, replaced } = dedupeResources(resources);
    expect(kept.map(resourceKey)).toEqual(['Organization/o2', 'Practitioner/p1', 'Practitioner/p3', 'Practitioner/p5', 'PractitionerRole/r1']);
    expect(replaced.get('PractitionerRole/r2')).toBe('PractitionerRole/r1');
    expect(kept.find((r) => r.id === 'r1')).toMatchObject({ practitioner: { reference: 'Practitioner/p1' }, organization: { reference: 'Organization/o2' } });
  });

  test('resources without a code, and other types, are never merged', () => {
    const a: FhirResource = { resourceType: 'Condition', id: 'a', code: { text: 'chest pain' } };
    const b: FhirResource = { resourceType: 'Condition', id: 'b', code: { text: 'chest pain' } };
    const c: FhirResource = { resourceType: 'Procedure', id: 'c', code: pneumonia };
    const d: FhirResource = { resourceType: 'Procedure', id: 'd', code: pneumonia };
    expect(dedupeResources([a, b, c, d]).resources).toHaveLength(4);
  });
});

describe('memoisedMatchKeys', () => {
  test('gives what matchKeysOf gives, keeps a resource\'s keys, and never keeps a medication\'s, which depend on the Medication it names', () => {
    const condition: FhirResource = { resourceType: 'Condition', id: 'c1', code: { coding: [{ system: 'http://snomed.info/sct', code: '44054006' }] }, onsetDateTime: '2020-01-01' };
    const statement: FhirResource = { resourceType: 'MedicationStatement', id: 's1', status: 'active', medicationReference: { reference: 'Medication/m1' } };
    const medication = (code: string): FhirResource => ({ resourceType: 'Medication', id: 'm1', code: { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code }] } });
    const first = new Map([['Medication/m1', medication('197361')]]);
    const second = new Map([['Medication/m1', medication('617314')]]);
    const memo: MatchKeyMemo = new WeakMap();
    expect(memoisedMatchKeys(condition, first, memo)).toEqual(matchKeysOf(condition, first));
    expect(memo.has(condition)).toBe(true);
    expect(memoisedMatchKeys(statement, first, memo)).toEqual(matchKeysOf(statement, first));
    expect(memoisedMatchKeys(statement, second, memo)).toEqual(matchKeysOf(statement, second));
    expect(matchKeysOf(statement, second)).not.toEqual(matchKeysOf(statement, first));
    expect(memo.has(statement)).toBe(false);
  });
});

describe('canonicalJson', () => {
  /** The text it has always given: JSON.stringify with a replacer writing an object's keys sorted when they are not. */
  const reference = (value: unknown) =>
    JSON.stringify(value, (_key, item: unknown) => {
      if (typeof item !== 'object' || item === null || Array.isArray(item)) return item;
      const keys = Object.keys(item);
      if (keys.every((key, i) => i === 0 || keys[i - 1]! <= key)) return item;
      // A `__proto__` own key is content: copied onto an object without a prototype, it stays a key.
      const copy = Object.create(null) as Record<string, unknown>;
      for (const key of keys.sort()) copy[key] = (item as Record<string, unknown>)[key];
      return copy;
    }) ?? 'null';

  test('is the text of JSON.stringify with keys sorted, for any value', () => {
    const options = { withBoxedValues: true, withMap: true, withSet: true, withObjectString: true, withNullPrototype: true, withDate: true, withTypedArray: true, withSparseArray: true };
    fc.assert(
      fc.property(fc.anything(options), (value) => {
        expect(canonicalJson(value)).toBe(reference(value));
      }),
      { numRuns: 2000 },
    );
  });

  test('orders keys as JSON.stringify does, index-like keys, unusual characters and a `__proto__` key included', () => {
    const withProtoKey = JSON.parse('{"__proto__":"a","":false,"1":true}') as unknown;
    for (const value of [{ b: 1, a: [2, { d: undefined, c: () => 0 }], 10: 'x', 9: 'y' }, { 'é': 1, e: 2, '"': 3, '\u2028': 4 }, { nested: { z: -0, y: Number.NaN, x: 1e21 } }, withProtoKey, { inner: withProtoKey }]) {
      expect(canonicalJson(value)).toBe(reference(value));
    }
    // A `__proto__` key JSON.parse made is content: it is written, as any other key.
    expect(canonicalJson(withProtoKey)).toBe('{"1":true,"":false,"__proto__":"a"}');
    expect(canonicalJson(JSON.parse('{"__proto__":"a","b":1}'))).toBe('{"__proto__":"a","b":1}');
  });
});
