import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import Koa from 'koa';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { SteppedClock } from '../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../adapters/ids/sequential.ids.js';
import { MemoryHost } from '../hosts/memory/memory.host.js';
import { carebridgeKoaMiddleware } from './koa.js';
import { CONSOLE_ASSETS } from './console.js';
import { capturingLogger, expectProblem, SAMPLE_ADDRESS, SPEC_NOW, startMemoryKoa, VALID_NPI, WRAPPERS, type MemoryKoa, type WrapperName } from '../spec/support/http-testing.js';

const FACILITY = { name: 'Main Clinic', npi: VALID_NPI, address: SAMPLE_ADDRESS };
const CSV = 'firstName,lastName,dob,gender,addressLine1,city,state,zip\nAnn,Lee,1970-01-01,F,1 Main St,Springfield,IL,62701\n';

let open: MemoryKoa[] = [];
afterEach(async () => {
  await Promise.all(open.map((server) => server.close()));
  open = [];
});

let wrapper: WrapperName = 'koa';

async function start(options: Parameters<typeof startMemoryKoa>[0] = {}) {
  const server = await startMemoryKoa({ wrapper, ...options });
  open.push(server);
  const { apiKey, accountId } = await server.host.createAccount('Koa Test');
  return { ...server, apiKey, accountId };
}

/** A body sent chunked (no Content-Length), `chunks` pieces of `size` bytes. */
function chunked(size: number, chunks: number, byte = 0x20): ReadableStream<Uint8Array> {
  return Readable.toWeb(Readable.from((function* () {
    for (let i = 0; i < chunks; i++) yield new Uint8Array(size).fill(byte);
  })())) as ReadableStream<Uint8Array>;
}

function streamOf(text: string): ReadableStream<Uint8Array> {
  return Readable.toWeb(Readable.from([Buffer.from(text)])) as ReadableStream<Uint8Array>;
}

