import { describe, expect, test } from 'vitest';
import { fillPath, requestTo } from './endpoints.js';

describe('requests from the endpoint table', () => {
  test("each :name segment is filled with its value, percent-encoded", () => {
    expect(requestTo('getConsolidatedQuery', { id: 'p 1/2', requestId: 'r?#' })).toEqual({
      method: 'GET',
      path: '/medical/v1/patient/p%201%2F2/consolidated/query/r%3F%23',
    });
    expect(requestTo('removeWebhookEndpoint', { id: 'default' })).toEqual({ method: 'DELETE', path: '/settings/webhook/endpoints/default' });
  });

  test('a path without params is the path as it stands', () => {
    expect(requestTo('listFacilities')).toEqual({ method: 'GET', path: '/medical/v1/facility' });
  });

  test('params are typed by the path', () => {
    // @ts-expect-error getPatient's path has :id, not :patientId
    expect(requestTo('getPatient', { patientId: 'p-1' }).path).toBe('/medical/v1/patient/undefined');
    // @ts-expect-error a path with params needs them
    expect(requestTo('getPatient').path).toBe('/medical/v1/patient/undefined');
    expect(fillPath('/a/:x/b/:y', { x: '1', y: '2' })).toBe('/a/1/b/2');
  });
});
