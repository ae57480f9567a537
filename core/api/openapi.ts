import { z } from 'zod';
import { webhookMessageSchemas, type WebhookMessageType } from '../../contract/webhooks.js';
import { ERROR_CODES } from '../errors.js';
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
  /** The messages the service POSTs to the account's endpoints (OpenAPI 3.1 webhooks), by `meta.type`. */
  webhooks: Record<string, Record<string, unknown>>;
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
    // Every code the service answers, so generated clients type `code` as a union rather than a string.
    code: { type: 'string', enum: Object.keys(ERROR_CODES) },
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

/** One problem each error status is documented with: the code a client most often sees there. */
const PROBLEM_EXAMPLES: Record<number, { title: string; detail: string; code: keyof typeof ERROR_CODES }> = {
  400: { title: 'Bad Request', detail: 'dob: must be a date (YYYY-MM-DD) in the past', code: 'VALIDATION_FAILED' },
  401: { title: 'Unauthorized', detail: 'Missing or unknown API key (send it in the x-api-key header)', code: 'UNAUTHORIZED' },
  403: { title: 'Forbidden', detail: 'The URL signature does not match; use the URL exactly as it was handed out', code: 'SIGNATURE_INVALID' },
  404: { title: 'Not Found', detail: 'No patient with this id in your account', code: 'PATIENT_NOT_FOUND' },
  412: {
    title: 'Precondition Failed',
    detail: 'The patient has changed since the version given in If-Match; get it again and redo the change on its current version',
    code: 'PRECONDITION_FAILED',
  },
  413: { title: 'Payload Too Large', detail: 'The JSON body is larger than 1 MB', code: 'PAYLOAD_TOO_LARGE' },
  415: { title: 'Unsupported Media Type', detail: 'Send the body as JSON with Content-Type: application/json', code: 'UNSUPPORTED_MEDIA_TYPE' },
  429: { title: 'Too Many Requests', detail: 'Too many requests of this kind for this account; try again in 3 s', code: 'RATE_LIMITED' },
  503: { title: 'Service Unavailable', detail: 'As many renders as the service runs at once are running or waiting; try again in 1 s', code: 'BUSY' },
  500: { title: 'Internal Server Error', detail: 'Something went wrong on our side; quote requestId 0192f1c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f', code: 'INTERNAL' },
};

/** `Retry-After` of a 429 or 503: whole seconds to wait before the same request. */
const RETRY_AFTER_HEADER = { 'Retry-After': { description: 'Whole seconds to wait before sending the request again', schema: { type: 'integer', minimum: 1 } } };

function problemResponse(description: string, status: number) {
  const example = PROBLEM_EXAMPLES[status];
  return {
    description,
    ...(status === 429 || status === 503 ? { headers: RETRY_AFTER_HEADER } : {}),
    content: { 'application/problem+json': { schema: PROBLEM_REF, ...(example ? { example: { status, ...example } } : {}) } },
  };
}

/** `If-Match` of a route that declares `ifMatch`. */
const IF_MATCH_PARAMETER = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description: 'Apply the change only to this version: the ETag (or the eTag field) a read of the record gave. `*` accepts any.',
  schema: { type: 'string' },
};

/** The `ETag` header of a route that declares `etag`. */
const ETAG_HEADER = { ETag: { description: 'Version of the record, quoted; send it as If-Match to change only this version', schema: { type: 'string' } } };

/** A fixed instant for examples, so the document stays deterministic. */
const EXAMPLE_INSTANT = '2026-11-25T09:30:00.000Z';

/**
 * An example value of a JSON schema, built from the schema itself (its examples, defaults, enums, formats
 * and bounds), so every example in the document is one the schema accepts: the test parses each with the
 * route's own zod schema.
 */
export function exampleOf(schema: JsonSchema, name = ''): unknown {
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if ('const' in schema) return schema.const;
  if ('default' in schema) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) {
      const concrete = (options as JsonSchema[]).find((option) => option.type !== 'null') ?? (options[0] as JsonSchema);
      return exampleOf(concrete, name);
    }
  }
  const type = Array.isArray(schema.type) ? ((schema.type as string[]).find((t) => t !== 'null') ?? 'null') : schema.type;
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      return Object.fromEntries(Object.entries(properties).map(([key, property]) => [key, exampleOf(property, key)]));
    }
    case 'array': {
      const items = (schema.items ?? {}) as JsonSchema;
      const count = typeof schema.minItems === 'number' ? Math.max(1, schema.minItems) : 1;
      return Array.from({ length: count }, () => exampleOf(items, name));
    }
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? Math.max(schema.minimum, 1) : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : 1;
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'string':
      return stringExample(schema, name);
    default:
      return {};
  }
}