// Every wrapper of the one translation answers alike: the same limits, problems and access log.
describe.each(WRAPPERS)('%s wrapper', (name) => {
  beforeEach(() => {
    wrapper = name;
  });
  afterEach(() => {
    wrapper = 'koa';
  });

  describe('JSON bodies', () => {
    test('application/json (with parameters) is parsed; other media types are 415', async () => {
      const { url, apiKey } = await start();
      const post = (contentType: string | undefined, body: string) =>
        fetch(`${url}/medical/v1/facility`, { method: 'POST', headers: { 'x-api-key': apiKey, ...(contentType ? { 'content-type': contentType } : {}) }, body });

      const created = await post('application/json; charset=utf-8', JSON.stringify(FACILITY));
      expect(created.status).toBe(201);
      expect(created.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await created.json()).toMatchObject({ name: 'Main Clinic', npi: VALID_NPI });

      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'text/csv', 'multipart/form-data; boundary=x']) {
        await expectProblem(await post(type, JSON.stringify(FACILITY)), 415, 'UNSUPPORTED_MEDIA_TYPE');
      }
      // A Blob body without a type: fetch sends no Content-Type at all.
      const untyped = await fetch(`${url}/medical/v1/facility`, { method: 'POST', headers: { 'x-api-key': apiKey }, body: new Blob([JSON.stringify(FACILITY)]) });
      await expectProblem(untyped, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    test('malformed JSON is a 400 problem that does not echo the body', async () => {
      const { url, apiKey } = await start();
      for (const text of ['{"name": "Jane Secret-Name",', '{name: 1}', '[1, 2', 'undefined']) {
        const response = await fetch(`${url}/medical/v1/patient`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: text });
        const problem = await expectProblem(response, 400, 'BAD_REQUEST');
        expect(JSON.stringify(problem)).not.toContain('Secret');
        expect(JSON.stringify(problem)).not.toContain('name');
      }
      // An empty JSON body is an empty object to the handler: the schema names what is missing.
      const empty = await fetch(`${url}/medical/v1/facility`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: '' });
      expect((await expectProblem(empty, 400, 'VALIDATION_FAILED')).detail).toContain('name');
    });

    test('bodies over 1 MB are 413, declared or streamed; just under is accepted; the connection stays usable', async () => {
      const { url, apiKey } = await start();
      const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
      // Unknown fields are stripped by the schema, so padding makes a large but valid body.
      const under = JSON.stringify({ ...FACILITY, padding: 'x'.repeat(1024 * 1024 - 200) });
      expect(Buffer.byteLength(under)).toBeLessThanOrEqual(1024 * 1024);
      expect((await fetch(`${url}/medical/v1/facility`, { method: 'POST', headers, body: under })).status).toBe(201);

      const over = JSON.stringify({ ...FACILITY, padding: 'x'.repeat(1024 * 1024) });
      await expectProblem(await fetch(`${url}/medical/v1/facility`, { method: 'POST', headers, body: over }), 413, 'PAYLOAD_TOO_LARGE');

      const streamed = await fetch(`${url}/medical/v1/facility`, { method: 'POST', headers, body: chunked(64 * 1024, 20), duplex: 'half' } as RequestInit);
      await expectProblem(streamed, 413, 'PAYLOAD_TOO_LARGE');

      // The service still answers normally afterwards.
      expect((await fetch(`${url}/medical/v1/facility`, { headers: { 'x-api-key': apiKey } })).status).toBe(200);
    });

    test('a body sent to an unknown route or with a wrong method is never parsed: 404 and 405 problems', async () => {
      const { url, apiKey } = await start();
      const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
      await expectProblem(await fetch(`${url}/medical/v1/nothing-here`, { method: 'POST', headers, body: '{broken' }), 404, 'ROUTE_NOT_FOUND');
      const wrongMethod = await fetch(`${url}/medical/v1/facility`, { method: 'DELETE', headers, body: '{broken' });
      expect(wrongMethod.headers.get('allow')).toContain('GET');
      await expectProblem(wrongMethod, 405, 'METHOD_NOT_ALLOWED');
    });
  });

  describe('never a 500 for bad input', () => {
    test('property: any method, path, content type and body gets a 2xx or a 4xx problem, never a 5xx', async () => {
      const { url, apiKey } = await start();
      const segment = fc.oneof(fc.constantFrom('patient', 'facility', 'cohort', 'bulk', 'hie-opt-out', 'upload', 'medical', 'v1', '%E0%A4%A', '..', ''), fc.string({ maxLength: 12 }));
      const path = fc.oneof(
        fc.array(segment, { maxLength: 6 }).map((parts) => `/medical/v1/${parts.map(encodeURIComponent).join('/')}`),
        fc.constantFrom('/medical/v1/facility', '/medical/v1/patient', '/medical/v1/patient/bulk', '/medical/v1/cohort', '/medical/v1/organization'),
      );
      const body = fc.oneof(fc.constant(undefined), fc.json({ maxDepth: 3 }), fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 200 }));
      const contentType = fc.constantFrom(undefined, 'application/json', 'application/json; charset=latin1', 'text/csv', 'text/plain', 'application/x-www-form-urlencoded');
      const query = fc.dictionary(fc.constantFrom('facilityId', 'dryRun', 'hieOptOut', 'count', 'cursor', 'exp', 'sig', 'acct'), fc.string({ maxLength: 20 }), { maxKeys: 3 });
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'), path, query, contentType, body, fc.boolean(), async (method, pathname, params, type, payload, withKey) => {
          const target = new URL(pathname, url);
          for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
          const hasBody = payload !== undefined && method !== 'GET';
          const response = await fetch(target, {
            method,
            headers: { ...(withKey ? { 'x-api-key': apiKey } : {}), ...(type ? { 'content-type': type } : {}) },
            ...(hasBody ? { body: typeof payload === 'string' || payload instanceof Uint8Array ? payload : JSON.stringify(payload) } : {}),
          });
          expect(response.status, `${method} ${target.pathname}`).toBeLessThan(500);
          if (response.status >= 400) await expectProblem(response, response.status);
          else await response.arrayBuffer();
        }),
        { numRuns: 150 },
      );
    });
  });

  describe('CSV upload', () => {
    async function startBulk(server: Awaited<ReturnType<typeof start>>) {
      const headers = { 'x-api-key': server.apiKey, 'content-type': 'application/json' };
      expect((await fetch(`${server.url}/medical/v1/facility`, { method: 'POST', headers, body: JSON.stringify(FACILITY) })).status).toBe(201);
      const started = await fetch(`${server.url}/medical/v1/patient/bulk`, { method: 'POST', headers: { 'x-api-key': server.apiKey } });
      expect(started.status).toBe(200);
      return (await started.json()) as { requestId: string; uploadUrl: string };
    }

    test('the file is streamed to the core; past the cap it is 413 (declared or streamed) and the URL stays usable', async () => {
      const server = await start({ uploadLimitBytes: 4_096 });
      const { requestId, uploadUrl } = await startBulk(server);
      const headers = { 'x-api-key': server.apiKey, 'content-type': 'text/csv' };

      const declared = await fetch(uploadUrl, { method: 'PUT', headers, body: CSV + 'x'.repeat(5_000) });
      expect((await expectProblem(declared, 413, 'PAYLOAD_TOO_LARGE')).detail).toContain('4 KB');
      const streamed = await fetch(uploadUrl, { method: 'PUT', headers, body: chunked(1_024, 8, 0x41), duplex: 'half' } as RequestInit);
      await expectProblem(streamed, 413, 'PAYLOAD_TOO_LARGE');

      const status = await fetch(`${server.url}/medical/v1/patient/bulk/${requestId}`, { headers: { 'x-api-key': server.apiKey } });
      expect(((await status.json()) as { status: string }).status).toBe('waiting');
      // Chunked too: the cap counts bytes as they stream, it does not need a Content-Length.
      const accepted = await fetch(uploadUrl, { method: 'PUT', headers, body: streamOf(CSV), duplex: 'half' } as RequestInit);
      expect(accepted.status).toBe(200);
      expect(await accepted.json()).toMatchObject({ status: 'processing', total: 1 });

      await server.host.settle();
      const done = (await (await fetch(`${server.url}/medical/v1/patient/bulk/${requestId}`, { headers: { 'x-api-key': server.apiKey } })).json()) as { result: string };
      const result = await fetch(done.result);
      expect(result.status).toBe(200);
      expect(result.headers.get('content-type')).toMatch(/^text\/csv/);
      expect(result.headers.get('content-disposition')).toContain(`bulk-${requestId}-result.csv`);
      expect((await result.text()).split(/\r?\n/)[0]).toBe('firstName,lastName,dob,gender,addressLine1,city,state,zip,metriportId,status,reason');
    });

    test('a JSON content type on the upload is 415 from the core, and the URL is not used up', async () => {
      const server = await start();
      const { uploadUrl } = await startBulk(server);
      await expectProblem(await fetch(uploadUrl, { method: 'PUT', headers: { 'x-api-key': server.apiKey, 'content-type': 'application/json' }, body: '{}' }), 415);
      expect((await fetch(uploadUrl, { method: 'PUT', headers: { 'x-api-key': server.apiKey, 'content-type': 'text/csv' }, body: CSV })).status).toBe(200);
    });
  });

  describe('access log', () => {
    test('one line per request: method, route pattern, status, ms, account id; never the path ids, query or body', async () => {
      const { logger, lines, raw } = capturingLogger();
      const server = await start({ logger });
      const headers = { 'x-api-key': server.apiKey, 'content-type': 'application/json' };
      const patient = { firstName: 'Zebulon', lastName: 'Quixote', dob: '1970-01-01', genderAtBirth: 'M', address: [SAMPLE_ADDRESS] };
      expect((await fetch(`${server.url}/medical/v1/facility`, { method: 'POST', headers, body: JSON.stringify(FACILITY) })).status).toBe(201);
      const created = await fetch(`${server.url}/medical/v1/patient`, { method: 'POST', headers, body: JSON.stringify(patient) });
      const { id } = (await created.json()) as { id: string };
      expect((await fetch(`${server.url}/medical/v1/patient/${id}/hie-opt-out?hieOptOut=true`, { method: 'PUT', headers: { 'x-api-key': server.apiKey } })).status).toBe(200);
      expect((await fetch(`${server.url}/medical/v1/patient/${id}`, { headers: { 'x-api-key': 'cb_wrong' } })).status).toBe(401);

      const requests = lines.filter((line) => line.msg === 'request');
      expect(requests.map((line) => [line.method, line.route, line.status])).toEqual([
        ['POST', '/medical/v1/facility', 201],
        ['POST', '/medical/v1/patient', 201],
        ['PUT', '/medical/v1/patient/:id/hie-opt-out', 200],
        ['GET', '/medical/v1/patient/:id', 401],
      ]);
      for (const line of requests.slice(0, 3)) expect(line.accountId).toBe(server.accountId);
      expect(requests[3]!.accountId).toBeUndefined();
      for (const line of requests) expect(line.ms).toEqual(expect.any(Number));
      const text = raw.join('\n');
      for (const secret of ['Zebulon', 'Quixote', '1970-01-01', id, 'hieOptOut=true', server.apiKey, 'cb_wrong']) expect(text).not.toContain(secret);
    });
  });

});

