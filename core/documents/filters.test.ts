import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { patientResourcesArb } from '../../spec/arbitraries/fhir.js';
import { isCoreError } from '../errors.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { filterResources, mainDateOf, resourceTypesOf } from './filters.js';

const r = (resourceType: string, id: string, fields: Record<string, unknown> = {}): FhirResource => ({ resourceType, id, ...fields });

describe('mainDateOf', () => {
  test('reads the main date of each kind of resource', () => {
    expect(mainDateOf(r('Observation', 'o', { effectiveDateTime: '2012-08-06T10:30:00-05:00', issued: '2012-08-07' }))).toBe('2012-08-06T10:30:00-05:00');
    expect(mainDateOf(r('Observation', 'o', { effectivePeriod: { start: '2011-01-01' } }))).toBe('2011-01-01');
    expect(mainDateOf(r('Condition', 'c', { onsetDateTime: '2010', recordedDate: '2012-01-01' }))).toBe('2010');
    expect(mainDateOf(r('Condition', 'c', { recordedDate: '2012-01-01' }))).toBe('2012-01-01');
    expect(mainDateOf(r('MedicationRequest', 'm', { authoredOn: '2013-03-03' }))).toBe('2013-03-03');
    expect(mainDateOf(r('Immunization', 'i', { occurrenceDateTime: '2014-10-01' }))).toBe('2014-10-01');
    expect(mainDateOf(r('Procedure', 'p', { performedPeriod: { start: '2015-05-05', end: '2015-05-06' } }))).toBe('2015-05-05');
    expect(mainDateOf(r('DiagnosticReport', 'd', { issued: '2016-06-06T00:00:00Z' }))).toBe('2016-06-06T00:00:00Z');
    expect(mainDateOf(r('Composition', 'c', { date: '2017-07-07' }))).toBe('2017-07-07');
    expect(mainDateOf(r('Encounter', 'e', { period: { start: '2018-08-08' } }))).toBe('2018-08-08');
    expect(mainDateOf(r('Patient', 'p', { birthDate: '1950-01-01' }))).toBeUndefined();
    expect(mainDateOf(r('Practitioner', 'x'))).toBeUndefined();
  });
});

describe('filterResources', () => {
  const resources = [
    r('Patient', 'p'),
    r('Condition', 'early', { onsetDateTime: '2012-08-05' }),
    r('Condition', 'day', { onsetDateTime: '2012-08-06T23:30:00-05:00' }),
    r('Observation', 'year', { effectiveDateTime: '2012' }),
    r('Observation', 'late', { effectiveDateTime: '2012-08-07' }),
    r('Medication', 'undated'),
  ];
  const ids = (list: FhirResource[]) => list.map((x) => x.id);

  test('resources: exact, case-sensitive names, blanks ignored, absent = all', () => {
    expect(ids(filterResources(resources, { resources: 'Condition, Medication,' }))).toEqual(['early', 'day', 'undated']);
    expect(ids(filterResources(resources, { resources: 'condition' }))).toEqual([]);
    expect(ids(filterResources(resources, { resources: ' , ' }))).toEqual(ids(resources));
    expect(ids(filterResources(resources, {}))).toEqual(ids(resources));
    expect(resourceTypesOf('A,B ,A')).toEqual(new Set(['A', 'B']));
  });

  test('dates: inclusive days, the day as written, partial dates cover their span, undated kept', () => {
    expect(ids(filterResources(resources, { dateFrom: '2012-08-06', dateTo: '2012-08-06' }))).toEqual(['p', 'day', 'year', 'undated']);
    expect(ids(filterResources(resources, { dateFrom: '2012-08-07' }))).toEqual(['p', 'year', 'late', 'undated']);
    expect(ids(filterResources(resources, { dateTo: '2012-08-05' }))).toEqual(['p', 'early', 'year', 'undated']);
    expect(ids(filterResources(resources, { dateFrom: '2013-01-01' }))).toEqual(['p', 'undated']);
  });

  test('invalid dates and reversed ranges are VALIDATION_FAILED', () => {
    for (const filters of [{ dateFrom: '2012-02-30' }, { dateTo: '2012-13-01' }, { dateFrom: '06/08/2012' }, { dateFrom: '2012-08-07', dateTo: '2012-08-06' }]) {
      let code: string | undefined;
      try {
        filterResources(resources, filters);
      } catch (error) {
        code = isCoreError(error) ? error.code : 'other';
      }
      expect(code).toBe('VALIDATION_FAILED');
    }
    expect(ids(filterResources(resources, { dateFrom: '2012-02-29' }))).toContain('late');
  });

  const day = fc.date({ min: new Date('2010-01-01T00:00:00Z'), max: new Date('2016-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));

  test('a wider range keeps a superset, in the same order; undated resources always pass', () => {
    fc.assert(
      fc.property(patientResourcesArb(), day, day, day, day, (list, a, b, c, d) => {
        const [from, to] = [a, b].sort() as [string, string];
        const [wideFrom, wideTo] = [[c, from].sort()[0]!, [d, to].sort()[1]!];
        const narrow = filterResources(list, { dateFrom: from, dateTo: to });
        const wide = filterResources(list, { dateFrom: wideFrom, dateTo: wideTo });
        expect(narrow.every((x) => wide.includes(x))).toBe(true);
        expect(wide.filter((x) => narrow.includes(x))).toEqual(narrow);
        for (const resource of list) if (mainDateOf(resource) === undefined) expect(narrow).toContain(resource);
      }),
      { numRuns: 100 },
    );
  });

  test('the types filter keeps exactly the resources of the named types', () => {
    fc.assert(
      fc.property(patientResourcesArb(), fc.subarray(['Patient', 'Condition', 'Observation', 'Encounter', 'Nope']), (list, names) => {
        const kept = filterResources(list, { resources: names.join(',') });
        if (names.length === 0) expect(kept).toEqual(list);
        else expect(kept).toEqual(list.filter((x) => names.includes(x.resourceType)));
      }),
      { numRuns: 100 },
    );
  });
});
