export const SSN_INVALID = 'must be 9 digits';

const SSN_SEPARATORS = /[\s-]+/g;
const NINE_DIGITS = /^\d{9}$/;

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
