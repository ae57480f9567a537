import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { demographicsPair } from '../../spec/arbitraries/demographics.js';
import { matchKeysFor } from './block.js';
import { isSamePerson } from './decide.js';

describe('matchKeysFor', () => {
  test('one key per folded last name: dob|gender|name', () => {
    expect(matchKeysFor({ lastName: 'García López', dob: '1980-02-29', genderAtBirth: 'F' })).toEqual([
      '1980-02-29|F|garcia',
      '1980-02-29|F|lopez',
    ]);
    expect(matchKeysFor({ lastName: 'SMITH, smith', dob: '1980-02-29', genderAtBirth: 'M' })).toEqual(['1980-02-29|M|smith']);
  });

  test('property: the same person always shares a key (blocking never misses a match)', () => {
    fc.assert(
      fc.property(demographicsPair, ({ a, b }) => {
        if (!isSamePerson(a, b)) return;
        const keysOfB = matchKeysFor(b);
        expect(matchKeysFor(a).some((key) => keysOfB.includes(key))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  test('property: keys differ when dob or gender differ', () => {
    fc.assert(
      fc.property(demographicsPair, ({ a, b }) => {
        if (a.dob === b.dob && a.genderAtBirth === b.genderAtBirth) return;
        const keysOfB = matchKeysFor(b);
        expect(matchKeysFor(a).some((key) => keysOfB.includes(key))).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
