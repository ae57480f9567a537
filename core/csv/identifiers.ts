// The API's ssn rule (a request validates with it too); UUIDs and licence pairs are the CSV's.
export { normaliseSsn, normaliseSsnSlowly, SSN_INVALID } from '../../contract/fields/identifiers.js';

export const UUID_INVALID = 'must be a UUID (e.g. 123e4567-e89b-12d3-a456-426614174000)';
export const LICENCE_STATE_REQUIRED = 'required when driversLicenceNo is given';
export const LICENCE_NO_REQUIRED = 'required when driversLicenceState is given';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UUID of any version, lower-cased; else `undefined`. */
export function normaliseUuid(value: string): string | undefined {
  return value.length === 36 && UUID.test(value) ? value.toLowerCase() : undefined;
}
