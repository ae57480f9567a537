/*
 * US addresses as the API and the CSV import both take them: the state code and zip rules and their messages.
 */

/** USPS codes: the 50 states, DC, the inhabited territories and the military "states". */
export const US_STATE_CODES: ReadonlySet<string> = new Set([
  'AL', 'AK', 'AZ', 'AR', 'CA', 'CO', 'CT', 'DE', 'FL', 'GA', 'HI', 'ID', 'IL', 'IN', 'IA', 'KS', 'KY',
  'LA', 'ME', 'MD', 'MA', 'MI', 'MN', 'MS', 'MO', 'MT', 'NE', 'NV', 'NH', 'NJ', 'NM', 'NY', 'NC', 'ND',
  'OH', 'OK', 'OR', 'PA', 'RI', 'SC', 'SD', 'TN', 'TX', 'UT', 'VT', 'VA', 'WA', 'WV', 'WI', 'WY',
  'DC',
  'AS', 'GU', 'MP', 'PR', 'VI',
  'AA', 'AE', 'AP',
]);

/** The one country the service takes addresses in. */
export const COUNTRY = 'USA';

export const STATE_INVALID = 'must be a 2-letter US state code (e.g. NY)';
export const ZIP_INVALID = 'must be 5 digits (ZIP+4 as 12345-6789 is accepted)';

const ZIP = /^(\d{5})(?:-?\d{4})?$/;

/** Whether `AA`..`ZZ` is a code, by `(first - A) * 26 + (second - A)`: no string to hash per cell. */
const STATE_CODE_TABLE: Uint8Array = (() => {
  const table = new Uint8Array(26 * 26);
  for (const code of US_STATE_CODES) table[(code.charCodeAt(0) - 65) * 26 + (code.charCodeAt(1) - 65)] = 1;
  return table;
})();

/** 0..25 for an ASCII letter of either case, -1 for any other ASCII character, -2 beyond ASCII. */
function letterIndex(c: number): number {
  if (c >= 65 && c <= 90) return c - 65;
  if (c >= 97 && c <= 122) return c - 97;
  return c < 128 ? -1 : -2;
}

/** Upper-case USPS code of a trimmed cell, any case; `undefined` when it is not one. */
export function normaliseState(value: string): string | undefined {
  if (value.length !== 2) return undefined;
  const first = letterIndex(value.charCodeAt(0));
  const second = letterIndex(value.charCodeAt(1));
  // Beyond ASCII, upper-casing can still give a code (`ı` -> `I`): the rule as written decides.
  if (first === -2 || second === -2) return normaliseStateSlowly(value);
  if (first < 0 || second < 0 || STATE_CODE_TABLE[first * 26 + second] === 0) return undefined;
  return value.toUpperCase();
}

/** `normaliseState` as specified. */
export function normaliseStateSlowly(value: string): string | undefined {
  if (value.length !== 2) return undefined;
  const upper = value.toUpperCase();
  return US_STATE_CODES.has(upper) ? upper : undefined;
}

function digitsBetween(value: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = value.charCodeAt(i);
    if (!(c >= 48 && c <= 57)) return false;
  }
  return true;
}

/** The 5-digit zip of a trimmed cell: ZIP+4 (`12345-6789` or 9 digits) reduces to its first 5 digits. */
export function normaliseZip(value: string): string | undefined {
  // ZIP, spelled out: 5 digits, then nothing, 4 digits, or a dash and 4 digits.
  if (!digitsBetween(value, 0, 5)) return undefined;
  switch (value.length) {
    case 5:
      return value;
    case 9:
      return digitsBetween(value, 5, 9) ? value.slice(0, 5) : undefined;
    case 10:
      return value.charCodeAt(5) === 45 && digitsBetween(value, 6, 10) ? value.slice(0, 5) : undefined;
    default:
      return undefined;
  }
}

/** `normaliseZip` as specified. */
export function normaliseZipSlowly(value: string): string | undefined {
  const match = ZIP.exec(value);
  return match ? match[1] : undefined;
}
