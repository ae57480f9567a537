import fc from 'fast-check';
import { expect } from 'vitest';
import { buildOpenApiDocument } from '../../core/api/openapi.js';
import { apiRoutes } from '../../core/api/routes/index.js';
import { ERROR_CODES } from '../../core/errors.js';
import { deepJsonText, encodeSegment, hostileJson, hostileString, isSendableHeaderValue } from '../arbitraries/hostile.js';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, SAMPLE_ADDRESS } from '../support/api.js';
import type { HostCall, HostDriver, HostResponse } from '../support/driver.js';

/*
 * Every route of the OpenAPI document, walked with hostile values: the service answers each with a success
 * or a problem+json carrying a known code, never a 5xx, and whatever it accepted can be read back.
 */

type JsonSchema = { type?: string | string[]; properties?: Record<string, JsonSchema>; items?: JsonSchema; anyOf?: JsonSchema[]; enum?: unknown[] };

interface Operation {
  method: HostCall['method'];
  /** `/medical/v1/patient/{id}` */
  template: string;
  pathParams: string[];
  queryParams: string[];
  bodySchema?: JsonSchema;
  /** The document declares the operation not served: its answer is a 501 problem. */
  notServed: boolean;
}

const KNOWN_CODES = new Set(Object.keys(ERROR_CODES));
/** Where a webhook URL the fuzzer makes up may point: loopback, on a port nothing listens on. */
const SAFE_WEBHOOK_URL = 'http://127.0.0.1:9/carebridge-fuzz';

function operationsOf(): Operation[] {
  const document = buildOpenApiDocument(apiRoutes);
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(document.paths)) {
    for (const [method, raw] of Object.entries(item)) {
      const operation = raw as {
        parameters?: { name: string; in: string }[];
        requestBody?: { content: Record<string, { schema: JsonSchema }> };
        responses?: Record<string, unknown>;
      };
      const parameters = operation.parameters ?? [];
      const json = operation.requestBody?.content['application/json'];
      operations.push({
        method: method.toUpperCase() as HostCall['method'],
        template,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => p.name),
        ...(json ? { bodySchema: json.schema } : {}),
        notServed: operation.responses?.['501'] !== undefined,
      });
    }
  }
  return operations;
}

/** Path and query values: hostile, but short enough to fit a request line. */
const hostileIdentifier = hostileString.filter((value) => value.length <= 2_048);

/** A value for a schema: its own type most of the time (so validation gets past the shape), hostile always. */
function valueFor(schema: JsonSchema | undefined, depth: number): fc.Arbitrary<unknown> {
  const type = Array.isArray(schema?.type) ? schema.type[0] : (schema?.type ?? schema?.anyOf?.[0]?.type);
  const wrongType = depth > 2 ? hostileString : hostileJson;
  if (schema?.enum && schema.enum.length > 0) return fc.oneof(fc.constantFrom(...schema.enum), wrongType);
  switch (type) {
    case 'object':
      return fc.oneof({ weight: 3, arbitrary: objectFor(schema!, depth + 1) }, { weight: 1, arbitrary: wrongType });
    case 'array':
      return fc.oneof({ weight: 3, arbitrary: fc.array(valueFor(schema!.items, depth + 1), { maxLength: 3 }) }, { weight: 1, arbitrary: wrongType });
    case 'number':
    case 'integer':
      return fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), wrongType);
    case 'boolean':
      return fc.oneof(fc.boolean(), wrongType);
    default:
      return fc.oneof({ weight: 3, arbitrary: hostileString }, { weight: 1, arbitrary: wrongType });
  }
}

function objectFor(schema: JsonSchema, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(schema.properties ?? {});
  if (names.length === 0 || depth > 4) return fc.dictionary(fc.string({ maxLength: 8 }), hostileJson, { maxKeys: 3 });
  return fc.record(Object.fromEntries(names.map((name) => [name, valueFor(schema.properties![name], depth)])), { requiredKeys: [] });
}