/** Realistic values for the field names the wire shapes use, so an example reads like an answer. */
const STRING_EXAMPLES: Record<string, string> = {
  firstName: 'Ana',
  lastName: 'Lee',
  name: 'Main Clinic',
  dob: '1980-01-02',
  addressLine1: '1 Main St',
  addressLine2: 'Suite 200',
  city: 'Springfield',
  state: 'IL',
  zip: '62701',
  country: 'USA',
  phone: '2125551234',
  email: 'ana.lee@example.com',
  npi: '1234567893',
  tin: '123456789',
  value: '123456789',
  externalId: 'emr-1042',
  eTag: '1',
  description: 'Primary care clinic',
  reason: 'The uploaded file is no longer stored; start a new bulk request',
  message: 'Query in progress',
  fileName: 'summary.xml',
  mimeType: 'application/xml',
  url: 'https://carebridge.example.com/medical/v1/document/download?exp=1764063000&sig=…',
  uploadUrl: 'https://carebridge.example.com/medical/v1/patient/bulk/0192f1c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f/upload?exp=1764063000&sig=…',
  result: 'https://carebridge.example.com/medical/v1/patient/bulk/0192f1c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f/result?exp=1764063000&sig=…',
  webhookUrl: 'https://hooks.example.com/carebridge',
  webhookKey: 'Zk3q9wLx2VbT7nRc4HsY8mPa1uJe6GdK0oQiWfNtBzM',
  webhookSigningSecret: 'whsec_WmszcTl3THgyVmJUN25SYzRIc1k4bVBhMXVKZTZHZEswb1FpV2ZOdEJ6TQ==',
};

const INSTANT_FIELDS = /^(dateCreated|createdAt|updatedAt|startedAt|when|at|lastAttemptAt|nextAttemptAt)$/;

function stringExample(schema: JsonSchema, name: string): string {
  if (name in STRING_EXAMPLES) {
    const known = STRING_EXAMPLES[name]!;
    const fits = (typeof schema.minLength !== 'number' || known.length >= schema.minLength) && (typeof schema.maxLength !== 'number' || known.length <= schema.maxLength);
    const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern) : undefined;
    if (fits && (!pattern || pattern.test(known))) return known;
  }
  if (INSTANT_FIELDS.test(name)) return EXAMPLE_INSTANT;
  switch (schema.format) {
    case 'date-time':
      return EXAMPLE_INSTANT;
    case 'date':
      return '1980-01-02';
    case 'uuid':
      return '0192f1c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f';
    case 'uri':
    case 'url':
      return `https://carebridge.example.com/medical/v1/${name || 'resource'}`;
    case 'email':
      return 'ana@example.com';
    default:
      break;
  }
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const text = name === 'id' || name.endsWith('Id') || name.endsWith('Ids') ? '0192f1c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f' : name || 'text';
  return text.length >= minLength ? text : text.padEnd(minLength, 'x');
}

/** A file answered as it is: text for text media types, bytes for the others. */
function rawSchemaOf(mediaType: string): Record<string, unknown> {
  return mediaType.startsWith('text/') ? { type: 'string' } : { type: 'string', format: 'binary' };
}

