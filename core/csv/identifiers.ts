export const SSN_INVALID = 'must be 9 digits';
export const UUID_INVALID = 'must be a UUID (e.g. 123e4567-e89b-12d3-a456-426614174000)';
export const LICENCE_STATE_REQUIRED = 'required when driversLicenceNo is given';
export const LICENCE_NO_REQUIRED = 'required when driversLicenceState is given';

const SSN_SEPARATORS = /[\s-]+/g;
const NINE_DIGITS = /^\d{9}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The 9 digits of a trimmed ssn cell, dashes and spaces removed; else `undefined`. */
export function normaliseSsn(value: string): string | undefined {
  const digits = value.replace(SSN_SEPARATORS, '');
  if (digits.length !== 9) return undefined;
  // NINE_DIGITS, spelled out.
  for (let i = 0; i < 9; i++) {
    const c = digits.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return digits;
}

/** `normaliseSsn` as specified. */
export function normaliseSsnSlowly(value: string): string | undefined {
  const digits = value.replace(SSN_SEPARATORS, '');
  return NINE_DIGITS.test(digits) ? digits : undefined;
}

/** A UUID of any version, lower-cased; else `undefined`. */
export function normaliseUuid(value: string): string | undefined {
  return value.length === 36 && UUID.test(value) ? value.toLowerCase() : undefined;
}
