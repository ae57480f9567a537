/**
 * Name normalisation for demographic matching (names compare case-insensitively, with accents
 * folded and whitespace collapsed; two lists match when they share at least one name).
 */

/** Commas and whitespace both separate names (`A,B` and `A B` both mean the list A, B). */
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

/** `foldName` as specified, step by step; every input can take this path, and the fast one must agree with it. */
export function foldNameSlowly(s: string): string {
  let folded = s.normalize('NFD').replace(COMBINING_MARKS, '').toLowerCase();
  if (NEEDS_LETTER_FOLDING.test(folded)) folded = folded.replace(FOLDABLE_LETTERS, (letter) => LETTER_FOLDS[letter] ?? letter);
  return folded.replace(NOT_LETTER_DIGIT_OR_SPACE, '').replace(WHITESPACE_RUNS, ' ').trim();
}

/**
 * Below U+0300 (Latin, with its accented and special letters) folding works character by character:
 * NFD splits a letter into its base and marks that are dropped, and lower-casing has no context there
 * (final sigma and the like live higher up). So each such character's fold is worked out once, with the
 * slow path; whitespace is marked as such, to be collapsed and trimmed as the slow path does.
 */
const TABLE_END = 0x300;
const SPACE = ' ';
const FOLD_TABLE: readonly string[] = Array.from({ length: TABLE_END }, (_, code) => {
  const char = String.fromCharCode(code);
  return /\s/u.test(char) ? SPACE : foldNameSlowly(char);
});

function isAsciiLetterOrDigit(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57);
}

/**
 * The form two names are compared in: lower case, accents folded, punctuation dropped (`O'Brien` ->
 * `obrien`), whitespace collapsed to single spaces and trimmed. May return `''` for pure punctuation.
 */
export function foldName(s: string): string {
  let plain = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= TABLE_END) return foldNameSlowly(s);
    if (plain && !isAsciiLetterOrDigit(c)) plain = false;
  }
  // Most names: ASCII letters and digits only.
  if (plain) return s.toLowerCase();
  let folded = '';
  let space = false;
  for (let i = 0; i < s.length; i++) {
    const fold = FOLD_TABLE[s.charCodeAt(i)]!;
    if (fold === SPACE) space = true;
    else if (fold !== '') {
      if (space && folded !== '') folded += ' ';
      space = false;
      folded += fold;
    }
  }
  return folded;
}

/** Whether the UTF-16 code unit is one `\s` matches. */
export function isWhitespaceCode(c: number): boolean {
  if (c < 0x80) return c === 32 || (c >= 9 && c <= 13);
  return (
    c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

function isNameSeparator(c: number): boolean {
  return c === 44 || isWhitespaceCode(c);
}

/** The names of a name field as written (commas and whitespace separate them), empty parts dropped. */
export function splitNames(s: string): string[] {
  let start = -1;
  for (let i = 0; i < s.length; i++) {
    if (isNameSeparator(s.charCodeAt(i))) {
      // A field with one separator or more: rarer, and split for real.
      return start === 0 ? splitAt(s, i) : splitAt(s, 0);
    }
    if (start < 0) start = i;
  }
  // One name (an array literal: exactly one slot, not the dozen a first push reserves).
  return start === 0 ? [s] : [];
}

function splitAt(s: string, from: number): string[] {
  const names: string[] = [];
  let start = -1;
  if (from > 0) {
    names.push(s.slice(0, from));
  }
  for (let i = from; i < s.length; i++) {
    if (isNameSeparator(s.charCodeAt(i))) {
      if (start >= 0) names.push(s.slice(start, i));
      start = -1;
    } else if (start < 0) start = i;
  }
  if (start >= 0) names.push(s.slice(start));
  return names;
}

/** `splitNames` as specified: a split on commas and whitespace; the fast one must agree with it. */
export function splitNamesSlowly(s: string): string[] {
  const names = s.split(NAME_SEPARATORS);
  // split leaves '' at either end when the text starts or ends with a separator
  if (names.length > 0 && names[0] === '') names.shift();
  if (names.length > 0 && names[names.length - 1] === '') names.pop();
  return names;
}

/** The folded names of a list of names (`splitNames`), without duplicates and without names that fold to nothing. */
export function foldNames(names: readonly string[]): string[] {
  // Mapped first (an array of exactly the right size); filtered only when a name folds to nothing or twice.
  const folded = names.map(foldName);
  for (let i = 0; i < folded.length; i++) {
    const f = folded[i]!;
    if (f === '' || folded.indexOf(f) !== i) return folded.filter((name, at) => name !== '' && folded.indexOf(name) === at);
  }
  return folded;
}

/** The folded names of a name field, without duplicates and without names that fold to nothing. */
export function nameList(s: string): string[] {
  return foldNames(splitNames(s));
}