describe('mounting in an existing Koa app', () => {
  test('under a prefix: the API, its upload URLs, /openapi.json and /docs work there; other paths reach the app', async () => {
    const outer = new Koa();
    outer.use(async (ctx, next) => {
      if (ctx.path === '/hello') ctx.body = { hello: 'world' };
      else await next();
    });
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const host = await MemoryHost.create({ clock: new SteppedClock(SPEC_NOW), ids: new SequentialIds(), publicUrl: `${url}/carebridge`, urlSecret: 'koa-test-url-secret' });
    outer.use(carebridgeKoaMiddleware(host.handler, { prefix: '/carebridge/' }));
    outer.use((ctx) => {
      ctx.status = 418;
      ctx.body = 'outer fallback';
    });
    server.on('request', outer.callback());
    try {
      const { apiKey } = await host.createAccount('Mounted');
      expect(await (await fetch(`${url}/hello`)).json()).toEqual({ hello: 'world' });
      expect((await fetch(`${url}/medical/v1/facility`, { headers: { 'x-api-key': apiKey } })).status).toBe(418);
      expect((await fetch(`${url}/carebridgeX/medical/v1/facility`, { headers: { 'x-api-key': apiKey } })).status).toBe(418);

      const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
      expect((await fetch(`${url}/carebridge/medical/v1/facility`, { method: 'POST', headers, body: JSON.stringify(FACILITY) })).status).toBe(201);
      const started = (await (await fetch(`${url}/carebridge/medical/v1/patient/bulk`, { method: 'POST', headers: { 'x-api-key': apiKey } })).json()) as { uploadUrl: string };
      expect(started.uploadUrl.startsWith(`${url}/carebridge/medical/v1/patient/bulk/`)).toBe(true);
      expect((await fetch(started.uploadUrl, { method: 'PUT', headers: { 'x-api-key': apiKey, 'content-type': 'text/csv' }, body: CSV })).status).toBe(200);

      const openapi = (await (await fetch(`${url}/carebridge/openapi.json`)).json()) as { servers: { url: string }[] };
      expect(openapi.servers).toEqual([{ url: '/carebridge' }]);
      const docs = await (await fetch(`${url}/carebridge/docs`)).text();
      expect(docs).toContain('src="/carebridge/docs/docs.js"');
      expect(docs).toContain('data-openapi="/carebridge/openapi.json"');
      const script = await fetch(`${url}/carebridge/docs/docs.js`);
      expect(script.status).toBe(200);
      expect((await script.text()).length).toBeGreaterThan(1_000);
      const consolePage = await (await fetch(`${url}/carebridge/console`)).text();
      expect(consolePage).toContain('src="/carebridge/console/app.js"');
      expect(consolePage).toContain('data-base="/carebridge"');
      expect((await fetch(`${url}/carebridge/console/app.js`)).status).toBe(200);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await host.close();
    }
  });
});