function successContent(route: RouteDefinition): Record<string, unknown> {
  if (route.success?.mediaType === 'application/problem+json') {
    // A route that answers only a problem (an operation not served): its status is the example's.
    const status = route.success.status;
    return { schema: PROBLEM_REF, example: { status, title: 'Not Implemented', detail: `${route.summary}`, code: 'NOT_IMPLEMENTED' } };
  }
  if (!route.success?.schema) return { schema: rawSchemaOf(route.success?.mediaType ?? 'application/json') };
  const schema = toSchema(route.success.schema, 'output');
  return { schema, example: route.success.example ?? exampleOf(schema) };
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
  if (route.ifMatch) parameters.push(IF_MATCH_PARAMETER);

  const successStatus = route.success?.status ?? 200;
  const success =
    successStatus === 204
      ? { description: 'Done; no content' }
      : {
          description: successStatus === 501 ? 'Not served by carebridge; `detail` says why' : 'Success',
          ...(route.etag ? { headers: ETAG_HEADER } : {}),
          content: {
            [route.success?.mediaType ?? 'application/json']: successContent(route),
            ...Object.fromEntries((route.success?.otherMediaTypes ?? []).map((mediaType) => [mediaType, { schema: rawSchemaOf(mediaType) }])),
          },
        };

  const responses: Record<string, unknown> = { [String(successStatus)]: success };
  if (route.query || route.body || route.rawBody) responses['400'] = problemResponse('Invalid input; `detail` names the field', 400);
  if (route.auth === 'apiKey' || route.auth === 'signedAndApiKey') responses['401'] = problemResponse('Missing or unknown API key', 401);
  if (route.auth === 'signed' || route.auth === 'signedAndApiKey') responses['403'] = problemResponse('The URL signature does not match', 403);
  if (route.path.includes(':')) responses['404'] = problemResponse('Not found, or not in your account', 404);
  if (route.ifMatch) responses['412'] = problemResponse('If-Match names a version that is no longer the current one; nothing was changed', 412);
  if (route.body || route.rawBody) {
    responses['413'] = problemResponse('Body too large', 413);
    responses['415'] = problemResponse('Unsupported Content-Type', 415);
  }
  if (route.auth === 'signed') {
    // A signed URL is issued to an account, and its requests count against that account's limit.
    responses['429'] = problemResponse("Too many requests of this route's class for the account the URL was issued to (`RATE_LIMITED`); wait `Retry-After` seconds", 429);
  } else if (route.auth === 'apiKey' || route.auth === 'signedAndApiKey') {
    responses['429'] = problemResponse(
      "Too many requests of this route's class for the account (`RATE_LIMITED`), or too many wrong API keys from this address (`TOO_MANY_FAILED_ATTEMPTS`); wait `Retry-After` seconds",
      429,
    );
  }
  responses['503'] = problemResponse(
    'Not now: the service is starting or its database does not answer (`STARTING`, `UNAVAILABLE`), or as many renders as it runs at once are running and waiting (`BUSY`); wait `Retry-After` seconds',
    503,
  );
  responses.default = problemResponse('Any other error', 500);

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

/** What each webhook message says, for its entry in the document's `webhooks`. */
const WEBHOOK_SUMMARIES: Record<WebhookMessageType, string> = {
  'medical.document-download': "A document query's documents were downloaded (or the download failed)",
  'medical.document-conversion': "A document query's C-CDA documents were converted to FHIR (or the conversion failed)",
  'medical.document-bulk-download-urls': "Download URLs of all of a patient's documents",
  'medical.consolidated-data': "A consolidated data query's result: a FHIR bundle holding the URLs of the data",
  'medical.bulk-patient-create': 'A bulk patient create request is processing, completed (with the result CSV) or failed',
  'network-query.hie': "A network query's HIE source ended; its consolidated data is at consolidatedDataUrl",
  'network-query.pharmacy': "A network query's pharmacy source ended; its consolidated data is at consolidatedDataUrl",
  'network-query.lab': "A network query's laboratory source ended; its consolidated data is at consolidatedDataUrl",
  'webhook.endpoint-disabled': 'The service turned one of the account\'s other endpoints off (failing for WEBHOOK_DISABLE_AFTER_DAYS, or 410 Gone)',
  ping: 'Sent when an endpoint is set: answer {"pong": <the ping value>} within 2 s to have it enabled',
};

/** Headers every webhook request carries (Standard Webhooks, and the Metriport-compatible signature). */
const WEBHOOK_HEADERS = [
  { name: 'webhook-id', description: 'meta.messageId: the same on every attempt and endpoint; drop repeats by it' },
  { name: 'webhook-timestamp', description: 'Unix seconds of the attempt' },
  { name: 'webhook-signature', description: 'Space-separated `v1,<base64 HMAC-SHA256>` values, one per secret (two during a rotation)' },
  { name: 'x-metriport-signature', description: "Hex HMAC-SHA256 of the raw body with the endpoint's current secret" },
].map(({ name, description }) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } }));

function webhookEntries(): OpenApiDocument['webhooks'] {
  const entries: OpenApiDocument['webhooks'] = {};
  for (const [type, schema] of Object.entries(webhookMessageSchemas) as [WebhookMessageType, z.ZodType][]) {
    entries[type] = {
      post: {
        operationId: `webhook${type.split(/[^A-Za-z0-9]+/).map((word) => word[0]!.toUpperCase() + word.slice(1)).join('')}`,
        summary: WEBHOOK_SUMMARIES[type],
        tags: ['Webhooks'],
        parameters: WEBHOOK_HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: toSchema(schema, 'output') } } },
        responses: {
          '200': {
            description:
              type === 'ping'
                ? 'The pong: {"pong": <the ping value>}'
                : 'Any 2xx within 4 s acknowledges the message; anything else (or no answer) is retried on the schedule',
          },
        },
      },
    };
  }
  return entries;
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
    tags: [...tags, 'Webhooks'].map((name) => ({ name })),
    paths,
    webhooks: webhookEntries(),
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      schemas: { Problem: PROBLEM_SCHEMA },
    },
  };
}
