import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';
import {
  abatedConditionIsResolved,
  CVX,
  cvxSystem,
  emptyElementsPruned,
  impossibleDatesCutToValidPrecision,
  lotNumberIsText,
  practitionerQualification,
  repairConvertedResources,
  RXNORM,
  zonedTimestamps,
} from './repair.js';

/** FHIR R4's dateTime (a time needs its zone). */
const FHIR_DATE_TIME =
  /^([0-9]([0-9]([0-9][1-9]|[1-9]0)|[1-9]00)|[1-9]000)(-(0[1-9]|1[0-2])(-(0[1-9]|[1-2][0-9]|3[0-1])(T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]{1,9})?(Z|(\+|-)((0[0-9]|1[0-3]):[0-5][0-9]|14:00)))?)?)?$/;

/** Every string that looks like a date or a timestamp, wherever it sits in the resource. */
function datesIn(value: unknown, found: string[] = []): string[] {
  if (typeof value === 'string' && /^\d{4}-\d{2}(-\d{2})?(T|$)/.test(value)) found.push(value);
  else if (Array.isArray(value)) for (const item of value) datesIn(item, found);
  else if (value !== null && typeof value === 'object') for (const item of Object.values(value)) datesIn(item, found);
  return found;
}

const fixture = (name: string) => readFileSync(new URL(`../../sandbox-data/ccda/${name}`, import.meta.url), 'utf8');
const FIXTURES = ['ccd-1.xml', 'ccd-2.xml', 'care-plan.xml', 'consultation-note.xml', 'discharge-summary.xml', 'history-and-physical.xml', 'procedure-note.xml', 'progress-note.xml'];

