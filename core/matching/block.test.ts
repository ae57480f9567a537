import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { demographicsPair } from '../../spec/arbitraries/demographics.js';
import { differentByOneUnit, nameModel, renderModel } from '../../spec/arbitraries/scripts.js';
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

  test('keys fold last names as matching does: vowel signs count, full width and invisible characters do not', () => {
    const keys = (lastName: string) => matchKeysFor({ lastName, dob: '1990-04-02', genderAtBirth: 'F' });
    expect(keys('राम')).not.toEqual(keys('रमा'));
    expect(keys('Ｄｏｅ')).toEqual(keys('Doe'));
    expect(keys('Do\u200be')).toEqual(keys('DOE'));
  });

  test('property: one last name in any script, however written, gives one key; a name one letter off another', () => {
    fc.assert(
      fc.property(
        nameModel.chain((model) => fc.tuple(renderModel(model), renderModel(model), differentByOneUnit(model).chain(renderModel))),
        ([a, b, other]) => {
          const keys = (lastName: string) => matchKeysFor({ lastName, dob: '1990-04-02', genderAtBirth: 'F' });
          expect(keys(a.text)).toEqual(keys(b.text));
          expect(keys(a.text)).not.toEqual(keys(other.text));
        },
      ),
      { numRuns: 500 },
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
