/**
 * Name normalisation for demographic matching. Names compare case-insensitively after compatibility
 * normalisation (NFKC: full-width forms, ligatures), with whitespace, punctuation and invisible characters
 * (zero-width spaces and joiners, soft hyphens...) removed and accents folded; two lists match when they
 * share at least one name.
 *
 * A combining mark is an accent, folded away, only when it is a non-spacing mark on a letter of the Latin,
 * Greek or Cyrillic script: `José` is `Jose`, `Zoë` is `Zoe`. Every other mark is part of the letter it sits
 * on and counts: spacing marks always, and the vowel signs, nukta, tone marks, niqqud, harakat and voicing
 * marks of other scripts. Dropping those made `रमा` (Ramā) and `रोमी` (Romī) the same name as `राम` (Rām),
 * so different people were merged; when unsure, names must stay apart (a duplicate can be merged later,
 * a merged record cannot be split).
 */
import { isWhitespaceCode } from '../../contract/fields/whitespace.js';

/** Commas and whitespace both separate names (`A,B` and `A B` both mean the list A, B); U+FEFF is invisible, not a space. */
const NAME_SEPARATORS = /(?:[^\S\uFEFF]|,)+/u;
/** Format characters (zero-width space and joiners, soft hyphen, BOM...) and the other default-ignorable ones (variation selectors, Hangul fillers...). */
const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]+/gu;
const LETTER_OR_DIGIT = /^[\p{L}\p{N}]$/u;
const MARK = /^\p{M}$/u;
const SPACING_MARK = /^\p{Mc}$/u;
const HAS_MARK = /\p{M}/u;
/** Scripts whose non-spacing marks are accents. */
const ACCENTED_SCRIPT = /^[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}]$/u;
/**
 * Case folding beyond lower-casing: a final sigma is a sigma, and the iota subscript, which upper-cases to a
 * capital iota (`ᾳ` -> `ΑΙ`), is an iota.
 */
const CASE_FOLDS: Readonly<Record<string, string>> = { ς: 'σ', '\u0345': 'ι' };
const CASE_FOLDED = /[ς\u0345]/gu;

/**
 * Latin letters NFKD does not decompose into a base letter plus a mark; without this `Łukasz` would never
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
 * Whether `mark` is an accent of the letter it sits on: a non-spacing (or enclosing) mark on a Latin, Greek
 * or Cyrillic letter. A mark on nothing (at the start, or after punctuation only) is kept: it cannot be
 * told apart from a letter's.
 */
function isAccent(mark: string, base: string | undefined): boolean {
  return base !== undefined && !SPACING_MARK.test(mark) && ACCENTED_SCRIPT.test(base);
}

/** `foldName` as specified, step by step; every input can take this path, and the fast one must agree with it. */
export function foldNameSlowly(s: string): string {
  // Compatibility decomposition (the first half of NFKC), then case: what is left is base letters and marks.
  const lower = s.normalize('NFKD').replace(INVISIBLE, '').toLowerCase().replace(CASE_FOLDED, (letter) => CASE_FOLDS[letter]!).normalize('NFKD');
  const letters = lower.replace(FOLDABLE_LETTERS, (letter) => LETTER_FOLDS[letter]!);
  let kept = '';
  // The letter or digit the marks that follow sit on; punctuation and whitespace between them are dropped.
  let base: string | undefined;
  for (const char of letters) {
    if (LETTER_OR_DIGIT.test(char)) {
      kept += char;
      base = char;
    } else if (MARK.test(char) && !isAccent(char, base)) kept += char;
  }
  // Recomposed, so a letter and its marks read the same however they were written.
  return kept.normalize('NFC');
}

/**
 * Below U+0300 (Latin, with its accented and special letters) folding works character by character: each
 * character folds to letters of its own, and lower-casing has no context there (final sigma and the like
 * live higher up). So each such character's fold is worked out once, with the slow path. The exceptions
 * are the spacing accents (`´`, `¨`, `¸`...), whose compatibility form is a mark on the letter before them:
 * a name holding one takes the slow path, as any name beyond U+0300 does.
 */
const TABLE_END = 0x300;
const FOLD_TABLE: readonly (string | undefined)[] = Array.from({ length: TABLE_END }, (_, code) => {
  const fold = foldNameSlowly(String.fromCharCode(code));
  return HAS_MARK.test(fold) ? undefined : fold;
});

function isAsciiLetterOrDigit(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57);
}

/**
 * The form two names are compared in: compatibility-normalised, lower case, accents folded, marks that are
 * letters kept, punctuation, whitespace and invisible characters dropped (`O'Brien` -> `obrien`), composed
 * (NFC). May return `''` for pure punctuation.
 */
export function foldName(s: string): string {
  let plain = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= TABLE_END || FOLD_TABLE[c] === undefined) return foldNameSlowly(s);
    if (plain && !isAsciiLetterOrDigit(c)) plain = false;
  }
  // Most names: ASCII letters and digits only.
  if (plain) return s.toLowerCase();
  let folded = '';
  for (let i = 0; i < s.length; i++) folded += FOLD_TABLE[s.charCodeAt(i)]!;
  return folded;
}

/** Whitespace that separates names: all of `\s` but U+FEFF, which JavaScript counts as a space but nobody sees. */
export function isNameSpaceCode(c: number): boolean {
  return c !== 0xfeff && isWhitespaceCode(c);
}

function isNameSeparator(c: number): boolean {
  return c === 44 || isNameSpaceCode(c);
}

/** The names of a name field as written (commas and whitespace but U+FEFF separate them), empty parts dropped. */
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

/** `splitNames` as specified: a split on commas and whitespace but U+FEFF; the fast one must agree with it. */
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
