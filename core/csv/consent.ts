export const HIE_OPT_OUT_INVALID = 'must be true or false (or left empty)';

/**
 * `true`/`false` in any case (hieOptOut); `undefined` for anything else. An empty cell never
 * reaches this: it means "no change" for an existing patient.
 */
export function parseHieOptOut(value: string): boolean | undefined {
  if (value.length === 4 && value.toLowerCase() === 'true') return true;
  if (value.length === 5 && value.toLowerCase() === 'false') return false;
  return undefined;
}
