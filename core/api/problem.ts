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

/** What a value must be, for a type zod expected, in a caller's words. */
const TYPE_WORDS: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  date: 'a date',
};

const UNITS: Record<string, [string, string]> = { string: ['character', 'characters'], array: ['item', 'items'], set: ['item', 'items'], file: ['byte', 'bytes'] };

function countOf(origin: unknown, n: number): string {
  const unit = UNITS[String(origin)];
  return unit ? `${n} ${n === 1 ? unit[0] : unit[1]}` : String(n);
}

/**
 * One issue in plain words. A message the schema wrote itself (they start in lower case: `must be a UUID`)
 * is kept; zod's own (`Invalid input: expected string, received undefined`) speak of its types and
 * operators, so they are said again from the issue's facts.
 */
function plainMessage(issue: z.core.$ZodIssue): string {
  if (/^[a-z]/.test(issue.message)) return issue.message;
  switch (issue.code) {
    case 'invalid_type':
      if (/received undefined$/.test(issue.message)) return 'required';
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case 'too_small':
      if (issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
      if (issue.origin === 'array' && Number(issue.minimum) === 1) return 'must list at least one';
      return `must be at least ${countOf(issue.origin, Number(issue.minimum))}`;
    case 'too_big':
      return `must be at most ${countOf(issue.origin, Number(issue.maximum))}`;
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${String(issue.values[0])}` : `must be one of ${issue.values.map(String).join(', ')}`;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}`;
    case 'invalid_format':
      return issue.format === 'email' ? 'must be an email address' : issue.format === 'url' ? 'must be a URL' : 'is not in the expected format';
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_union':
      return 'is not any of the accepted forms';
    default:
      return 'is not valid';
  }
}

/**
 * `address.0.zip: must be 5 digits; npi: must be a valid 10-digit NPI; hieOptOut: required, true or false`:
 * names the field, says what it must be in plain words, never echoes the value.
 */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.map(String).join('.');
      const message = plainMessage(issue as z.core.$ZodIssue);
      return field ? `${field}: ${message}` : message;
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
  // An INTERNAL CoreError may wrap what the classifier knows (the SQL storage wraps the driver's errors).
  const known = isCoreError(error) && error.code !== 'INTERNAL' ? undefined : classify?.(error);
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

export function parseWith<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw new CoreError('VALIDATION_FAILED', describeZodError(result.error));
  return result.data;
}
