import { describe, expect, test } from 'vitest';
import { CoreError } from '../errors.js';
import { errorToResponse } from './problem.js';

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
