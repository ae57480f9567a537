import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { baseName, renderName } from '../../spec/arbitraries/demographics.js';
import { differentByOneUnit, nameModel, renderModel } from '../../spec/arbitraries/scripts.js';
import { isSamePerson, type Demographics } from './decide.js';
import { foldName, foldNameSlowly, nameList, splitNames, splitNamesSlowly } from './normalise.js';

describe('foldName', () => {
  test('lower-cases, folds accents, drops punctuation and whitespace', () => {
    expect(foldName('José')).toBe('jose');
    // Names are split at whitespace before they are folded (nameList): only a space NFKC makes is left here.
    expect(foldName('  ÀNNE   Marie ')).toBe('annemarie');
    expect(foldName('Jos´e')).toBe('jose');
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
    expect(foldName('John 3rd')).toBe('john3rd');
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

describe('names in every script', () => {
  const person = (firstName: string): Demographics => ({ firstName, lastName: 'Sharma', dob: '1990-04-02', genderAtBirth: 'F', zips: ['10001'] });

  test('vowel signs and other marks that are letters count: different names never fold alike', () => {
    // Rām, Ramā, Romī: one consonant skeleton, different vowels.
    expect(new Set(['राम', 'रमा', 'रोमी'].map(foldName)).size).toBe(3);
    // Satī and Sītā
    expect(foldName('सती')).not.toBe(foldName('सीता'));
    expect(isSamePerson(person('राम'), person('रमा'))).toBe(false);
    expect(isSamePerson(person('राम'), person('रोमी'))).toBe(false);
    // Bengali, Tamil, Thai (a tone mark), Hebrew (niqqud), Arabic (harakat), kana (a voicing mark)
    expect(foldName('কমল')).not.toBe(foldName('কমলা'));
    expect(foldName('கமலா')).not.toBe(foldName('கமல'));
    expect(foldName('ไก่')).not.toBe(foldName('ไก้'));
    expect(foldName('דָּוִד')).not.toBe(foldName('דֹּוִד'));
    expect(foldName('مُحَمَّد')).not.toBe(foldName('مَحَمَّد'));
    expect(foldName('かな')).not.toBe(foldName('がな'));
  });

  test('the same name written differently folds alike: NFC or NFD, case, full width, invisible characters', () => {
    expect(foldName('José')).toBe(foldName('Jose\u0301'));
    expect(foldName('José')).toBe('jose');
    expect(foldName('Ｊａｎｅ')).toBe('jane');
    expect(isSamePerson({ ...person('Ｊａｎｅ'), lastName: 'Ｄｏｅ' }, { ...person('Jane'), lastName: 'Doe' })).toBe(true);
    expect(foldName('Ja\u200bne')).toBe('jane');
    expect(nameList('Ja\ufeffne')).toEqual(['jane']);
    expect(foldName('ﬁona')).toBe('fiona');
    expect(foldName('রো'.normalize('NFD'))).toBe(foldName('রো'));
    expect(foldName('ΟΔΥΣΣΕΥΣ')).toBe(foldName('Οδυσσευσ'));
    expect(foldName('राम')).toBe(foldName('रा\u200dम'));
  });

  test('property: renderings of one name in any script fold alike, and match', () => {
    fc.assert(
      fc.property(nameModel.chain((model) => fc.tuple(renderModel(model), renderModel(model))), ([a, b]) => {
        expect(foldName(a.text), `${JSON.stringify(a)} ${JSON.stringify(b)}`).toBe(foldName(b.text));
        expect(nameList(a.text)).toEqual(nameList(b.text));
        expect(isSamePerson(person(a.text), person(b.text))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  test('property: names differing in one letter (a vowel sign, a tone mark, a dot) never match, however written', () => {
    fc.assert(
      fc.property(
        nameModel.chain((model) => fc.tuple(renderModel(model), differentByOneUnit(model).chain(renderModel))),
        ([a, b]) => {
          expect(foldName(a.text), `${JSON.stringify(a)} ${JSON.stringify(b)}`).not.toBe(foldName(b.text));
          expect(nameList(a.text).some((name) => nameList(b.text).includes(name))).toBe(false);
          expect(isSamePerson(person(a.text), person(b.text))).toBe(false);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('splitNames and nameList', () => {
  test('commas and whitespace both separate names', () => {
    expect(splitNames('A,B')).toEqual(['A', 'B']);
    expect(splitNames('A B')).toEqual(['A', 'B']);
    expect(splitNames(' A , B\tC ')).toEqual(['A', 'B', 'C']);
    expect(splitNames('')).toEqual([]);
    expect(splitNames(' , ')).toEqual([]);
    expect(splitNames('Ja\ufeffne Doe')).toEqual(['Ja\ufeffne', 'Doe']);
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
    '´', '¨', '¸', '˜', 'Ｊ', 'र', '\u093e', '\u0903', '\u05b8', 'ש', '\u200d', '\ufeff', '\u0345', 'ᾳ', '가',
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
