import { describe, expect, test } from 'vitest';
import { CoreError } from '../errors.js';
import { z } from 'zod';
import { errorToResponse, parseWith } from './problem.js';
import { queryBoolean, uuidSchema } from './schemas.js';

describe('errorToResponse', () => {
  test('an INTERNAL CoreError (a storage failure) answers like any unknown error: no detail of it, the request id', () => {
    const seen: unknown[] = [];
    const failure = new CoreError('INTERNAL', 'storage query failed (SequelizeDatabaseError SQLITE_ERROR)', { details: { code: 'SQLITE_ERROR' } });
    const response = errorToResponse(failure, (error) => {
      seen.push(error);
      return 'req-1';
    });
    expect(response.status).toBe(500);
    expect(response.body).toEqual({ status: 500, title: 'Internal Server Error', detail: 'Something went wrong on our side; the error was logged', code: 'INTERNAL', requestId: 'req-1' });
    expect(response.headers['x-request-id']).toBe('req-1');
    expect(seen).toEqual([failure]);
  });

  test('a client error keeps its code and words and is not reported as unexpected', () => {
    const seen: unknown[] = [];
    const response = errorToResponse(new CoreError('FACILITY_NOT_FOUND', 'No facility with this id'), (error) => void seen.push(error));
    expect(response).toMatchObject({ status: 404, body: { code: 'FACILITY_NOT_FOUND', detail: 'No facility with this id' } });
    expect(seen).toEqual([]);
  });
});

describe('validation errors in plain words', () => {
  const parse = (schema: z.ZodType, value: unknown) => {
    try {
      parseWith(schema, value);
    } catch (error) {
      return (error as CoreError).message;
    }
    return 'parsed';
  };

  test('name the field and say what it must be, without zod’s types, operators or the value', () => {
    const schema = z
      .object({
        hieOptOut: queryBoolean,
        name: z.string().min(1),
        count: z.number().max(10),
        tags: z.array(z.string()).min(1).max(2),
        state: z.enum(['IL', 'CA']),
        email: z.email(),
        id: uuidSchema,
      })
      .strict();
    const detail = parse(schema, { name: '', count: 'x', tags: [], state: 'Illinois', email: 'nope', id: 'secret-value', extra: 1 });
    expect(detail.split('; ').sort()).toEqual(
      [
        'hieOptOut: required, true or false',
        'name: must not be empty',
        'count: must be a number',
        'tags: must list at least one',
        'state: must be one of IL, CA',
        'email: must be an email address',
        'id: must be a UUID',
        'unknown field extra',
      ].sort(),
    );
    expect(parse(schema.partial(), { hieOptOut: 'maybe', count: 11, tags: ['a', 'b', 'c'] })).toBe('hieOptOut: must be true or false; count: must be at most 10; tags: must be at most 2 items');
    expect(detail).not.toMatch(/Invalid|expected|received|>=|<=|secret-value|Illinois/);
  });
});
