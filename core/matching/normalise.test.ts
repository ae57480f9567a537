import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { baseName, renderName } from '../../spec/arbitraries/demographics.js';
import { foldName, foldNameSlowly, nameList, splitNames, splitNamesSlowly } from './normalise.js';

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

describe('fast paths agree with the rules as written', () => {
  // Latin letters with and without accents, the special ones, punctuation, whitespace of every kind,
  // combining marks, letters of other scripts and astral characters: every branch of the fast paths.
  const tricky = fc.constantFrom(
    'a', 'Z', '0', ' ', '\t', '\n', '\u00a0', '\u2003', '\u3000', '\ufeff', ',', "'", '-', '.', 'é', 'É', 'ß', 'ẞ', 'Ł', 'ø', 'Æ', 'œ',
    'İ', 'ı', 'ǅ', 'ǈ', 'ʰ', '\u0301', '\u0308', 'Σ', 'ς', 'ἄ', '李', '😀', '\ud800', 'ﬁ', 'Ⅻ', '²', '½', '\u00ad', '\u200b',
  );
  const latin = fc.string({ unit: fc.integer({ min: 0, max: 0x2ff }).map((code) => String.fromCharCode(code)), maxLength: 12 });
  const mixed = fc.string({ unit: fc.oneof(tricky, fc.constantFrom('a', 'b', 'O')), maxLength: 12 });
  const anything = fc.oneof(latin, mixed, fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 8 }));

  test('property: foldName equals the slow path', () => {
    fc.assert(fc.property(anything, (s) => {
      expect(foldName(s)).toBe(foldNameSlowly(s));
    }), { numRuns: 3_000 });
  });

  test('every character below U+0300 folds as the slow path folds it, alone and between letters', () => {
    for (let code = 0; code < 0x300; code++) {
      const char = String.fromCharCode(code);
      for (const s of [char, `A${char}b`, `${char} ${char}`, `x${char}${char}Y`]) expect(foldName(s), `U+${code.toString(16)}`).toBe(foldNameSlowly(s));
    }
  });

  test('property: splitNames equals a split on commas and whitespace', () => {
    fc.assert(fc.property(anything, (s) => {
      expect(splitNames(s)).toEqual(splitNamesSlowly(s));
    }), { numRuns: 3_000 });
  });
});
