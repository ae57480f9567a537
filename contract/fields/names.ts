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