/** A made-up URL must never send traffic off this machine: any http(s) URL that parses is pointed at loopback. */
function keepOnLoopback(value: unknown): unknown {
  if (typeof value === 'string') {
    try {
      const url = new URL(value);
      return url.protocol === 'http:' || url.protocol === 'https:' ? SAFE_WEBHOOK_URL : value;
    } catch {
      return value;
    }
  }
  if (Array.isArray(value)) return value.map(keepOnLoopback);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, keepOnLoopback(item)]));
  return value;
}

const PATIENT_BODY = { firstName: 'Fuzz', lastName: 'Target', dob: '1980-01-01', genderAtBirth: 'F', address: [SAMPLE_ADDRESS] };
const FACILITY_BODY = { name: 'Fuzz Clinic', npi: '1234567893', address: SAMPLE_ADDRESS };
/** Valid bodies of the writes, so one hostile field at a time is what decides the answer. */
const VALID_BODIES: Record<string, Record<string, unknown>> = {
  'POST /medical/v1/organization': { name: 'Fuzz Org', type: 'ambulatory', location: SAMPLE_ADDRESS },
  'PUT /medical/v1/organization/{id}': { name: 'Fuzz Org', type: 'ambulatory', location: SAMPLE_ADDRESS },
  'POST /medical/v1/facility': FACILITY_BODY,
  'PUT /medical/v1/facility/{id}': FACILITY_BODY,
  'POST /medical/v1/cohort': { name: 'Fuzz cohort', description: 'about' },
  'PUT /medical/v1/cohort/{id}': { name: 'Fuzz cohort', description: 'about' },
  'POST /medical/v1/patient': PATIENT_BODY,
  'PUT /medical/v1/patient/{id}': PATIENT_BODY,
  'POST /settings': { webhookUrl: SAFE_WEBHOOK_URL },
  'POST /medical/v1/document/query': { metadata: { source: 'fuzz' } },
  'POST /medical/v1/document/upload': { resourceType: 'DocumentReference', description: 'Fuzz', content: [{ attachment: { contentType: 'application/xml', title: 'fuzz.xml' } }] },
  'POST /medical/v1/patient/{id}/consolidated/query': { metadata: { source: 'fuzz' } },
};

/** Every path to a string in a value (`['address', '0', 'city']`). */
function stringPaths(value: unknown, at: string[] = []): string[][] {
  if (typeof value === 'string') return [at];
  if (Array.isArray(value)) return value.flatMap((item, i) => stringPaths(item, [...at, String(i)]));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => stringPaths(item, [...at, key]));
  return [];
}

function withValueAt(value: unknown, path: readonly string[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((item, i) => (String(i) === head ? withValueAt(item, rest, replacement) : item));
  const record = value as Record<string, unknown>;
  return { ...record, [head!]: withValueAt(record[head!], rest, replacement) };
}

/** A valid body with one of its strings replaced by a hostile value (of any type). */
function mutatedBody(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  const paths = stringPaths(valid);
  return fc.tuple(fc.constantFrom(...paths), fc.oneof({ weight: 4, arbitrary: hostileString }, { weight: 1, arbitrary: hostileJson })).map(([path, replacement]) => withValueAt(valid, path, replacement));
}

type BodyChoice = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'text'; text: string };

function bodyFor(operation: Operation): fc.Arbitrary<BodyChoice> {
  const none = fc.constant<BodyChoice>({ kind: 'none' });
  const junk = hostileJson.map<BodyChoice>((value) => ({ kind: 'json', value }));
  const deep = fc.tuple(fc.integer({ min: 60, max: 6_000 }), fc.constantFrom<'[' | '{'>('[', '{')).map<BodyChoice>(([depth, open]) => ({ kind: 'text', text: deepJsonText(depth, open) }));
  // A GET carries no body: fetch cannot send one, and HTTP gives it no meaning.
  if (operation.method === 'GET') return none;
  const valid = VALID_BODIES[`${operation.method} ${operation.template}`];
  if (!operation.bodySchema && !valid) return fc.oneof({ weight: 4, arbitrary: none }, { weight: 1, arbitrary: junk });
  const shaped = objectFor(operation.bodySchema ?? {}, 0).map<BodyChoice>((value) => ({ kind: 'json', value }));
  const mutated = valid ? mutatedBody(valid).map<BodyChoice>((value) => ({ kind: 'json', value })) : shaped;
  return fc.oneof({ weight: 5, arbitrary: mutated }, { weight: 3, arbitrary: shaped }, { weight: 2, arbitrary: junk }, { weight: 1, arbitrary: deep }, { weight: 1, arbitrary: none });
}

