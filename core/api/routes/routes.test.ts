import { describe, expect, test } from 'vitest';
import { ENDPOINTS, type Endpoint } from '../../../contract/endpoints.js';
import { apiRoutes } from './index.js';

describe('the routes serve the endpoint table', () => {
  test('every endpoint of the table has exactly one route, and every route an endpoint', () => {
    const names = apiRoutes.map((route) => route.name);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
    expect([...names].sort()).toEqual(Object.keys(ENDPOINTS).sort());
  });

  test("a route's method, path and wire facts are its entry's, unchanged", () => {
    for (const route of apiRoutes) {
      const entry: Endpoint = ENDPOINTS[route.name as keyof typeof ENDPOINTS];
      for (const [key, value] of Object.entries(entry)) expect(route[key as keyof Endpoint], `${route.name}.${key}`).toBe(value);
    }
  });

  test('no two endpoints share a method and path', () => {
    const keys = Object.values(ENDPOINTS).map((endpoint) => `${endpoint.method} ${endpoint.path}`);
    expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);
  });
});
