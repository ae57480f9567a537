import { z } from 'zod';
import { CoreError, isCoreError, statusForCode, type ErrorCode } from '../errors.js';
import type { ApiResponse, Problem } from './types.js';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

export function problemResponse(code: ErrorCode, detail: string, extensions?: Record<string, unknown>): ApiResponse {
  const status = statusForCode(code);
  const body: Problem = { status, title: TITLES[status] ?? 'Error', detail, code, ...extensions };
  return { status, headers: { 'content-type': 'application/problem+json' }, body };
}

/** `address.0.zip: must be 5 digits; npi: must be a valid 10-digit NPI` — names the field, never echoes the value. */
export function describeZodError(error: z.ZodError, where?: string): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join('.');
      const field = [where, path].filter(Boolean).join(' ');
      return field ? `${field}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

/**
 * The one place an error becomes a response. An error `classify` recognises (a full disk, from the
 * adapters the host chose) answers as that CoreError. An unknown error, or an INTERNAL CoreError (a storage
 * failure, a broken invariant), answers 500 with no detail, since its text may name the
 * database or quote what it choked on; `onUnexpected` gets the error to log and may return the request id
 * the answer then carries (body `requestId` and header `x-request-id`) so the log line can be found.
 */
export function errorToResponse(error: unknown, onUnexpected?: (error: unknown) => string | void, classify?: (error: unknown) => CoreError | undefined): ApiResponse {
  const known = isCoreError(error) ? undefined : classify?.(error);
  if (known) return errorToResponse(known, onUnexpected);
  if (isCoreError(error) && error.code !== 'INTERNAL') {
    const response = problemResponse(error.code, error.message, error.details ? { details: error.details } : undefined);
    const retryAfter = error.details?.retryAfterSeconds;
    if (typeof retryAfter === 'number') response.headers['retry-after'] = String(retryAfter);
    return response;
  }
  if (error instanceof z.ZodError) return problemResponse('VALIDATION_FAILED', describeZodError(error));
  const requestId = onUnexpected?.(error);
  const response = problemResponse('INTERNAL', 'Something went wrong on our side; the error was logged', requestId ? { requestId } : undefined);
  if (requestId) response.headers['x-request-id'] = requestId;
  return response;
}

export function parseWith<T extends z.ZodType>(schema: T, value: unknown, where: 'query' | 'body'): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw new CoreError('VALIDATION_FAILED', describeZodError(result.error, where === 'query' ? 'query' : undefined));
  return result.data;
}
