import { CoreError, ERROR_CODES, type ErrorCode } from '../contract/errors.js';

// The codes and the error type are part of the wire contract (clients branch on codes); the core uses them as its own.
export { CoreError, ERROR_CODES, type ErrorCode };

export function isCoreError(value: unknown): value is CoreError {
  return value instanceof CoreError;
}

/** The one table from error code to HTTP-like status, shared by every host. */
export function statusForCode(code: ErrorCode): number {
  return ERROR_CODES[code];
}
