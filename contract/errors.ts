/**
 * The error codes of the wire contract and the one error type that carries them. `code` is API: clients branch on it, so codes never change meaning;
 * messages may be reworded. Hosts map codes to transport status through `statusForCode` only.
 */
export const ERROR_CODES = {
  // 400: the request itself is wrong
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  FACILITY_REQUIRED: 400,
  PATIENT_OPTED_OUT: 400,
  METADATA_INVALID: 400,
  CSV_INVALID: 400,
  CSV_TOO_MANY_ROWS: 400,
  WEBHOOK_URL_INVALID: 400,
  WEBHOOK_EVENT_TYPE_UNKNOWN: 400,
  // 401: who are you
  UNAUTHORIZED: 401,
  // 403: a signed URL that does not verify for this request
  SIGNATURE_INVALID: 403,
  // 404: missing, or belongs to another account (never reveal which)
  NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  FACILITY_NOT_FOUND: 404,
  PATIENT_NOT_FOUND: 404,
  COHORT_NOT_FOUND: 404,
  ORGANIZATION_NOT_FOUND: 404,
  BULK_REQUEST_NOT_FOUND: 404,
  DOCUMENT_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  WEBHOOK_ENDPOINT_NOT_FOUND: 404,
  WEBHOOK_MESSAGE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  // 409: the resource is in a state that forbids this
  CONFLICT: 409,
  INVALID_TRANSITION: 409,
  UPLOAD_URL_USED: 409,
  ORGANIZATION_EXISTS: 409,
  FACILITY_IN_USE: 409,
  // 409: the account has as many webhook endpoints as it may
  WEBHOOK_ENDPOINT_LIMIT: 409,
  // 409: a test event for the default endpoint of an account without a webhook URL
  WEBHOOK_URL_NOT_SET: 409,
  // 410: gone for good
  UPLOAD_URL_EXPIRED: 410,
  URL_EXPIRED: 410,
  // 412: a conditional request (If-Match) naming a version that is no longer the current one
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  CCDA_INVALID: 422,
  // 429: too busy to take it now; try again shortly
  RATE_LIMITED: 429,
  // 429: wrong API keys from this client address past its limit; any key waits for Retry-After
  TOO_MANY_FAILED_ATTEMPTS: 429,
  NOT_IMPLEMENTED: 501,
  INTERNAL: 500,
  // 503: the service cannot answer yet (starting) or a dependency does not (readiness)
  STARTING: 503,
  UNAVAILABLE: 503,
  // 503: as many renders (HTML, PDF) as the service runs at once, and as many waiting; try again after Retry-After
  BUSY: 503,
  // 507: the disk or database the service writes to is full; nothing was half-written, try again later
  STORAGE_FULL: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class CoreError extends Error {
  readonly code: ErrorCode;
  /** Extra, non-PHI facts a client can act on (e.g. the offending metadata key). */
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CoreError';
    this.code = code;
    if (options?.details) this.details = options.details;
  }
}
