export const PHONE_INVALID = 'must be a 10-digit US phone number (spaces, dashes, dots and parentheses allowed)';
export const EMAIL_INVALID = 'must be an email address (e.g. name@example.com)';

const PHONE_SEPARATORS = /[\s\-.()]+/g;
const TEN_DIGITS = /^\d{10}$/;
/** A leading `1` or `+1` on 11 digits is the US country code. */
const US_COUNTRY_CODE_AND_TEN_DIGITS = /^\+?1(\d{10})$/;

/** The 10 digits of a trimmed phone cell, separators and a US country code removed; else `undefined`. */
export function normalisePhone(value: string): string | undefined {
  const compact = value.replace(PHONE_SEPARATORS, '');
  if (TEN_DIGITS.test(compact)) return compact;
  const match = US_COUNTRY_CODE_AND_TEN_DIGITS.exec(compact);
  return match ? match[1] : undefined;
}

/**
 * Local part as in the HTML living standard's valid e-mail address; the domain needs at least one dot and
 * a top-level label starting with a letter, so `name@localhost` and `name@1.2.3.4` are refused.
 */
const EMAIL =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])$/;
const MAX_EMAIL_LENGTH = 254;
const MAX_LOCAL_PART_LENGTH = 64;

/** The address of a trimmed email cell with its domain lower-cased (the local part is kept as is). */
export function normaliseEmail(value: string): string | undefined {
  if (value.length > MAX_EMAIL_LENGTH || !EMAIL.test(value)) return undefined;
  const at = value.indexOf('@');
  if (at > MAX_LOCAL_PART_LENGTH) return undefined;
  return value.slice(0, at + 1) + value.slice(at + 1).toLowerCase();
}
