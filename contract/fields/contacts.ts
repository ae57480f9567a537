import { isWhitespaceCode } from './whitespace.js';

export const PHONE_INVALID = 'must be a 10-digit US phone number (spaces, dashes, dots and parentheses allowed)';
export const EMAIL_INVALID = 'must be an email address (e.g. name@example.com)';

const PHONE_SEPARATORS = /[\s\-.()]+/g;
const TEN_DIGITS = /^\d{10}$/;
/** A leading `1` or `+1` on 11 digits is the US country code. */
const US_COUNTRY_CODE_AND_TEN_DIGITS = /^\+?1(\d{10})$/;

/** The 10 digits of a trimmed phone cell, separators and a US country code removed; else `undefined`. */
export function normalisePhone(value: string): string | undefined {
  const compact = withoutPhoneSeparators(value);
  // TEN_DIGITS and US_COUNTRY_CODE_AND_TEN_DIGITS, spelled out.
  switch (compact.length) {
    case 10:
      return digitsBetween(compact, 0, 10) ? compact : undefined;
    case 11:
      return compact.charCodeAt(0) === 49 && digitsBetween(compact, 1, 11) ? compact.slice(1) : undefined;
    case 12:
      return compact.charCodeAt(0) === 43 && compact.charCodeAt(1) === 49 && digitsBetween(compact, 2, 12) ? compact.slice(2) : undefined;
    default:
      return undefined;
  }
}

/** `normalisePhone` as specified. */
export function normalisePhoneSlowly(value: string): string | undefined {
  const compact = value.replace(PHONE_SEPARATORS, '');
  if (TEN_DIGITS.test(compact)) return compact;
  const match = US_COUNTRY_CODE_AND_TEN_DIGITS.exec(compact);
  return match ? match[1] : undefined;
}

function isPhoneSeparator(c: number): boolean {
  return c === 45 || c === 46 || c === 40 || c === 41 || isWhitespaceCode(c);
}

/** `value.replace(PHONE_SEPARATORS, '')` by a scan: the text between separators, joined. */
function withoutPhoneSeparators(value: string): string {
  let compact = '';
  let from = 0;
  for (let i = 0; i < value.length; i++) {
    if (isPhoneSeparator(value.charCodeAt(i))) {
      if (i > from) compact += value.slice(from, i);
      from = i + 1;
    }
  }
  if (from === 0) return value;
  return from < value.length ? compact + value.slice(from) : compact;
}

function digitsBetween(value: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = value.charCodeAt(i);
    if (!(c >= 48 && c <= 57)) return false;
  }
  return true;
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
  // EMAIL allows only ASCII in the domain: without an upper-case letter there is nothing to change.
  for (let i = at + 1; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 65 && c <= 90) return value.slice(0, at + 1) + value.slice(at + 1).toLowerCase();
  }
  return value;
}