describe('the console', () => {
  test('/console is an HTML page with a content security policy; every listed asset is served and every module it imports is listed; nothing else is', async () => {
    const { url } = await start();
    const page = await fetch(`${url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//);
    for (const name of Object.keys(CONSOLE_ASSETS)) {
      const response = await fetch(`${url}/console/${name}`);
      expect(response.status, name).toBe(200);
      expect(response.headers.get('content-type'), name).toBe(CONSOLE_ASSETS[name]);
      const text = await response.text();
      // Modules import each other by bare file name: each must be one the translation serves.
      for (const imported of text.matchAll(/^import .* from '\.\/([^']+)';$/gm)) expect(Object.keys(CONSOLE_ASSETS), `${name} imports ${imported[1]}`).toContain(imported[1]);
      expect(text, name).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    }
    for (const probe of ['/console/../package.json', '/console/console.ts', '/console/app.js/x', '/console/%2e%2e/package.json']) await expectProblem(await fetch(`${url}${probe}`), 404);
    // A POST is the API's, never a file.
    expect((await fetch(`${url}/console`, { method: 'POST' })).status).toBe(404);
  });
});

describe('docs and health', () => {
  test('/docs is an HTML page whose assets are served locally; unknown doc files are a 404 problem; /healthz answers', async () => {
    const { url } = await start();
    const page = await fetch(`${url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('<main id="docs" data-openapi="/openapi.json">');
    expect(html).not.toMatch(/https?:\/\//);
    for (const asset of html.matchAll(/(?:href|src)="([^"]+)"/g)) {
      const response = await fetch(`${url}${asset[1]}`);
      expect(response.status, asset[1]).toBe(200);
      expect(Number(response.headers.get('content-length') ?? (await response.arrayBuffer()).byteLength)).toBeGreaterThan(0);
    }
    const script = await fetch(`${url}/docs/docs.js`);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    await script.arrayBuffer();
    await expectProblem(await fetch(`${url}/docs/../package.json`), 404);
    await expectProblem(await fetch(`${url}/docs/package.json`), 404);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
  });
});
