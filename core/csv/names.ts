import { splitNames } from '../matching/normalise.js';

export const NAME_REQUIRED = 'required (one or more names, separated by commas or spaces)';

const WHITESPACE_RUNS = /\s+/g;
const HAS_LETTER = /\p{L}/u;

/** A name field as it is stored and its list of names (PRODUCT: `A,B` and `A B` both mean [A, B]). */
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
  const text = value.replace(WHITESPACE_RUNS, ' ');
  const names = splitNames(text);
  for (const name of names) if (HAS_LETTER.test(name)) return { text, names };
  return undefined;
}
