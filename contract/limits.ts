/*
 * Bounds the API states to its callers: the endpoint table documents them and the core enforces them, so
 * the two read the same number.
 */

/** Most imports one listing of bulk patient creates answers. */
export const BULK_LIST_MAX = 100;

/** Resources one call may add to a patient's consolidated data: a bound on the work and memory of one request. */
export const MAX_RESOURCES_PER_CALL = 1_000;
