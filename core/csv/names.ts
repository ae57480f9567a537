import { isNameSpaceCode, splitNames } from '../matching/normalise.js';

export const NAME_REQUIRED = 'required (one or more names, separated by commas or spaces)';
export const NAME_FORMULA_START = 'must start with a letter, not =, +, - or @ (a spreadsheet would run the cell as a formula)';
export const NAME_BIDI_CONTROL =
  'must not contain invisible text-direction marks (U+200E, U+200F, U+061C, U+202A-U+202E, U+2066-U+2069); type the name again without them';
export const NAME_CONTROL = 'must not contain control characters (tabs, line breaks or other invisible characters)';

/** `=`, `+`, `-`, `@`: what spreadsheets read as the start of a formula (tab and CR are trimmed off a name). */
function isFormulaStart(c: number): boolean {
  return c === 61 || c === 43 || c === 45 || c === 64;
}

/** Marks that reorder how the text around them is displayed, so a name can look like another. */
function isBidiControl(c: number): boolean {
  return c === 0x200e || c === 0x200f || c === 0x061c || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

/**
 * The one rule on the characters of a name, for the CSV import and the JSON API alike: what is wrong with a
 * trimmed, non-empty first or last name, or `undefined`. A name never starts like a formula (it would run
 * when someone opens an export of it in a spreadsheet), holds no bidirectional control character (it would
 * display as another name) and no control character. One scan, no regex: it runs on every name imported.
 */
export function nameProblem(value: string): string | undefined {
  if (isFormulaStart(value.charCodeAt(0))) return NAME_FORMULA_START;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 32 || c === 127) return NAME_CONTROL;
    if (c >= 0x061c && isBidiControl(c)) return NAME_BIDI_CONTROL;
  }
  return undefined;
}

/** Whitespace but U+FEFF, which is invisible inside a name rather than a space between names (see `splitNames`). */
const WHITESPACE_RUNS = /[^\S\uFEFF]+/g;
const HAS_LETTER = /\p{L}/u;

/** A name field as it is stored and its list of names (`A,B` and `A B` both mean [A, B]). */
export interface NameField {
  /** Trimmed, whitespace collapsed to single spaces: `Anne   Marie` -> `Anne Marie`. */
  text: string;
  names: string[];
}

/**
 * The name field of a trimmed, non-empty cell; `undefined` when no part of it holds a letter (`,`, `-`,
 * `123`), which is as good as missing: such a row could never be matched by name.
 */
export function parseNameField(value: string): NameField | undefined {
  const text = needsCollapsing(value) ? value.replace(WHITESPACE_RUNS, ' ') : value;
  const names = splitNames(text);
  for (const name of names) if (hasLetter(name)) return { text, names };
  return undefined;
}

/** Whether collapsing whitespace changes the text: most names have single spaces or none. */
function needsCollapsing(value: string): boolean {
  let afterSpace = false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 32) {
      if (afterSpace) return true;
      afterSpace = true;
    } else if (isNameSpaceCode(c)) return true;
    else afterSpace = false;
  }
  return false;
}

function hasLetter(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 0x80) return HAS_LETTER.test(name);
    if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90)) return true;
  }
  return false;
}
