import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Koa from 'koa';
import { Sequelize } from 'sequelize';
import { afterEach, describe, expect, test } from 'vitest';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { CarebridgeApiError, CarebridgeClient } from '../../client/index.js';
import { PooledCcdaConverter } from '../../adapters/ccda/pooled.ccda.js';
import { createCarebridge, type Carebridge } from './carebridge.js';
import { carebridgeKoa } from '../../http/koa.js';
import { inProcessFetch, MemoryHost } from '../memory/index.js';
import { createNodeListener } from '../../http/node.js';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';

/*
 * Embedding: carebridge inside an application that already exists, beside its own routes, under
 * `/api`, on 127.0.0.1 with a free port; the client works against each. Background work runs on its own
 * (as it would in the application), so the tests wait for outcomes rather than drive them.
 */

const ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' };
const FACILITY = { name: 'Main Clinic', npi: '1234567893', address: ADDRESS };
const CSV = 'firstName,lastName,dob,gender,addressLine1,city,state,zip\nAnn,Lee,1970-01-01,F,1 Main St,Springfield,IL,62701\nBo,Kim,1980-02-02,M,2 Oak St,Springfield,IL,62701\n';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server on 127.0.0.1 whose listener is set once the port (and so the public URL) is known. */
async function listenFirst(): Promise<{ url: string; serve(listener: (req: IncomingMessage, res: ServerResponse) => void): void }> {
  let listener: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => listener!(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    serve(given) {
      listener = given;
    },
  };
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-embedded-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function embedded(options: Omit<Parameters<typeof createCarebridge>[0], 'dataDir'>): Promise<Carebridge> {
  const carebridge = await createCarebridge({ dataDir: await tempDir(), pollMs: 20, ...options });
  cleanups.push(() => carebridge.close());
  return carebridge;
}

/** Polls until the request leaves waiting/processing (the background loop runs the import). */
async function finished(client: CarebridgeClient, requestId: string) {
  for (let attempt = 0; attempt < 400; attempt++) {
    const status = await client.getBulkPatientCreate(requestId);
    if (status.status !== 'processing' && status.status !== 'waiting') return status;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`bulk request ${requestId} did not finish`);
}

/** What every embedding must support: entities, the whole bulk flow with its upload URL, the result download. */
async function exercise(client: CarebridgeClient): Promise<void> {
  const facility = await client.createFacility(FACILITY);
  expect(await client.listFacilities()).toEqual([facility]);
  const patient = await client.createPatient({ firstName: 'Eve', lastName: 'Park', dob: '1990-03-03', genderAtBirth: 'F', address: ADDRESS });
  expect(await client.getPatient(patient.id)).toEqual(patient);
  expect(await client.updatePatientHieOptOut(patient.id, true)).toMatchObject({ hieOptOut: true });

  const requestId = await client.createPatientsFromCsv(CSV);
  const done = await finished(client, requestId);
  expect(done).toMatchObject({ status: 'completed', succeeded: 2, failed: 0 });
  const result = await (await client.download(done.result!)).text();
  expect(result.split(/\r?\n/)[0]).toMatch(/metriportId,status,reason$/);
  expect((await client.listPatients()).patients).toHaveLength(3);

  const missing = await client.getPatient('00000000-0000-7000-8000-000000000000').catch((error: unknown) => error);
  expect(missing).toBeInstanceOf(CarebridgeApiError);
  expect(missing).toMatchObject({ status: 404, code: 'PATIENT_NOT_FOUND' });
}

describe('embedded in an existing Koa app under /api', () => {
  test("beside the app's own routes; the client works through the mount", async () => {
    const server = await listenFirst();
    const carebridge = await embedded({ publicUrl: `${server.url}/api` });

    const app = new Koa();
    app.use(async (ctx, next) => {
      if (ctx.path === '/orders') {
        ctx.body = { orders: ['o1'] };
        return;
      }
      await next();
    });
    app.use(carebridgeKoa(carebridge, { prefix: '/api' }));
    app.use((ctx) => {
      ctx.status = 404;
      ctx.body = { app: 'not found' };
    });
    server.serve(app.callback());

    const { apiKey } = await carebridge.createAccount('Koa Embedder');
    await exercise(new CarebridgeClient({ apiKey, baseUrl: `${server.url}/api` }));

    expect(await (await fetch(`${server.url}/orders`)).json()).toEqual({ orders: ['o1'] });
    expect(await (await fetch(`${server.url}/medical/v1/facility`, { headers: { 'x-api-key': apiKey } })).json()).toEqual({ app: 'not found' });
    const unknown = await fetch(`${server.url}/api/medical/v1/nothing`, { headers: { 'x-api-key': apiKey } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: 'ROUTE_NOT_FOUND' });
    expect(await (await fetch(`${server.url}/api/openapi.json`)).json()).toMatchObject({ openapi: expect.stringMatching(/^3\.1/) });
  });
});

describe('embedded in a bare node:http server through the handler', () => {
  test('failedAuthPerMinute counts wrong keys per client address as the node listener sees it', async () => {
    const server = await listenFirst();
    const carebridge = await embedded({ publicUrl: server.url, database: ':memory:', background: false, failedAuthPerMinute: 2, clock: new SteppedClock('2026-01-01T00:00:00.000Z') });
    server.serve(createNodeListener(carebridge.handler));
    const { apiKey } = await carebridge.createAccount('Embedder');
    const read = (key: string) => fetch(`${server.url}/medical/v1/facility`, { headers: { 'x-api-key': key } });
    expect((await read(apiKey)).status).toBe(200);
    expect((await read('cb_wrong')).status).toBe(401);
    expect((await read('cb_wrong')).status).toBe(401);
    const locked = await read(apiKey);
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('30');
  });

  test("on the application's own Sequelize instance, which carebridge leaves open", async () => {
    const server = await listenFirst();
    const sequelize = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
    cleanups.push(() => sequelize.close());
    const carebridge = await embedded({ publicUrl: `${server.url}/api`, database: sequelize, searchCacheMb: 8 });
    expect((carebridge.deps.search as MiniSearchIndex).usage.budgetBytes).toBe(8 * 1024 * 1024);

    const api = createNodeListener(carebridge.handler, { prefix: '/api' });
    server.serve((req, res) => {
      api(req, res, () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('the application');
      });
    });

    const { apiKey } = await carebridge.createAccount('Node Embedder');
    await exercise(new CarebridgeClient({ apiKey, baseUrl: `${server.url}/api` }));
    expect(await (await fetch(`${server.url}/`)).text()).toBe('the application');

    // Bodies are translated as the Koa host does: JSON only, within limits, never echoed.
    const notJson = await fetch(`${server.url}/api/medical/v1/facility`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'text/plain' }, body: '{}' });
    expect(notJson.status).toBe(415);
    const malformed = await fetch(`${server.url}/api/medical/v1/facility`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: '{"name": "Jane Secret' });
    expect(malformed.status).toBe(400);
    expect(await malformed.text()).not.toContain('Secret');

    await carebridge.close();
    const [[row]] = (await sequelize.query('SELECT COUNT(*) AS n FROM patients')) as [{ n: number }[], unknown];
    expect(Number(row!.n)).toBe(3);
  });
});

