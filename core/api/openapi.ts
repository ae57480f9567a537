import { z } from 'zod';
import type { RouteAuth, RouteDefinition } from './router.js';

/**
 * The OpenAPI 3.1 document of the API, built from the same route table and zod schemas the handler
 * validates with, so the document cannot drift from what the service accepts. Pure: no I/O.
 */

type JsonSchema = Record<string, unknown>;

export interface OpenApiInfo {
  title?: string;
  version?: string;
  description?: string;
  /** Base URL of the API (e.g. the public URL, or a mount prefix such as `/carebridge`); `/` when absent. */
  serverUrl?: string;
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description?: string };
  servers: { url: string }[];
  tags: { name: string }[];
  paths: Record<string, Record<string, unknown>>;
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, JsonSchema> };
}

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };

const PROBLEM_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'RFC 9457 problem details; `code` is stable and meant for programs, `detail` for people.',
  required: ['status', 'title', 'detail', 'code'],
  properties: {
    status: { type: 'integer' },
    title: { type: 'string' },
    detail: { type: 'string' },
    code: { type: 'string', examples: ['VALIDATION_FAILED', 'UNAUTHORIZED', 'FACILITY_NOT_FOUND'] },
    details: { type: 'object', additionalProperties: true },
  },
};

/** The query parameters of a pre-signed URL (core/urls.ts); documented on the routes that take one. */
const SIGNED_PARAMETERS = [
  { name: 'exp', in: 'query', required: true, description: 'Expiry of the pre-signed URL, Unix seconds', schema: { type: 'string' } },
  { name: 'acct', in: 'query', required: true, description: 'Account the URL is signed to', schema: { type: 'string' } },
  { name: 'sig', in: 'query', required: true, description: 'Signature; use the URL exactly as it was handed out', schema: { type: 'string' } },
];

function toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  // `unrepresentable: 'any'`: a transform's output (or a custom type) becomes `{}` rather than failing the document.
  const json = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as JsonSchema;
  delete json.$schema;
  return json;
}

/** `/patient/:id/hie-opt-out` -> `/patient/{id}/hie-opt-out`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function pathParameterNames(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1]!);
}

/** `POST /medical/v1/patient/:id/hie-opt-out` -> `postPatientByIdHieOptOut`: unique per method and path. */
export function operationIdOf(route: Pick<RouteDefinition, 'method' | 'path'>): string {
  const words = route.path
    .replace(/^\/medical\/v1/, '')
    .split('/')
    .filter(Boolean)
    .flatMap((segment) => (segment.startsWith(':') ? ['by', segment.slice(1)] : segment.split(/[^A-Za-z0-9]+/)))
    .filter(Boolean);
  const camel = words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
  return `${route.method.toLowerCase()}${camel}`;
}

function queryParameters(schema: z.ZodType): Record<string, unknown>[] {
  const json = toSchema(schema, 'input');
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: 'query',
      required: required.has(name),
      ...(typeof description === 'string' ? { description } : {}),
      schema: rest,
    };
  });
}

function securityOf(auth: RouteAuth): Record<string, string[]>[] {
  return auth === 'apiKey' || auth === 'signedAndApiKey' ? [{ apiKey: [] }] : [];
}

function problemResponse(description: string) {
  return { description, content: { 'application/problem+json': { schema: PROBLEM_REF } } };
}

function operationOf(route: RouteDefinition): Record<string, unknown> {
  const parameters: Record<string, unknown>[] = pathParameterNames(route.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  if (route.auth === 'signed' || route.auth === 'signedAndApiKey') parameters.push(...SIGNED_PARAMETERS);
  if (route.query) parameters.push(...queryParameters(route.query));

  const successStatus = route.success?.status ?? 200;
  const success =
    successStatus === 204
      ? { description: 'Done; no content' }
      : {
          description: successStatus === 501 ? 'Not served by carebridge; `detail` says why' : 'Success',
          content: {
            [route.success?.mediaType ?? 'application/json']: {
              schema: route.success?.schema
                ? toSchema(route.success.schema, 'output')
                : route.success?.mediaType === 'application/problem+json'
                  ? PROBLEM_REF
                  : route.success?.mediaType?.startsWith('text/')
                    ? { type: 'string' }
                    : { type: 'object' },
            },
          },
        };

  const responses: Record<string, unknown> = { [String(successStatus)]: success };
  if (route.query || route.body || route.rawBody) responses['400'] = problemResponse('Invalid input; `detail` names the field');
  if (route.auth === 'apiKey' || route.auth === 'signedAndApiKey') responses['401'] = problemResponse('Missing or unknown API key');
  if (route.auth === 'signed' || route.auth === 'signedAndApiKey') responses['403'] = problemResponse('The URL signature does not match');
  if (route.path.includes(':')) responses['404'] = problemResponse('Not found, or not in your account');
  if (route.body || route.rawBody) {
    responses['413'] = problemResponse('Body too large');
    responses['415'] = problemResponse('Unsupported Content-Type');
  }
  responses.default = problemResponse('Any other error');

  const operation: Record<string, unknown> = {
    operationId: operationIdOf(route),
    summary: route.summary,
    tags: [route.tag],
    security: securityOf(route.auth),
    parameters,
    responses,
  };
  if (route.deprecated) operation.deprecated = true;
  if (route.body) {
    operation.requestBody = { required: true, content: { 'application/json': { schema: toSchema(route.body, 'input') } } };
  } else if (route.rawBody) {
    operation.requestBody = { required: true, content: { [route.rawBody]: { schema: { type: 'string', contentMediaType: route.rawBody } } } };
  }
  return operation;
}

/** The OpenAPI 3.1 document of `routes`. Deterministic: the same routes give the same document. */
export function buildOpenApiDocument(routes: readonly RouteDefinition[], info: OpenApiInfo = {}): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  const tags: string[] = [];
  for (const route of routes) {
    const path = openApiPath(route.path);
    const item = (paths[path] ??= {});
    item[route.method.toLowerCase()] = operationOf(route);
    if (!tags.includes(route.tag)) tags.push(route.tag);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: info.title ?? 'carebridge medical data API',
      version: info.version ?? '1',
      ...(info.description ? { description: info.description } : {}),
    },
    servers: [{ url: info.serverUrl ?? '/' }],
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      schemas: { Problem: PROBLEM_SCHEMA },
    },
  };
}
