import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  demographics,
  demographicsPair,
  difference,
  differingIn,
  personModel,
  render,
  samePersonAs,
} from '../../spec/arbitraries/demographics.js';
import type { Patient } from '../domain/types.js';
import { decideMatch, demographicsOfPatient, demographicsOfRow, isSamePerson, type Demographics, type MatchCandidate } from './decide.js';

const ANNE: Demographics = { firstName: 'Anne Marie', lastName: 'Smith', dob: '1980-02-29', genderAtBirth: 'F', zips: ['62704'] };

describe('isSamePerson', () => {
  test('names compare case-insensitively with accents folded; lists match on one shared name', () => {
    expect(isSamePerson(ANNE, { ...ANNE, firstName: 'MARIE' })).toBe(true);
    expect(isSamePerson(ANNE, { ...ANNE, firstName: 'Ánne,Louise', lastName: 'smith' })).toBe(true);
    expect(isSamePerson(ANNE, { ...ANNE, lastName: 'Smith-Jones' })).toBe(false);
    expect(isSamePerson(ANNE, { ...ANNE, firstName: 'Louise' })).toBe(false);
  });

  test('needs the same dob and gender, and one shared zip (ZIP+4 compares by its 5 digits)', () => {
    expect(isSamePerson(ANNE, { ...ANNE, zips: ['10001', '62704-1234'] })).toBe(true);
    expect(isSamePerson(ANNE, { ...ANNE, dob: '1980-02-28' })).toBe(false);
    expect(isSamePerson(ANNE, { ...ANNE, genderAtBirth: 'U' })).toBe(false);
    expect(isSamePerson(ANNE, { ...ANNE, zips: ['62705'] })).toBe(false);
    expect(isSamePerson(ANNE, { ...ANNE, zips: [] })).toBe(false);
  });

  test('property: symmetric', () => {
    const pairs = fc.oneof(
      demographicsPair.map(({ a, b }) => [a, b] as const),
      fc.tuple(demographics, demographics),
    );
    fc.assert(fc.property(pairs, ([a, b]) => {
      expect(isSamePerson(a, b)).toBe(isSamePerson(b, a));
    }), { numRuns: 300 });
  });

  test('property: the same person written differently matches; one shared name and zip suffice', () => {
    fc.assert(
      fc.property(
        personModel.chain((model) => fc.tuple(render(model), samePersonAs(model).chain(render))),
        ([a, b]) => {
          expect(isSamePerson(a, b)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('property: never matches people differing in dob, gender, all zips, all first or all last names', () => {
    fc.assert(
      fc.property(
        personModel.chain((model) => difference.chain((d) => fc.tuple(render(model), differingIn(model, d).chain(render), fc.constant(d)))),
        ([a, b]) => {
          expect(isSamePerson(a, b)).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('decideMatch', () => {
  const candidate = (id: string, d: Demographics): MatchCandidate => ({ ...d, id });

  test('created, updated or ambiguous by the number of matching candidates', () => {
    const other = candidate('p-2', { ...ANNE, dob: '1990-01-01' });
    expect(decideMatch(ANNE, [])).toEqual({ kind: 'created' });
    expect(decideMatch(ANNE, [other])).toEqual({ kind: 'created' });
    expect(decideMatch(ANNE, [other, candidate('p-1', ANNE)])).toEqual({ kind: 'updated', patientId: 'p-1' });
    expect(decideMatch(ANNE, [candidate('p-1', ANNE), candidate('p-1', ANNE)])).toEqual({ kind: 'updated', patientId: 'p-1' });
    expect(decideMatch(ANNE, [candidate('p-1', ANNE), other, candidate('p-3', { ...ANNE, firstName: 'anne' })])).toEqual({ kind: 'ambiguous', count: 2 });
  });

  test('property: the decision follows the count of candidates that are the same person', () => {
    const scenario = personModel.chain((model) =>
      fc.record({
        row: render(model),
        matching: fc.array(samePersonAs(model).chain(render), { maxLength: 3 }),
        others: fc.array(difference.chain((d) => differingIn(model, d)).chain(render), { maxLength: 4 }),
      }),
    ).chain(({ row, matching, others }) => {
      const candidates = [
        ...matching.map((d, i) => ({ ...d, id: `match-${i}` })),
        ...others.map((d, i) => ({ ...d, id: `other-${i}` })),
      ];
      return fc.shuffledSubarray(candidates, { minLength: candidates.length }).map((shuffled) => ({ row, candidates: shuffled, matches: matching.length }));
    });
    fc.assert(
      fc.property(scenario, ({ row, candidates, matches }) => {
        const decision = decideMatch(row, candidates);
        if (matches === 0) expect(decision).toEqual({ kind: 'created' });
        else if (matches === 1) expect(decision).toEqual({ kind: 'updated', patientId: 'match-0' });
        else expect(decision).toEqual({ kind: 'ambiguous', count: matches });
      }),
      { numRuns: 200 },
    );
  });
});

describe('demographics of records', () => {
  test('a patient gives its names, dob, gender and the zips of its addresses', () => {
    const address = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', country: 'USA' };
    const patient: Patient = {
      id: 'p-1',
      accountId: 'a-1',
      facilityIds: [],
      cohortIds: [],
      firstName: 'Anne Marie',
      lastName: 'Smith',
      dob: '1980-02-29',
      genderAtBirth: 'F',
      address: [{ ...address, zip: '62704' }, { ...address, zip: '10001' }],
      contact: [],
      personalIdentifiers: [],
      hieOptOut: false,
      matchKeys: [],
      version: 1,
      createdAt: '2025-01-01T00:00:00.000Z',
      updatedAt: '2025-01-01T00:00:00.000Z',
    };
    expect(demographicsOfPatient(patient)).toEqual({ ...ANNE, id: 'p-1', zips: ['62704', '10001'] });
    expect(decideMatch(ANNE, [demographicsOfPatient(patient)])).toEqual({ kind: 'updated', patientId: 'p-1' });
  });

  test('a parsed row gives its names, dob, gender and zips', () => {
    const d = demographicsOfRow({
      firstName: 'Anne Marie',
      lastName: 'Smith',
      firstNames: ['Anne', 'Marie'],
      lastNames: ['Smith'],
      dob: '1980-02-29',
      gender: 'F',
      addresses: [{ addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62704', country: 'USA' }],
      phones: [],
      emails: [],
      cohortIds: [],
    });
    expect(d).toEqual(ANNE);
  });
});
