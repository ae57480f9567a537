import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ENDPOINTS } from '../../contract/endpoints.js';
import { buildOpenApiDocument, openApiPath, type OpenApiDocument } from '../../core/api/openapi.js';
import { apiRoutes } from '../../core/api/routes/index.js';
import { ERROR_CODES } from '../../core/errors.js';
import { startMemoryKoa, type MemoryKoa } from '../../spec/support/http-testing.js';

type Operation = {
  operationId: string;
  summary: string;
  tags: string[];
  security: Record<string, string[]>[];
  parameters: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
};

let server: MemoryKoa;
let served: OpenApiDocument;

beforeAll(async () => {
  server = await startMemoryKoa();
  const response = await fetch(`${server.url}/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  served = (await response.json()) as OpenApiDocument;
});
afterAll(() => server.close());

const operation = (method: string, path: string) => served.paths[openApiPath(path)]?.[method.toLowerCase()] as Operation | undefined;

describe('GET /openapi.json', () => {
  test('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(served as unknown as Record<string, unknown>);
    expect(result.errors, JSON.stringify(result.errors, null, 2)).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(served.openapi).toBe('3.1.0');
  });

  test('describes every route of the handler, and nothing else', () => {
    const routes = server.host.handler.routes;
    const described = Object.entries(served.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    expect(described.sort()).toEqual(routes.map((route) => `${route.method} ${openApiPath(route.path)}`).sort());

    const operationIds = new Set<string>();
    for (const route of routes) {
      const op = operation(route.method, route.path)!;
      const label = `${route.method} ${route.path}`;
      expect(op.summary, label).toBe(route.summary);
      expect(op.tags, label).toEqual([route.tag]);
      expect(operationIds.has(op.operationId), `duplicate operationId ${op.operationId}`).toBe(false);
      operationIds.add(op.operationId);
      for (const name of [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1])) {
        expect(op.parameters.find((p) => p.in === 'path' && p.name === name), `${label} :${name}`).toMatchObject({ required: true });
      }
      const shape = (route.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
      for (const name of Object.keys(shape)) expect(op.parameters.some((p) => p.in === 'query' && p.name === name), `${label} ?${name}`).toBe(true);
      expect(op.security, label).toEqual(route.auth === 'apiKey' || route.auth === 'signedAndApiKey' ? [{ apiKey: [] }] : []);
      if (route.body) expect(Object.keys(op.requestBody!.content), label).toEqual(['application/json']);
      if (route.rawBody) expect(Object.keys(op.requestBody!.content), label).toEqual([route.rawBody]);
      expect(op.responses.default?.content, label).toHaveProperty(['application/problem+json']);
    }
    expect(served.components.securitySchemes).toEqual({ apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } });
  });

  test('request schemas come from the zod schemas the routes validate with, as input types', () => {
    const facility = operation('POST', '/medical/v1/facility')!.requestBody!.content['application/json']!.schema as {
      required: string[];
      properties: Record<string, { required?: string[]; properties?: Record<string, unknown> }>;
    };
    expect([...facility.required].sort()).toEqual(['address', 'name', 'npi']);
    expect([...facility.properties.address!.required!].sort()).toEqual(['addressLine1', 'city', 'state', 'zip']);
    // Input type: the default makes `country` optional for the caller.
    expect(facility.properties.address!.properties).toHaveProperty('country');

    const optOut = operation('PUT', '/medical/v1/patient/:id/hie-opt-out')!;
    expect(optOut.parameters.find((p) => p.name === 'hieOptOut')).toMatchObject({ in: 'query', required: true, schema: { type: 'string' } });
    const bulk = operation('POST', '/medical/v1/patient/bulk')!;
    expect(bulk.parameters.filter((p) => p.in === 'query').map((p) => [p.name, p.required])).toEqual([
      ['facilityId', false],
      ['dryRun', false],
    ]);
    const upload = operation('PUT', '/medical/v1/patient/bulk/:requestId/upload')!;
    expect(upload.parameters.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(['exp', 'acct', 'sig']);
    expect(upload.responses).toHaveProperty('413');
  });

  test('the patient routes that take If-Match document it and their 412; the answers that carry an ETag document it', () => {
    const conditional = ['PUT /medical/v1/patient/:id', 'PUT /medical/v1/patient/:id/hie-opt-out'];
    for (const route of conditional) {
      const [method, path] = route.split(' ') as [string, string];
      const documented = operation(method, path)!;
      expect(documented.parameters.find((p) => p.in === 'header'), route).toMatchObject({ name: 'If-Match', required: false });
      expect(documented.responses, route).toHaveProperty('412');
    }
    for (const route of [...conditional, 'GET /medical/v1/patient/:id', 'POST /medical/v1/patient']) {
      const [method, path] = route.split(' ') as [string, string];
      const documented = operation(method, path)!;
      const success = Object.entries(documented.responses).find(([status]) => status.startsWith('2'))![1] as { headers?: Record<string, unknown> };
      expect(success.headers, route).toHaveProperty('ETag');
    }
    // Only routes that honour If-Match say so.
    const withIfMatch = Object.entries(served.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, documented]) => ((documented as Operation).parameters.some((p) => p.name === 'If-Match') ? [`${method.toUpperCase()} ${path}`] : [])),
    );
    expect(withIfMatch.sort()).toEqual(['DELETE /medical/v1/patient/{id}', 'PUT /medical/v1/patient/{id}', 'PUT /medical/v1/patient/{id}/hie-opt-out']);
  });

  test('every operation documents 503 with Retry-After, and every operation of an account (an API key or a signed URL) its 429 too', () => {
    // A signed URL is issued to an account, and the handler counts its requests against that account's limit.
    const authOf = new Map(Object.values(ENDPOINTS).map((endpoint) => [`${endpoint.method} ${endpoint.path.replace(/:(\w+)/g, '{$1}')}`, endpoint.auth as string]));
    for (const [path, item] of Object.entries(served.paths)) {
      for (const [method, documented] of Object.entries(item)) {
        const { responses } = documented as Operation & { responses: Record<string, { headers?: Record<string, unknown> }> };
        const name = `${method.toUpperCase()} ${path}`;
        expect(responses['503']?.headers, name).toHaveProperty('Retry-After');
        const auth = authOf.get(name);
        expect(auth, name).toBeDefined();
        if (auth !== 'none') expect(responses['429']?.headers, name).toHaveProperty('Retry-After');
        else expect(responses, name).not.toHaveProperty('429');
      }
    }
  });

  test('is built deterministically from the route table', () => {
    expect(buildOpenApiDocument(apiRoutes)).toEqual(served);
    expect(JSON.stringify(buildOpenApiDocument(apiRoutes, { serverUrl: 'https://api.example.org' }).servers)).toBe('[{"url":"https://api.example.org"}]');
  });
});

describe('examples', () => {
  const document = buildOpenApiDocument(apiRoutes);

  test('every success answer with a schema has an example that its own zod schema accepts', () => {
    let checked = 0;
    for (const route of apiRoutes) {
      if (!route.success?.schema) continue;
      const operation = document.paths[openApiPath(route.path)]![route.method.toLowerCase()] as { responses: Record<string, { content?: Record<string, { example?: unknown }> }> };
      const content = operation.responses[String(route.success.status)]!.content!;
      const example = Object.values(content)[0]!.example;
      const parsed = route.success.schema.safeParse(example);
      expect(parsed.success, `${route.method} ${route.path}: ${parsed.error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`).toBe(true);
      checked++;
    }
    expect(checked).toBeGreaterThan(30);
  });

  test('every error answer has a problem example whose code is in the table and means its status', () => {
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries((operation as { responses: Record<string, { content?: Record<string, { example?: { status: number; code: string } }> }> }).responses)) {
          const problem = response.content?.['application/problem+json'];
          if (!problem) continue;
          expect(problem.example, `${method} ${path} ${status}`).toBeDefined();
          expect(ERROR_CODES[problem.example!.code as keyof typeof ERROR_CODES], `${method} ${path} ${status}`).toBe(problem.example!.status);
          if (status !== 'default') expect(problem.example!.status).toBe(Number(status));
        }
      }
    }
    expect((document.components.schemas.Problem as { properties: { code: { enum: string[] } } }).properties.code.enum).toEqual(Object.keys(ERROR_CODES));
  });
});

describe('answers a generated client can type', () => {
  const document = buildOpenApiDocument(apiRoutes) as unknown as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
  type Schema = Record<string, unknown> & { $ref?: string; properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[] };
  const resolve = (schema: Schema | undefined): Schema | undefined => {
    let at = schema;
    for (let hops = 0; at?.$ref && hops < 20; hops++) at = at.$ref.replace('#/', '').split('/').reduce<unknown>((node, key) => (node as Record<string, unknown>)?.[key], document) as Schema;
    return at;
  };
  /** Where a schema says nothing of what it holds: no type at all, or an object with no fields. */
  const holes = (schema: Schema | undefined, where: string, depth = 0): string[] => {
    const at = resolve(schema);
    if (!at) return [`${where}: no schema`];
    if (depth > 8) return [];
    const found: string[] = [];
    const typed = at.type !== undefined || at.anyOf || at.oneOf || at.allOf || at.enum || at.const !== undefined || at.properties;
    if (!typed) found.push(`${where}: untyped`);
    if (at.type === 'object' && !at.properties && !at.additionalProperties) found.push(`${where}: an object with no fields`);
    for (const [name, property] of Object.entries(at.properties ?? {})) found.push(...holes(property, `${where}.${name}`, depth + 1));
    for (const alternative of [...(at.anyOf ?? []), ...(at.oneOf ?? [])]) found.push(...holes(alternative, `${where}|`, depth + 1));
    if (at.items) found.push(...holes(at.items, `${where}[]`, depth + 1));
    return found;
  };

  test('every success answer has a schema saying what it holds: no untyped or field-less JSON, files as text or binary', () => {
    const found: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (!status.startsWith('2')) continue;
          const content = (resolve(response as Schema) as { content?: Record<string, { schema?: Schema }> }).content ?? {};
          for (const [mediaType, media] of Object.entries(content)) {
            found.push(...holes(media.schema, `${method.toUpperCase()} ${path} ${status} ${mediaType}`));
          }
        }
      }
    }
    expect(found).toEqual([]);
  });
});
