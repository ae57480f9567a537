import type { ErrorCode } from '../contract/errors.js';

/**
 * The stable codes the service answers errors with, and `HTTP_<status>` for an answer that was not the
 * service's problem+json (a proxy's error page).
 */
export type ApiErrorCode = ErrorCode | `HTTP_${number}`;

/** Every error the client throws is one of these, so a caller can catch `CarebridgeError` and branch on `code`. */
export abstract class CarebridgeError extends Error {
  abstract readonly code: string;
}

/** The problem details the service answers errors with (RFC 9457, plus our stable `code`). */
export interface ProblemDetails {
  status: number;
  title: string;
  detail: string;
  code: ApiErrorCode;
  [extension: string]: unknown;
}

/**
 * The service answered with an error status. `code` is the service's stable UPPER_SNAKE code
 * (`PATIENT_NOT_FOUND`, `FACILITY_REQUIRED`, ...); branch on it, not on `message`. When the answer was
 * not problem+json (a proxy's 502 page, say), `code` is `HTTP_<status>` and `detail` is the start of the body.
 */
export class CarebridgeApiError extends CarebridgeError {
  readonly status: number;
  readonly code: ApiErrorCode;
  readonly title: string;
  readonly detail: string;
  /** The whole problem body, extensions included (e.g. `details`). */
  readonly problem: ProblemDetails;
  /** `GET /medical/v1/patient/{id}`: method and path of the call, without the query (it may carry ids or text). */
  readonly request: { method: string; path: string };

  constructor(problem: ProblemDetails, request: { method: string; path: string }) {
    super(`${request.method} ${request.path}: ${problem.status} ${problem.code}: ${problem.detail}`);
    this.name = 'CarebridgeApiError';
    this.status = problem.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.problem = problem;
    this.request = request;
  }
}

export type NetworkErrorCode = 'TIMEOUT' | 'NETWORK_ERROR' | 'INVALID_RESPONSE';

/**
 * No usable answer from the service: `TIMEOUT` (none within `timeoutMs`), `NETWORK_ERROR` (refused, reset,
 * DNS...; the underlying error is the `cause`), `INVALID_RESPONSE` (a success status whose body is not
 * JSON: something other than carebridge answered). A write that timed out may still have happened.
 */
export class CarebridgeNetworkError extends CarebridgeError {
  readonly code: NetworkErrorCode;
  readonly request: { method: string; path: string };

  constructor(code: NetworkErrorCode, message: string, request: { method: string; path: string }, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CarebridgeNetworkError';
    this.code = code;
    this.request = request;
  }
}

export type ClientErrorCode = 'INVALID_OPTIONS' | 'UNTRUSTED_URL';

/** The client refused before sending anything: bad options, or a URL the API key must not go to. */
export class CarebridgeClientError extends CarebridgeError {
  readonly code: ClientErrorCode;

  constructor(code: ClientErrorCode, message: string) {
    super(message);
    this.name = 'CarebridgeClientError';
    this.code = code;
  }
}

/** A received webhook body that is not a valid carebridge message (see `parseWebhook`). */
export class CarebridgeWebhookError extends CarebridgeError {
  readonly code = 'WEBHOOK_INVALID';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CarebridgeWebhookError';
  }
}

const PROBLEM_CODE = /^[A-Z][A-Z0-9_]*$/;

/** The problem of an error answer, or one made from the status when the body is not ours. */
export function problemFrom(status: number, statusText: string, body: string, contentType: string | null): ProblemDetails {
  if (contentType && /json/i.test(contentType)) {
    try {
      const parsed = JSON.parse(body) as Partial<ProblemDetails> | null;
      if (parsed && typeof parsed === 'object' && typeof parsed.code === 'string' && PROBLEM_CODE.test(parsed.code)) {
        return {
          ...parsed,
          status: typeof parsed.status === 'number' ? parsed.status : status,
          title: typeof parsed.title === 'string' ? parsed.title : statusText,
          detail: typeof parsed.detail === 'string' ? parsed.detail : '',
          code: parsed.code,
        };
      }
    } catch {
      // Not JSON after all: fall through to the generic problem.
    }
  }
  return { status, title: statusText || `HTTP ${status}`, detail: body.slice(0, 500), code: `HTTP_${status}` };
}