describe('repair rules', () => {
  test('CVX code system: vaccine codes get the FHIR CVX URI; other codings of the vaccine stay', () => {
    const immunization: FhirResource = {
      resourceType: 'Immunization',
      id: 'i',
      vaccineCode: { coding: [{ system: 'http://nucc.org/cvx', code: '88' }, { system: RXNORM, code: '1' }] },
    };
    expect(cvxSystem.apply(immunization)).toBe(true);
    expect((immunization.vaccineCode as { coding: { system: string }[] }).coding.map((c) => c.system)).toEqual([CVX, RXNORM]);
    expect(cvxSystem.apply(immunization)).toBe(false);
  });

  test('zoned timestamps: the converter’s `11:30:-0500` becomes `11:30:00-05:00`; seconds are kept; valid dates are untouched', () => {
    const observation: FhirResource = {
      resourceType: 'Observation',
      id: 'o',
      effectivePeriod: { start: '2012-09-25T11:30:-0500', end: '2012-09-25T11:45:30+0130' },
      issued: '2012-09-25T12:00:00Z',
      note: [{ text: 'taken 2012-09-25' }],
    };
    expect(zonedTimestamps.apply(observation)).toBe(true);
    expect(observation.effectivePeriod).toEqual({ start: '2012-09-25T11:30:00-05:00', end: '2012-09-25T11:45:30+01:30' });
    expect(observation.issued).toBe('2012-09-25T12:00:00Z');
    expect(zonedTimestamps.apply(observation)).toBe(false);
  });

  test('impossible dates are cut back to the precision that is valid; valid ones and other text stay', () => {
    const observation: FhirResource = { resourceType: 'Observation', id: 'o', effectiveDateTime: '2001-30-31T00:00:00Z', issued: '2014-02-32', note: [{ text: '2001-30-31 is not a date' }], valueString: '2013-07-03' };
    expect(impossibleDatesCutToValidPrecision.apply(observation)).toBe(true);
    expect(observation.effectiveDateTime).toBe('2001');
    expect(observation.issued).toBe('2014-02');
    expect(observation.note).toEqual([{ text: '2001-30-31 is not a date' }]);
    expect(observation.valueString).toBe('2013-07-03');
    expect(impossibleDatesCutToValidPrecision.apply(observation)).toBe(false);
  });

  test('abated condition resolved: a Condition with an end is resolved; one without stays as it was', () => {
    const over: FhirResource = { resourceType: 'Condition', id: 'c1', clinicalStatus: { coding: [{ code: 'active' }] }, abatementDateTime: '1998-03-16' };
    const current: FhirResource = { resourceType: 'Condition', id: 'c2', clinicalStatus: { coding: [{ code: 'active' }] }, onsetDateTime: '2007-04-14' };
    expect(abatedConditionIsResolved.apply(over)).toBe(true);
    expect(JSON.stringify(over.clinicalStatus)).toContain('"resolved"');
    expect(abatedConditionIsResolved.apply(over)).toBe(false);
    expect(abatedConditionIsResolved.apply(current)).toBe(false);
    expect(JSON.stringify(current.clinicalStatus)).toContain('"active"');
  });

  test('date rules in a row share one walk, with the same outcome and counts as one after the other', () => {
    const make = (): FhirResource[] => [
      { resourceType: 'Observation', id: 'a', effectiveDateTime: '2012-09-25T11:30:-0500', issued: '2001-30-31T00:00:00Z' },
      { resourceType: 'Observation', id: 'b', effectiveDateTime: '2012-09-25', note: [{ text: '2012-13-01 is text' }] },
      { resourceType: 'Condition', id: 'c', onsetDateTime: '2014-13-01T10:00:-0500' },
    ];
    const together = make();
    const counts = repairConvertedResources(together, [zonedTimestamps, impossibleDatesCutToValidPrecision]);
    const apart = make();
    const apartCounts = { 'zoned timestamps': 0, 'impossible dates': 0 };
    for (const resource of apart) {
      if (zonedTimestamps.apply(resource)) apartCounts['zoned timestamps']++;
      if (impossibleDatesCutToValidPrecision.apply(resource)) apartCounts['impossible dates']++;
    }
    expect(together).toEqual(apart);
    expect(counts).toEqual(apartCounts);
    expect(together[2]!.onsetDateTime).toBe('2014');
    expect(counts).toEqual({ 'zoned timestamps': 2, 'impossible dates': 2 });
  });

  test('practitioner qualification: the converter’s bare concept becomes the qualification’s code', () => {
    const nurse: FhirResource = { resourceType: 'Practitioner', id: 'p', qualification: [{ coding: [{ code: '163W00000X' }], text: 'RN' }, { code: { text: 'MD' } }] };
    expect(practitionerQualification.apply(nurse)).toBe(true);
    expect(nurse.qualification).toEqual([{ code: { coding: [{ code: '163W00000X' }], text: 'RN' } }, { code: { text: 'MD' } }]);
    expect(practitionerQualification.apply(nurse)).toBe(false);
  });

  test('lot number is text: a parsed element keeps its text, a null-flavored one goes', () => {
    const unknown: FhirResource = { resourceType: 'Immunization', id: 'u', lotNumber: { '@_nullFlavor': 'UNK' } };
    const written: FhirResource = { resourceType: 'Immunization', id: 'w', lotNumber: { '#text': ' 1 ' } };
    const plain: FhirResource = { resourceType: 'Immunization', id: 'p', lotNumber: 'A1' };
    expect([unknown, written, plain].map((r) => lotNumberIsText.apply(r))).toEqual([true, true, false]);
    expect([unknown.lotNumber, written.lotNumber, plain.lotNumber]).toEqual([undefined, '1', 'A1']);
  });

  test('empty elements pruned at any depth; zeros, false and content stay', () => {
    const goal: FhirResource = {
      resourceType: 'Goal',
      id: 'g',
      target: [{ measure: { coding: [{}] } }, { dueDate: '2013' }],
      description: { text: '' , coding: [{ code: 'x' }] },
      extension: [],
      priority: { coding: [{ system: 's', code: '0' }] },
      count: 0,
      flag: false,
    };
    expect(emptyElementsPruned.apply(goal)).toBe(true);
    expect(goal).toEqual({ resourceType: 'Goal', id: 'g', target: [{ dueDate: '2013' }], description: { coding: [{ code: 'x' }] }, priority: { coding: [{ system: 's', code: '0' }] }, count: 0, flag: false });
    expect(emptyElementsPruned.apply(goal)).toBe(false);
  });

  test('on the sandbox documents: every date is a valid FHIR dateTime, and no abated problem is active', async () => {
    const converter = new MedplumCcdaConverter();
    let dates = 0;
    for (const name of FIXTURES) {
      for (const entry of (await converter.convert(fixture(name))).entry ?? []) {
        const resource = entry.resource!;
        for (const date of datesIn(resource)) {
          dates++;
          expect(date, `${name} ${resource.resourceType}/${resource.id}`).toMatch(FHIR_DATE_TIME);
        }
        if (resource.resourceType === 'Condition' && resource.abatementDateTime !== undefined) {
          expect(JSON.stringify(resource.clinicalStatus)).toContain('"resolved"');
        }
      }
    }
    expect(dates).toBeGreaterThan(200);
  });

  test('on the sandbox documents: no drug allergy filed under food, no vaccine under the converter’s CVX URI', async () => {
    const converter = new MedplumCcdaConverter();
    let allergies = 0;
    let vaccines = 0;
    for (const name of FIXTURES) {
      const resources = ((await converter.convert(fixture(name))).entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
      for (const resource of resources) {
        if (resource.resourceType === 'AllergyIntolerance') {
          allergies++;
          const drug = JSON.stringify(resource.code).includes(RXNORM);
          if (drug) expect(resource.category, `${name} ${resource.id}`).toEqual(['medication']);
        }
        if (resource.resourceType === 'Immunization') {
          vaccines++;
          expect(JSON.stringify(resource.vaccineCode)).not.toContain('nucc.org/cvx');
        }
      }
    }
    expect(allergies).toBeGreaterThan(10);
    expect(vaccines).toBeGreaterThan(5);
  });
});

describe('parser artefacts', () => {
  test('an XML element copied through becomes its text or nothing; attribute keys go, at any depth', async () => {
    const { emptyElementsPruned } = await import('./repair.js');
    const patient: FhirResource = {
      resourceType: 'Patient',
      id: 'p',
      address: [{ line: ['1 Main St'], city: { '@_nullFlavor': 'UNK' }, state: { '#text': 'OR', '@_xsi:type': 'ST' } }],
      name: [{ family: 'Doe', '@_use': 'L' }],
    };
    expect(emptyElementsPruned.apply(patient)).toBe(true);
    expect(patient).toEqual({ resourceType: 'Patient', id: 'p', address: [{ line: ['1 Main St'], state: 'OR' }], name: [{ family: 'Doe' }] });
    const composition: FhirResource = { resourceType: 'Composition', id: 'c', title: { '#text': 'Summary', '@_xsi:type': 'ST' } };
    emptyElementsPruned.apply(composition);
    expect(composition.title).toBe('Summary');
  });
});
