import { MAX_INDEX } from './types.js';

// The state and zip rules are the API's (a request validates with them too); the address groups are the CSV's.
export {
  COUNTRY,
  normaliseState,
  normaliseStateSlowly,
  normaliseZip,
  normaliseZipSlowly,
  STATE_INVALID,
  US_STATE_CODES,
  ZIP_INVALID,
} from '../../contract/fields/addresses.js';

/**
 * Why a required column of address group `index` is reported missing (rules for indexed
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
