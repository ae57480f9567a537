import { describe, expect, test } from 'vitest';
import { json, routeFor, Router, type PathParamNames } from './router.js';

// Compile-time facts, checked by spec/typecheck.test.ts: a handler sees exactly its path's params.
const both: PathParamNames<'/medical/v1/patient/:id/consolidated/:queryId'> = 'queryId';
// @ts-expect-error not a param of this path
const none: PathParamNames<'/medical/v1/patient/:id'> = 'queryId';
const V1 = '/medical/v1';

const endpoint = { method: 'GET', path: `${V1}/patient/:id/document/:documentId`, auth: 'none', tag: 'Test', summary: 'a route with two params', success: { status: 200 } } as const;
const route = routeFor('twoParams', endpoint, {
  async handle({ params }) {
    const id: string = params.id;
    const documentId: string = params.documentId;
    // @ts-expect-error a name the path does not have is refused where the handler is written
    const missing: string = params.patientId;
    return json(200, { id, documentId, missing });
  },
});

describe('path params', () => {
  test('each :name segment of the path is a param of the handler, decoded', () => {
    const match = new Router([route]).match('GET', '/medical/v1/patient/p%201/document/d-2');
    expect(match).toMatchObject({ kind: 'found', params: { id: 'p 1', documentId: 'd-2' } });
    expect([both, none]).toEqual(['queryId', 'queryId']);
  });
});
