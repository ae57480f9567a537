/**
 * The longest text each free-text patient field holds, counted after trimming: the one table both the CSV
 * import and the JSON API read, so a value one of them accepts the other accepts too. Fields with a format
 * of their own (dob, zip, phone, email...) are bounded by their format instead.
 */
export const FIELD_MAX_LENGTH = {
  firstName: 200,
  lastName: 200,
  addressLine1: 200,
  addressLine2: 200,
  city: 100,
  externalId: 256,
  driversLicenceNo: 50,
} as const;

export type LimitedField = keyof typeof FIELD_MAX_LENGTH;

/** The message of a value longer than its field allows, the same from the CSV import and the JSON API. */
export function tooLongMessage(field: LimitedField): string {
  return `must be at most ${FIELD_MAX_LENGTH[field]} characters`;
}

export const CONTROL_CHARACTER = 'must be one line of visible text: no line breaks, tabs or other control characters';

/**
 * Whether the text holds a C0 control character (U+0000-U+001F: NUL, tab, line breaks...) or DEL. Such
 * characters are invisible in a spreadsheet, break other systems' records (PostgreSQL refuses NUL in text),
 * and are never part of a name or an address.
 */
export function hasControlCharacter(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 32 || c === 127) return true;
  }
  return false;
}

/** What is wrong with a trimmed, non-empty free-text value of `field`, or `undefined`. */
export function freeTextProblem(value: string, field: LimitedField): string | undefined {
  if (value.length > FIELD_MAX_LENGTH[field]) return tooLongMessage(field);
  if (hasControlCharacter(value)) return CONTROL_CHARACTER;
  return undefined;
}
