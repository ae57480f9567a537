import { MAX_INDEX } from './types.js';

/** USPS codes: the 50 states, DC, the inhabited territories and the military "states". */
export const US_STATE_CODES: ReadonlySet<string> = new Set([
  'AL', 'AK', 'AZ', 'AR', 'CA', 'CO', 'CT', 'DE', 'FL', 'GA', 'HI', 'ID', 'IL', 'IN', 'IA', 'KS', 'KY',
  'LA', 'ME', 'MD', 'MA', 'MI', 'MN', 'MS', 'MO', 'MT', 'NE', 'NV', 'NH', 'NJ', 'NM', 'NY', 'NC', 'ND',
  'OH', 'OK', 'OR', 'PA', 'RI', 'SC', 'SD', 'TN', 'TX', 'UT', 'VT', 'VA', 'WA', 'WV', 'WI', 'WY',
  'DC',
  'AS', 'GU', 'MP', 'PR', 'VI',
  'AA', 'AE', 'AP',
]);

export const COUNTRY = 'USA';

export const STATE_INVALID = 'must be a 2-letter US state code (e.g. NY)';
export const ZIP_INVALID = 'must be 5 digits (ZIP+4 as 12345-6789 is accepted)';

const ZIP = /^(\d{5})(?:-?\d{4})?$/;

/** Upper-case USPS code of a trimmed cell, any case; `undefined` when it is not one. */
export function normaliseState(value: string): string | undefined {
  if (value.length !== 2) return undefined;
  const upper = value.toUpperCase();
  return US_STATE_CODES.has(upper) ? upper : undefined;
}

/** The 5-digit zip of a trimmed cell: ZIP+4 (`12345-6789` or 9 digits) reduces to its first 5 digits. */
export function normaliseZip(value: string): string | undefined {
  if (value.length === 5) return ZIP.test(value) ? value : undefined;
  const match = ZIP.exec(value);
  return match ? match[1] : undefined;
}

/**
 * Why a required column of address group `index` is reported missing (PRODUCT: rules for indexed
 * columns 2 and 4): index 1 must always be complete, other indexes only once any of their columns is given.
 */
export function addressRequiredMessage(index: number): string {
  return ADDRESS_REQUIRED_MESSAGES[index - 1] ?? groupMessage(index);
}

function groupMessage(index: number): string {
  return index === 1
    ? 'required (address 1 must be complete)'
    : `required when any address-${index} column is given`;
}

const ADDRESS_REQUIRED_MESSAGES = Array.from({ length: MAX_INDEX }, (_, i) => groupMessage(i + 1));
