import fc from 'fast-check';
import type { Gender } from '../../core/domain/types.js';
import type { Demographics } from '../../core/matching/decide.js';

/**
 * Demographics generators for matching properties. Names are modelled as plain ASCII bases rendered with
 * random case and accents, so two renderings of one model are the same person by construction, not by
 * calling the folding code under test.
 */

export const GENDERS: readonly Gender[] = ['M', 'F', 'O', 'U'];

/** Letters that NFD decomposes into the base letter plus combining marks. */
const ACCENTED: Readonly<Record<string, readonly string[]>> = {
  a: ['á', 'à', 'â', 'ä', 'ã', 'å'],
  e: ['é', 'è', 'ê', 'ë'],
  i: ['í', 'ì', 'î', 'ï'],
  o: ['ó', 'ò', 'ô', 'ö', 'õ'],
  u: ['ú', 'ù', 'û', 'ü'],
  n: ['ñ'],
  c: ['ç'],
  y: ['ý', 'ÿ'],
};

const BASE_NAMES = [
  'Anne', 'Marie', 'Jose', 'Rene', 'Zoe', 'Nunez', 'Garcia', 'Muller', 'Smith', 'Francois', 'Helene',
  'Chloe', 'Jean', 'Luc', 'Nguyen', 'Li', 'Johnson', 'Ana', 'Maria', 'Lopez', 'Cruz', 'Bjorn', 'Kowalski',
] as const;

/** A name as a model: lower-case ASCII letters, at least 2 of them. */
export const baseName: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...BASE_NAMES).map((name) => name.toLowerCase()) },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-z]{2,10}$/) },
);

/** A rendering of a base name: each letter in random case, accentable letters randomly accented. */
export function renderName(base: string): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.array(fc.boolean(), { minLength: base.length, maxLength: base.length }),
      // 0 keeps the plain letter, 1.. picks an accented form when the letter has some
      fc.array(fc.nat(4), { minLength: base.length, maxLength: base.length }),
      fc.boolean(),
    )
    .map(([upper, accent, capitalised]) =>
      [...base]
        .map((letter, i) => {
          const accents = ACCENTED[letter];
          const pick = accent[i]!;
          const shaped = accents !== undefined && pick > 0 ? accents[(pick - 1) % accents.length]! : letter;
          const wantUpper = capitalised ? i === 0 : upper[i]!;
          return wantUpper ? shaped.toUpperCase() : shaped;
        })
        .join(''),
    );
}

/** How names of one field are separated in a cell (commas or spaces). */
export const nameSeparator: fc.Arbitrary<string> = fc.constantFrom(' ', ',', ', ', ' ,', '  ', ' , ');

/** A name field rendered from its base names. */
export function renderNameField(bases: readonly string[]): fc.Arbitrary<string> {
  return fc
    .tuple(fc.tuple(...bases.map(renderName)), fc.array(nameSeparator, { minLength: bases.length, maxLength: bases.length }))
    .map(([names, separators]) => names.reduce((text, name, i) => (i === 0 ? name : text + separators[i]! + name), ''));
}

export const nameBases: fc.Arbitrary<string[]> = fc.uniqueArray(baseName, { minLength: 1, maxLength: 3 });

/** Days since 1900-01-01 as YYYY-MM-DD, between 1900-01-01 and `today`. */
export function dobUpTo(today: string): fc.Arbitrary<string> {
  const start = Date.UTC(1900, 0, 1);
  const maxDays = Math.floor((Date.parse(`${today}T00:00:00Z`) - start) / 86_400_000);
  return fc.integer({ min: 0, max: maxDays }).map((days) => new Date(start + days * 86_400_000).toISOString().slice(0, 10));
}

export const zip: fc.Arbitrary<string> = fc.stringMatching(/^\d{5}$/);

/** The model of a person, from which equal or differing demographics are rendered. */
export interface PersonModel {
  firstNames: string[];
  lastNames: string[];
  dob: string;
  genderAtBirth: Gender;
  zips: string[];
}

