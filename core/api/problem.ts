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
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
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
 * The one place an error becomes a response. Unknown errors are a 500 with no detail (their text may
 * hold anything); the host logs them through `onUnexpected`.
 */
export function errorToResponse(error: unknown, onUnexpected?: (error: unknown) => void): ApiResponse {
  if (isCoreError(error)) return problemResponse(error.code, error.message, error.details ? { details: error.details } : undefined);
  if (error instanceof z.ZodError) return problemResponse('VALIDATION_FAILED', describeZodError(error));
  onUnexpected?.(error);
  return problemResponse('INTERNAL', 'Something went wrong on our side; the error was logged');
}

export function parseWith<T extends z.ZodType>(schema: T, value: unknown, where: 'query' | 'body'): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw new CoreError('VALIDATION_FAILED', describeZodError(result.error, where === 'query' ? 'query' : undefined));
  return result.data;
}