interface FuzzCall {
  operation: Operation;
  pathValues: (string | number)[];
  /** A number picks one of the ids handed out so far. */
  query: Record<string, string | string[] | number | undefined>;
  body: BodyChoice;
  contentType: string | undefined;
  key: 'valid' | 'missing' | 'wrong';
}

const contentTypes = fc.constantFrom(undefined, 'application/json', 'text/plain', 'application/json; charset=utf-16', 'application/x-www-form-urlencoded', 'application/evil+json', 'multipart/form-data; boundary=x');

function callFor(operations: readonly Operation[]): fc.Arbitrary<FuzzCall> {
  return fc.constantFrom(...operations).chain((operation) =>
    fc.record({
      operation: fc.constant(operation),
      // A number picks one of the ids the service handed out so far, so routes are reached past their 404.
      pathValues: fc.tuple(...operation.pathParams.map(() => fc.oneof(fc.nat(), fc.nat(), hostileIdentifier))).map((values) => values as (string | number)[]),
      query: fc.tuple(
        fc.record(
          Object.fromEntries(
            operation.queryParams.map((name) => [
              name,
              fc.oneof(
                { weight: 3, arbitrary: fc.nat() },
                { weight: 2, arbitrary: fc.constantFrom('true', 'false', 'json', 'html', 'pdf', '2020-01-01', '10') },
                { weight: 2, arbitrary: hostileIdentifier },
                { weight: 1, arbitrary: fc.array(hostileIdentifier, { minLength: 2, maxLength: 3 }) },
              ),
            ]),
          ),
          { requiredKeys: [] },
        ),
        fc.option(fc.record({ unexpected: hostileIdentifier }), { freq: 4 }),
      ).map(([declared, extra]) => ({ ...declared, ...extra })),
      body: bodyFor(operation),
      contentType: contentTypes,
      key: fc.constantFrom<FuzzCall['key']>('valid', 'valid', 'valid', 'valid', 'valid', 'valid', 'valid', 'missing', 'wrong'),
    }),
  );
}

/** Ids the service handed out (and a few it never did), picked by index. */
class IdPool {
  readonly ids: string[] = [];
  add(value: unknown): void {
    if (typeof value === 'string' && value.length <= 200 && !this.ids.includes(value)) this.ids.push(value);
  }
  pick(index: number): string {
    return this.ids.length === 0 ? 'none' : this.ids[index % this.ids.length]!;
  }
}

function expectWellFormed(response: HostResponse, what: string, notServed = false): void {
  if (notServed && response.status === 501) expect(response.body?.code, what).toBe('NOT_IMPLEMENTED');
  else expect(response.status, `${what} -> ${response.status} ${response.text.slice(0, 500)}`).toBeLessThan(500);
  if (response.status >= 400) {
    expect(response.headers['content-type'], what).toMatch(/^application\/problem\+json/);
    expect(KNOWN_CODES.has(response.body?.code), `${what}: unknown code ${String(response.body?.code)}`).toBe(true);
    expect(response.body.status, what).toBe(response.status);
  }
}

/** What was accepted reads back: the lists and every id handed out answer a success or a 404, never a 5xx. */
async function expectReadable(api: AccountApi, ids: readonly string[]): Promise<void> {
  for (const path of ['/medical/v1/facility', '/medical/v1/cohort', '/medical/v1/organization', '/settings', '/settings/webhook']) {
    const response = await api.call('GET', path);
    expectWellFormed(response, `read back GET ${path}`);
    expect(response.status < 300 || response.status === 404, `read back GET ${path}: ${response.status} ${response.text.slice(0, 300)}`).toBe(true);
  }
  for (const id of ids) {
    for (const path of [`/medical/v1/facility/${id}`, `/medical/v1/cohort/${id}`, `/medical/v1/patient/${id}`, `/medical/v1/patient/bulk/${id}`]) {
      const response = await api.call('GET', path);
      expectWellFormed(response, `read back GET ${path}`);
    }
    const documents = await api.call('GET', '/medical/v1/document', { query: { patientId: id } });
    expectWellFormed(documents, 'read back GET /medical/v1/document');
  }
}

