/**
 * Name normalisation for demographic matching (DESIGN: names compare case-insensitively, with accents
 * folded and whitespace collapsed; two lists match when they share at least one name).
 */

/** Commas and whitespace both separate names (PRODUCT: `A,B` and `A B` both mean the list A, B). */
const NAME_SEPARATORS = /[\s,]+/u;
const COMBINING_MARKS = /\p{M}+/gu;
const NOT_LETTER_DIGIT_OR_SPACE = /[^\p{L}\p{N}\s]+/gu;
const WHITESPACE_RUNS = /\s+/gu;
const NEEDS_LETTER_FOLDING = /[łøßæœđðþı]/u;

/**
 * Letters NFD does not decompose into a base letter plus a mark; without this `Łukasz` would never
 * meet `Lukasz`, while `José` meets `Jose`.
 */
const LETTER_FOLDS: Readonly<Record<string, string>> = {
  ł: 'l',
  ø: 'o',
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ı: 'i',
};
const FOLDABLE_LETTERS = /[łøßæœđðþı]/gu;

/**
 * The form two names are compared in: lower case, accents folded, punctuation dropped (`O'Brien` ->
 * `obrien`), whitespace collapsed to single spaces and trimmed. May return `''` for pure punctuation.
 */
export function foldName(s: string): string {
  let folded = s.normalize('NFD').replace(COMBINING_MARKS, '').toLowerCase();
  if (NEEDS_LETTER_FOLDING.test(folded)) folded = folded.replace(FOLDABLE_LETTERS, (letter) => LETTER_FOLDS[letter] ?? letter);
  return folded.replace(NOT_LETTER_DIGIT_OR_SPACE, '').replace(WHITESPACE_RUNS, ' ').trim();
}

/** The names of a name field as written (commas and whitespace separate them), empty parts dropped. */
export function splitNames(s: string): string[] {
  const names = s.split(NAME_SEPARATORS);
  // split leaves '' at either end when the text starts or ends with a separator
  if (names.length > 0 && names[0] === '') names.shift();
  if (names.length > 0 && names[names.length - 1] === '') names.pop();
  return names;
}

/** The folded names of a name field, without duplicates and without names that fold to nothing. */
export function nameList(s: string): string[] {
  const folded: string[] = [];
  for (const name of splitNames(s)) {
    const f = foldName(name);
    if (f !== '' && !folded.includes(f)) folded.push(f);
  }
  return folded;
}
