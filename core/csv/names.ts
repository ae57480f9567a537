import { isNameSpaceCode, splitNames } from '../matching/normalise.js';

// The API's rule on the characters of a name (a request validates with it too); splitting a field into names is the CSV's.
export { NAME_BIDI_CONTROL, NAME_CONTROL, NAME_FORMULA_START, nameProblem } from '../../contract/fields/names.js';

export const NAME_REQUIRED = 'required (one or more names, separated by commas or spaces)';

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
