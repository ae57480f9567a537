import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { baseName, renderName } from '../../spec/arbitraries/demographics.js';
import { foldName, nameList, splitNames } from './normalise.js';

describe('foldName', () => {
  test('lower-cases, folds accents, drops punctuation, collapses whitespace', () => {
    expect(foldName('José')).toBe('jose');
    expect(foldName('  ÀNNE   Marie ')).toBe('anne marie');
    expect(foldName("O'Brien")).toBe('obrien');
    expect(foldName('Smith-Jones')).toBe('smithjones');
    expect(foldName('Nguyễn')).toBe('nguyen');
    expect(foldName('Zoë')).toBe(foldName('ZOE'));
  });

  test('letters NFD keeps whole fold to their base letters', () => {
    expect(foldName('Łukasz')).toBe('lukasz');
    expect(foldName('Ødegaard')).toBe('odegaard');
    expect(foldName('STRAẞE')).toBe('strasse');
    expect(foldName('Straße')).toBe('strasse');
    expect(foldName('Æsa')).toBe('aesa');
  });

  test('keeps letters of any script and digits; punctuation alone folds to nothing', () => {
    expect(foldName('李')).toBe('李');
    expect(foldName('Ωμέγα')).toBe('ωμεγα');
    expect(foldName('John 3rd')).toBe('john 3rd');
    expect(foldName(".-'")).toBe('');
  });

  test('property: a rendering of a base name (case, accents) folds back to the base', () => {
    fc.assert(fc.property(baseName.chain((base) => renderName(base).map((rendered) => [base, rendered] as const)), ([base, rendered]) => {
      expect(foldName(rendered)).toBe(base);
    }), { numRuns: 300 });
  });

  test('property: folding is idempotent', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 20 }), (s) => {
      expect(foldName(foldName(s))).toBe(foldName(s));
    }), { numRuns: 300 });
  });
});

describe('splitNames and nameList', () => {
  test('commas and whitespace both separate names', () => {
    expect(splitNames('A,B')).toEqual(['A', 'B']);
    expect(splitNames('A B')).toEqual(['A', 'B']);
    expect(splitNames(' A , B\tC ')).toEqual(['A', 'B', 'C']);
    expect(splitNames('')).toEqual([]);
    expect(splitNames(' , ')).toEqual([]);
  });

  test('nameList folds, drops empty and duplicate names', () => {
    expect(nameList('Anne, ANNE,Marie')).toEqual(['anne', 'marie']);
    expect(nameList("José - O'Brien")).toEqual(['jose', 'obrien']);
    expect(nameList(', -')).toEqual([]);
  });
});