export const ARBITRARY_TODAY = '2025-06-30';

export const personModel: fc.Arbitrary<PersonModel> = fc.record({
  firstNames: nameBases,
  lastNames: nameBases,
  dob: dobUpTo(ARBITRARY_TODAY),
  genderAtBirth: fc.constantFrom(...GENDERS),
  zips: fc.uniqueArray(zip, { minLength: 1, maxLength: 3 }),
});

/** Demographics of a model exactly (names rendered with random case, accents and separators). */
export function render(model: PersonModel): fc.Arbitrary<Demographics> {
  return fc
    .tuple(renderNameField(model.firstNames), renderNameField(model.lastNames))
    .map(([firstName, lastName]) => ({ firstName, lastName, dob: model.dob, genderAtBirth: model.genderAtBirth, zips: model.zips }));
}

export const demographics: fc.Arbitrary<Demographics> = personModel.chain(render);

/** A sub-list keeping at least one element, plus extra elements not in `keep`. */
function overlapping<T>(items: readonly T[], extra: fc.Arbitrary<T>): fc.Arbitrary<T[]> {
  return fc
    .tuple(fc.subarray([...items], { minLength: 1 }), fc.array(extra, { maxLength: 2 }))
    .map(([kept, added]) => [...kept, ...added.filter((x) => !items.includes(x))]);
}

/**
 * The same person seen in another row: each name list keeps at least one name and may gain others,
 * at least one zip is kept; dob and gender are the same.
 */
export function samePersonAs(model: PersonModel): fc.Arbitrary<PersonModel> {
  return fc
    .tuple(overlapping(model.firstNames, baseName), overlapping(model.lastNames, baseName), overlapping(model.zips, zip))
    .chain(([firstNames, lastNames, zips]) => fc.tuple(fc.shuffledSubarray(firstNames, { minLength: firstNames.length }), fc.shuffledSubarray(lastNames, { minLength: lastNames.length }), fc.shuffledSubarray(zips, { minLength: zips.length })))
    .map(([firstNames, lastNames, zips]) => ({ ...model, firstNames, lastNames, zips }));
}

export type Difference = 'dob' | 'genderAtBirth' | 'zips' | 'firstNames' | 'lastNames';

/** A model like `model` in everything but `difference`, where it shares nothing with it. */
export function differingIn(model: PersonModel, difference: Difference): fc.Arbitrary<PersonModel> {
  return samePersonAs(model).chain((same) => {
    switch (difference) {
      case 'dob':
        return dobUpTo(ARBITRARY_TODAY)
          .filter((dob) => dob !== model.dob)
          .map((dob) => ({ ...same, dob }));
      case 'genderAtBirth':
        return fc.constantFrom(...GENDERS.filter((g) => g !== model.genderAtBirth)).map((genderAtBirth) => ({ ...same, genderAtBirth }));
      case 'zips':
        return fc.uniqueArray(zip.filter((z) => !model.zips.includes(z)), { minLength: 1, maxLength: 3 }).map((zips) => ({ ...same, zips }));
      case 'firstNames':
      case 'lastNames':
        return fc
          .uniqueArray(baseName.filter((n) => !model[difference].includes(n)), { minLength: 1, maxLength: 3 })
          .map((names) => ({ ...same, [difference]: names }));
    }
  });
}

export const difference: fc.Arbitrary<Difference> = fc.constantFrom('dob', 'genderAtBirth', 'zips', 'firstNames', 'lastNames');

/**
 * Pairs of demographics of every kind (same person, differing in one field, unrelated) with whether they
 * are the same person by construction.
 */
export const demographicsPair: fc.Arbitrary<{ a: Demographics; b: Demographics; same: boolean }> = personModel.chain((model) =>
  fc.oneof(
    samePersonAs(model).chain((other) => fc.tuple(render(model), render(other)).map(([a, b]) => ({ a, b, same: true }))),
    difference.chain((d) => differingIn(model, d)).chain((other) => fc.tuple(render(model), render(other)).map(([a, b]) => ({ a, b, same: false }))),
  ),
);
