import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { CarebridgeApiError, CarebridgeClient, CarebridgeClientError, CarebridgeError, CarebridgeNetworkError } from './index.js';

/*
 * How the client turns what comes back (or does not) into its errors, against small real HTTP servers that
 * misbehave on purpose: problem+json, foreign error pages, silence, refused connections.
 */

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

async function serve(answer: (req: IncomingMessage, res: ServerResponse, seen: Seen) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const record = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(record);
      answer(req, res, record);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('the call should have failed'),
    (error: unknown) => error,
  );
}

describe('requests', () => {
  test('the API key, JSON body, query and a mount path all reach the service as sent', async () => {
    const { url, seen } = await serve((_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'p1' }));
    });
    const client = new CarebridgeClient({ apiKey: 'cb_key', baseUrl: `${url}/api/`, headers: { 'x-trace': 't1' } });
    await client.createPatient({ firstName: 'A', lastName: 'B', dob: '1970-01-01', genderAtBirth: 'U', address: [] }, 'fac/1');
    expect(seen[0]).toMatchObject({
      method: 'POST',
      url: '/api/medical/v1/patient?facilityId=fac%2F1',
      headers: { 'x-api-key': 'cb_key', 'content-type': 'application/json', 'x-trace': 't1' },
    });
    expect(JSON.parse(seen[0]!.body)).toMatchObject({ firstName: 'A' });
    await client.getPatient('a/b?c').catch(() => undefined);
    expect(seen[1]!.url).toBe('/api/medical/v1/patient/a%2Fb%3Fc');
    await client.updatePatientHieOptOut('p1', false).catch(() => undefined);
    expect(seen[2]).toMatchObject({ method: 'PUT', url: '/api/medical/v1/patient/p1/hie-opt-out?hieOptOut=false', body: '' });
  });

  test('bad options are refused before anything is sent', () => {
    expect(() => new CarebridgeClient({ apiKey: '', baseUrl: 'http://x' })).toThrow(CarebridgeClientError);
    expect(() => new CarebridgeClient({ apiKey: 'k', baseUrl: 'not a url' })).toThrow(/baseUrl/);
    expect(() => new CarebridgeClient({ apiKey: 'k', baseUrl: 'ftp://example.com' })).toThrow(/baseUrl/);
  });
});

describe('errors', () => {
  test('a problem+json answer is a CarebridgeApiError with status, code, title, detail and extensions', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ status: 400, title: 'Bad Request', detail: 'metadata: too many keys', code: 'METADATA_INVALID', details: { key: 'k51' } }));
    });
    const error = await failure(new CarebridgeClient({ apiKey: 'k', baseUrl: url }).startDocumentQuery('p1', undefined, { a: 'b' }));
    expect(error).toBeInstanceOf(CarebridgeApiError);
    expect(error).toBeInstanceOf(CarebridgeError);
    expect(error).toMatchObject({
      status: 400,
      code: 'METADATA_INVALID',
      title: 'Bad Request',
      detail: 'metadata: too many keys',
      problem: { details: { key: 'k51' } },
      request: { method: 'POST', path: '/medical/v1/document/query' },
    });
    // The query (which may carry ids or search text) stays out of the message.
    expect((error as Error).message).not.toContain('patientId');
  });

  test('an error page that is not ours is HTTP_<status> with the start of the body', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(502, 'Bad Gateway', { 'content-type': 'text/html' });
      res.end('<html>upstream down</html>');
    });
    const error = await failure(new CarebridgeClient({ apiKey: 'k', baseUrl: url }).listFacilities());
    expect(error).toMatchObject({ status: 502, code: 'HTTP_502', title: 'Bad Gateway', detail: '<html>upstream down</html>' });
  });

  test('JSON without our code is not taken for a problem', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'oops' }));
    });
    expect(await failure(new CarebridgeClient({ apiKey: 'k', baseUrl: url }).getSettings())).toMatchObject({ status: 500, code: 'HTTP_500' });
  });

  test('no answer within timeoutMs is TIMEOUT; a stall half-way through the body too', async () => {
    const silent = await serve(() => undefined);
    const started = Date.now();
    const error = await failure(new CarebridgeClient({ apiKey: 'k', baseUrl: silent.url, timeoutMs: 150 }).listCohorts());
    expect(error).toBeInstanceOf(CarebridgeNetworkError);
    expect(error).toMatchObject({ code: 'TIMEOUT', request: { method: 'GET', path: '/medical/v1/cohort' } });
    expect(Date.now() - started).toBeLessThan(5_000);

    const stalling = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"cohorts": [');
    });
    expect(await failure(new CarebridgeClient({ apiKey: 'k', baseUrl: stalling.url, timeoutMs: 150 }).listCohorts())).toMatchObject({ code: 'TIMEOUT' });
  });

  test('a refused connection is NETWORK_ERROR with the cause', async () => {
    const { url } = await serve(() => undefined);
    const closed = servers.pop()!;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await failure(new CarebridgeClient({ apiKey: 'k', baseUrl: url }).getOrganization());
    expect(error).toMatchObject({ code: 'NETWORK_ERROR' });
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
    expect((error as Error).cause).toBeDefined();
  });

  test('a success whose body is not JSON is INVALID_RESPONSE', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>captive portal</html>');
    });
    expect(await failure(new CarebridgeClient({ apiKey: 'k', baseUrl: url }).getSettings())).toMatchObject({ code: 'INVALID_RESPONSE' });
  });
});

describe('pre-signed URLs', () => {
  test('download sends no API key; uploadDocument neither; uploadBulkPatientCsv does, to the base origin only', async () => {
    const { url, seen } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    const client = new CarebridgeClient({ apiKey: 'cb_secret', baseUrl: url });
    await (await client.download(`${url}/file?sig=1`)).text();
    await client.uploadDocument(`${url}/document/upload/d1?sig=2`, '<ClinicalDocument/>');
    await client.uploadBulkPatientCsv(`${url}/medical/v1/patient/bulk/r1/upload?sig=3`, 'a,b\n');
    expect(seen.map((request) => [request.method, request.headers['x-api-key'], request.headers['content-type']])).toEqual([
      ['GET', undefined, undefined],
      ['PUT', undefined, 'application/xml'],
      ['PUT', 'cb_secret', 'text/csv'],
    ]);
    expect(seen[2]!.body).toBe('a,b\n');
  });

  test('an expired download is a CarebridgeApiError with the service code', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(410, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ status: 410, title: 'Gone', detail: 'This URL has expired; request a new one', code: 'URL_EXPIRED' }));
    });
    expect(await failure(new CarebridgeClient({ apiKey: 'k', baseUrl: url }).download(`${url}/x`))).toMatchObject({ status: 410, code: 'URL_EXPIRED' });
  });
});