function describeCall(call: FuzzCall, path: string): string {
  return `${call.operation.method} ${path} (${call.operation.template})`;
}

export function defineApiFuzzGroup({ describe, test, makeHost, numRuns }: HostSpecOptions): void {
  const operations = operationsOf();
  // A few thousand requests in all by default; CAREBRIDGE_FUZZ_RUNS asks for more (or fewer).
  const runs = Number(process.env.CAREBRIDGE_FUZZ_RUNS ?? 0) || Math.max(300, (numRuns ?? 20) * 60);

  describe('API fuzz: every route of the OpenAPI document with hostile values', () => {
    test('the document lists every route the handler serves', () => {
      expect(operations).toHaveLength(apiRoutes.length);
    });

    test(`no 5xx, every error a problem+json with a known code, every accepted write readable (${runs} requests)`, async () => {
      await withHost(makeHost, async (host: HostDriver) => {
        const api = await AccountApi.create(host);
        const facility = await api.createFacility();
        const patient = await api.call('POST', '/medical/v1/patient', {
          query: { facilityId: facility.id },
          body: { firstName: 'Fuzz', lastName: 'Target', dob: '1980-01-01', genderAtBirth: 'F', address: SAMPLE_ADDRESS },
        });
        expect(patient.status, patient.text).toBe(201);
        const pool = new IdPool();
        pool.add(facility.id);
        pool.add(patient.body.id);
        pool.add((await api.createCohort()).id);
        pool.add('00000000-0000-7000-8000-00000000ffff');

        await fc.assert(
          fc.asyncProperty(callFor(operations), async (call) => {
            const values = call.pathValues.map((value) => (typeof value === 'number' ? pool.pick(value) : value));
            let index = 0;
            const path = call.operation.template.replace(/\{[^}]+\}/g, () => encodeSegment(String(values[index++])));
            const request: HostCall = {
              method: call.operation.method,
              path,
              query: keepOnLoopback(
                Object.fromEntries(Object.entries(call.query).map(([name, value]) => [name, typeof value === 'number' ? pool.pick(value) : value])),
              ) as Record<string, string | string[] | undefined>,
              ...(call.key === 'valid' ? { apiKey: api.apiKey } : call.key === 'wrong' ? { apiKey: 'cb_not-a-key' } : {}),
              ...(call.body.kind === 'json' ? { body: keepOnLoopback(call.body.value) } : call.body.kind === 'text' ? { jsonText: call.body.text } : {}),
              ...(call.contentType && call.body.kind !== 'none' && isSendableHeaderValue(call.contentType) ? { headers: { 'content-type': call.contentType } } : {}),
            };
            const response = await host.call(request);
            expectWellFormed(response, describeCall(call, path), call.operation.notServed);
            if (response.status < 300) {
              const before = pool.ids.length;
              for (const field of ['id', 'requestId', 'documentReferenceId']) pool.add(response.body?.[field]);
              if (call.operation.method !== 'GET') {
                await host.settle();
                await expectReadable(api, [...pool.ids.slice(before), ...values.filter((value) => pool.ids.includes(String(value))).map(String)]);
              }
            }
          }),
          { numRuns: runs, seed: Number(process.env.CAREBRIDGE_FUZZ_SEED ?? Date.now() % 2 ** 31), verbose: 1 },
        );
        await host.settle();
        await expectReadable(api, pool.ids);
      });
    }, 600_000);

    test('a document file PUT to its upload URL, whatever its bytes and Content-Type, is stored or refused with a problem, never a 5xx', async () => {
      await withHost(makeHost, async (host: HostDriver) => {
        const api = await AccountApi.create(host);
        const facility = await api.createFacility();
        const patient = await api.call('POST', '/medical/v1/patient', {
          query: { facilityId: facility.id },
          body: { firstName: 'Fuzz', lastName: 'Upload', dob: '1980-01-01', genderAtBirth: 'F', address: SAMPLE_ADDRESS },
        });
        const contentType = fc.oneof(
          fc.constantFrom('application/xml', 'text/xml', 'application/pdf', 'text/plain', 'application/octet-stream', 'application/xml; charset=utf-16', 'image/png', ''),
          fc.string({ maxLength: 40 }).filter(isSendableHeaderValue),
          fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 40 }).filter(isSendableHeaderValue),
        );
        const bytes = fc.oneof(
          fc.uint8Array({ maxLength: 2_048 }),
          fc.constantFrom(...XML_PROBES),
          hostileString.filter((text) => text.length < 20_000),
        );
        await fc.assert(
          fc.asyncProperty(contentType, bytes, async (type, body) => {
            const created = await api.call('POST', '/medical/v1/document/upload', {
              query: { patientId: patient.body.id },
              body: { resourceType: 'DocumentReference', content: [{ attachment: { contentType: 'application/xml' } }] },
            });
            expect(created.status, created.text).toBe(200);
            let put: HostResponse;
            try {
              put = await host.fetchUrl(created.body.uploadUrl, { method: 'PUT', ...(type ? { contentType: type } : {}), body });
            } catch (error) {
              // The HTTP client itself would not send this Content-Type: nothing reached the service.
              if ((error as { cause?: { code?: string } }).cause?.code === 'UND_ERR_INVALID_ARG') return;
              throw error;
            }
            expectWellFormed(put, `PUT document (${JSON.stringify(type)})`);
            await host.settle();
            const listed = await api.call('GET', '/medical/v1/document', { query: { patientId: patient.body.id } });
            expectWellFormed(listed, 'list documents');
            expect(listed.status).toBe(200);
            const consolidated = await api.call('GET', `/medical/v1/patient/${patient.body.id}/consolidated`);
            expectWellFormed(consolidated, 'consolidated');
            for (const document of put.status === 200 ? listed.body.documents.slice(-1) : []) {
              const link = await api.call('GET', '/medical/v1/document/download-url', { query: { fileName: document.content[0].attachment.title } });
              expect(link.status, link.text).toBe(200);
              const file = await host.fetchUrl(link.body.url, { method: 'GET' });
              expect(file.status, file.text.slice(0, 200)).toBe(200);
            }
          }),
          { numRuns: Math.max(40, Math.round(runs / 10)), seed: Number(process.env.CAREBRIDGE_FUZZ_SEED ?? Date.now() % 2 ** 31) },
        );
      });
    }, 600_000);
  });
}