describe('C-CDA conversion off the main thread', () => {
  test('the embedded host converts in a pool of `ccdaWorkers` threads, which close() stops', async () => {
    const carebridge = await embedded({ publicUrl: 'http://carebridge.test', database: ':memory:', background: false, ccdaWorkers: 1 });
    const converter = carebridge.deps.ccda;
    expect(converter).toBeInstanceOf(PooledCcdaConverter);
    expect((converter as PooledCcdaConverter).maxThreads).toBe(1);
    const xml = await readFile(new URL('../../sandbox-data/ccda/ccd-2.xml', import.meta.url), 'utf8');
    expect((await converter.convert(xml)).resourceType).toBe('Bundle');
    await carebridge.close();
    await expect(converter.convert(xml)).rejects.toMatchObject({ code: 'INTERNAL' });
  });
});

describe('your own adapters', () => {
  test('a port given in `ports` is the one used, on the SQL profile, and the built-in one is never made', async () => {
    const asked: string[] = [];
    const hie = {
      async findDocuments(query: { patientId: string }) {
        asked.push(query.patientId);
        return [];
      },
      async retrieve(): Promise<Uint8Array> {
        throw new Error('not asked: there are no documents');
      },
      async directory() {
        return [];
      },
    };
    const search = new MiniSearchIndex();
    const converter = { convert: async () => ({ resourceType: 'Bundle' as const, type: 'collection' as const, entry: [] }), searchText: async () => '' };
    const carebridge = await embedded({ publicUrl: 'http://carebridge.test', database: ':memory:', ports: { hie, search, ccda: converter } });
    expect(carebridge.deps.hie).toBe(hie);
    expect(carebridge.deps.search).toBe(search);
    // No converter threads were started for a converter someone else provides.
    expect(carebridge.deps.ccda).toBe(converter);
    const { apiKey } = await carebridge.createAccount('Own adapters');
    const client = new CarebridgeClient({ apiKey, baseUrl: 'http://carebridge.test', fetch: inProcessFetch(carebridge.handler) });
    const facility = await client.createFacility(FACILITY);
    const patient = await client.createPatient({ firstName: 'Ann', lastName: 'Lee', dob: '1970-01-01', genderAtBirth: 'F', address: [ADDRESS] }, facility.id);
    await client.startDocumentQuery(patient.id, facility.id);
    for (;;) {
      const status = await client.getDocumentQueryStatus(patient.id);
      if (status?.download?.status === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(asked).toContain(patient.id);
    await carebridge.close();
  });
});

describe('the sandbox host in process', () => {
  test('the client runs against MemoryHost with no port at all', async () => {
    const host = await MemoryHost.create();
    cleanups.push(() => host.close());
    const { apiKey } = await host.createAccount('Sandbox');
    const client = new CarebridgeClient({ apiKey, baseUrl: host.deps.config.publicUrl, fetch: inProcessFetch(host.handler) });
    const facility = await client.createFacility(FACILITY);
    const requestId = await client.createPatientsFromCsv(CSV, { facilityId: facility.id, dryRun: true });
    await host.settle();
    const done = await client.getBulkPatientCreate(requestId);
    expect(done).toMatchObject({ status: 'completed', dryRun: true, succeeded: 2 });
    expect(await (await client.download(done.result!)).text()).toContain('succeeded');
    expect((await client.listPatients()).patients).toEqual([]);
  });
});

describe('the sandbox host runs its work by itself', () => {
  test('an import started through the client completes while the client polls, with no settle()', async () => {
    const host = await MemoryHost.create();
    cleanups.push(() => host.close());
    const { apiKey } = await host.createAccount('Sandbox');
    const client = new CarebridgeClient({ apiKey, baseUrl: host.deps.config.publicUrl, fetch: inProcessFetch(host.handler) });
    const facility = await client.createFacility(FACILITY);
    const requestId = await client.createPatientsFromCsv(CSV, { facilityId: facility.id });
    const done = await client.waitForBulkPatientCreate(requestId, { pollMs: 10 });
    expect(done).toMatchObject({ status: 'completed', succeeded: 2 });
    expect((await client.listPatients()).patients).toHaveLength(2);
    // settle() still gives a point where nothing is left running, and the work goes on by itself after it.
    await host.settle();
    const again = await client.createPatientsFromCsv(CSV, { facilityId: facility.id, dryRun: true });
    expect(await client.waitForBulkPatientCreate(again, { pollMs: 10 })).toMatchObject({ status: 'completed', dryRun: true });
  });
});

describe('package entry points', () => {
  test('the package exports carebridge, carebridge/koa, carebridge/memory and carebridge/client, each the build of a source module here', async () => {
    // What the built package answers is checked by installing it (spec/package); here, that each export
    // is the build of the module this repository tests.
    const manifest = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
      exports: Record<string, string | { types: string; default: string }>;
    };
    const entries = Object.entries(manifest.exports).filter(([name]) => name !== './package.json');
    expect(entries.map(([name]) => name).sort()).toEqual(['.', './client', './koa', './memory']);
    for (const [, target] of entries) {
      const { types, default: code } = target as { types: string; default: string };
      expect(code).toMatch(/^\.\/dist\/.+\.js$/);
      expect(types).toBe(code.replace(/\.js$/, '.d.ts'));
      const source = code.replace(/^\.\/dist\//, '../../').replace(/\.js$/, '.ts');
      await expect(access(new URL(source, import.meta.url))).resolves.toBeUndefined();
    }
    expect(await import('../../index.js')).toMatchObject({ createCarebridge, createNodeListener: expect.any(Function) });
  });
});