/** XML that attacks a parser: entity expansion, external entities, depth, broken encodings. */
const XML_PROBES = [
  '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;"><!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;"><!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;"><!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;"><!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;"><!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">]><ClinicalDocument xmlns="urn:hl7-org:v3"><title>&lol9;</title></ClinicalDocument>',
  '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><ClinicalDocument xmlns="urn:hl7-org:v3"><title>&xxe;</title></ClinicalDocument>',
  `<ClinicalDocument xmlns="urn:hl7-org:v3">${'<a>'.repeat(5_000)}${'</a>'.repeat(5_000)}</ClinicalDocument>`,
  '<ClinicalDocument xmlns="urn:hl7-org:v3"><title>\u0000</title><recordTarget/><component/></ClinicalDocument>',
  '<ClinicalDocument xmlns="urn:hl7-org:v3"><title>&#0;&#xD800;</title></ClinicalDocument>',
  '<?xml version="1.0" encoding="UTF-16"?><ClinicalDocument/>',
  '<ClinicalDocument xmlns="urn:hl7-org:v3"><component><structuredBody><component><section><entry><observation><value xsi:type="PQ" value="1e999" unit="mg"/></observation></entry></section></component></structuredBody></component></ClinicalDocument>',
  '<ClinicalDocument',
  '',
];
