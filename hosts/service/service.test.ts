import { DEFAULT_RATE_LIMITS } from '../../core/api/rate-limit.js';

const DAY_MS = 24 * 3_600_000;
import { createHmac } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import { createPgSchema, probePostgres } from '../../spec/support/pg.js';
import { startReceiver } from '../../spec/support/receiver.js';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { settingsFromEnv, startService, type ServiceHandle, type ServiceOptions } from './service.js';
import { SAMPLE_ADDRESS, VALID_NPI } from '../../spec/support/http-testing.js';

const silent = pino({ level: 'silent' });
const FACILITY = { name: 'Main Clinic', npi: VALID_NPI, address: SAMPLE_ADDRESS };
const CSV = 'firstName,lastName,dob,gender,addressLine1,city,state,zip\nAnn,Lee,1970-01-01,F,1 Main St,Springfield,IL,62701\nBo,Lee,1971-01-01,M,1 Main St,Springfield,IL,62701\n';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-service-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function start(options: ServiceOptions): Promise<ServiceHandle> {
  const service = await startService({ port: 0, host: '127.0.0.1', logger: silent, ...options });
  cleanups.push(() => service.close());
  return service;
}

async function api(service: ServiceHandle, apiKey: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${service.url}${path}`, {
    method,
    headers: { 'x-api-key': apiKey, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function startImport(service: ServiceHandle, apiKey: string): Promise<{ requestId: string; uploadUrl: string }> {
  expect((await api(service, apiKey, 'POST', '/medical/v1/facility', FACILITY)).status).toBe(201);
  const started = await api(service, apiKey, 'POST', '/medical/v1/patient/bulk');
  expect(started.status).toBe(200);
  return started.body;
}

describe('settings from the environment', () => {
  test('defaults, parsing, and a clear error naming the variable', () => {
    expect(settingsFromEnv({})).toEqual({
      port: 8080, dataDir: './data', logLevel: 'info',
      headersTimeoutMs: 30_000,
      requestTimeoutMs: 300_000,
      keepAliveTimeoutMs: 5_000,
      maxConnections: 1024,
      tunables: {
        rateLimits: DEFAULT_RATE_LIMITS,
        failedAuthPerMinute: 20,
        renders: { concurrency: 2, queue: 8 },
        jobConcurrency: 8,
        searchCacheMb: 64,
        retentionDays: 7,
        webhooks: { allowPrivate: false, endpointConcurrency: 16, disableAfterMs: 5 * DAY_MS },
      },
    });
    expect(
      settingsFromEnv({
        PORT: '0',
        DATA_DIR: '/srv/cb',
        DATABASE_URL: 'postgres://u@db/x',
        PUBLIC_URL: 'https://api.example.org/',
        WEBHOOK_ALLOW_PRIVATE: 'TRUE',
        URL_SIGNING_SECRET: 's'.repeat(32),
        LOG_LEVEL: 'Warn',
        HOST: '127.0.0.1',
        SEARCH_CACHE_MB: '256',
        JOB_CONCURRENCY: '12',
        CCDA_WORKERS: '3',
        WEBHOOK_CONCURRENCY: '4',
        WEBHOOK_DISABLE_AFTER_DAYS: '0.5',
      }),
    ).toEqual({
      port: 0,
      dataDir: '/srv/cb',
      databaseUrl: 'postgres://u@db/x',
      publicUrl: 'https://api.example.org/',
      urlSigningSecret: 's'.repeat(32),
      logLevel: 'warn',
      host: '127.0.0.1',
      headersTimeoutMs: 30_000,
      requestTimeoutMs: 300_000,
      keepAliveTimeoutMs: 5_000,
      maxConnections: 1024,
      tunables: {
        rateLimits: DEFAULT_RATE_LIMITS,
        failedAuthPerMinute: 20,
        renders: { concurrency: 2, queue: 8 },
        jobConcurrency: 12,
        ccdaWorkers: 3,
        searchCacheMb: 256,
        retentionDays: 7,
        webhooks: { allowPrivate: true, endpointConcurrency: 4, disableAfterMs: 0.5 * DAY_MS },
      },
    });
    expect(settingsFromEnv({ RATE_LIMITS: 'off' }).tunables.rateLimits).toEqual({ standard: 0, create: 0, documentQuery: 0, consolidated: 0 });
    expect(settingsFromEnv({ RATE_LIMITS: 'create=1200, documentQuery=0' }).tunables.rateLimits).toEqual({ ...DEFAULT_RATE_LIMITS, create: 1200, documentQuery: 0 });
    for (const value of ['fast', 'create=many', 'writes=10', 'create=-1', 'create=']) expect(() => settingsFromEnv({ RATE_LIMITS: value })).toThrow(/RATE_LIMITS/);
    expect(settingsFromEnv({ FAILED_AUTH_LIMIT: 'off' }).tunables.failedAuthPerMinute).toBe(0);
    expect(settingsFromEnv({ FAILED_AUTH_LIMIT: '5' }).tunables.failedAuthPerMinute).toBe(5);
    for (const value of ['many', '-1', '2.5']) expect(() => settingsFromEnv({ FAILED_AUTH_LIMIT: value })).toThrow(/FAILED_AUTH_LIMIT/);
    expect(settingsFromEnv({ RENDER_CONCURRENCY: '4', RENDER_QUEUE: '0' }).tunables.renders).toEqual({ concurrency: 4, queue: 0 });
    for (const value of ['0', 'two', '1.5']) expect(() => settingsFromEnv({ RENDER_CONCURRENCY: value })).toThrow(/RENDER_CONCURRENCY/);
    expect(() => settingsFromEnv({ RENDER_QUEUE: '-1' })).toThrow(/RENDER_QUEUE/);
    expect(settingsFromEnv({ HEADERS_TIMEOUT_SECONDS: '10', REQUEST_TIMEOUT_SECONDS: '600', KEEP_ALIVE_TIMEOUT_SECONDS: '65', MAX_CONNECTIONS: '64' })).toMatchObject({
      headersTimeoutMs: 10_000, requestTimeoutMs: 600_000, keepAliveTimeoutMs: 65_000, maxConnections: 64,
    });
    expect(() => settingsFromEnv({ HEADERS_TIMEOUT_SECONDS: '400' })).toThrow(/HEADERS_TIMEOUT_SECONDS.*REQUEST_TIMEOUT_SECONDS/);
    for (const name of ['HEADERS_TIMEOUT_SECONDS', 'REQUEST_TIMEOUT_SECONDS', 'KEEP_ALIVE_TIMEOUT_SECONDS', 'MAX_CONNECTIONS']) {
      for (const value of ['0', 'soon', '1.5']) expect(() => settingsFromEnv({ [name]: value })).toThrow(new RegExp(name));
    }
    expect(settingsFromEnv({ CCDA_MAX_MB: '8' }).tunables.ccdaMaxBytes).toBe(8 * 1024 * 1024);
    expect(() => settingsFromEnv({ CCDA_MAX_MB: '0' })).toThrow(/CCDA_MAX_MB/);
    expect(() => settingsFromEnv({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => settingsFromEnv({ PORT: '70000' })).toThrow(/PORT/);
    expect(() => settingsFromEnv({ WEBHOOK_ALLOW_PRIVATE: 'maybe' })).toThrow(/WEBHOOK_ALLOW_PRIVATE/);
    expect(() => settingsFromEnv({ WEBHOOK_CONCURRENCY: '0' })).toThrow(/WEBHOOK_CONCURRENCY/);
    expect(() => settingsFromEnv({ RETENTION_DAYS: '0' })).toThrow(/RETENTION_DAYS/);
    expect(() => settingsFromEnv({ WEBHOOK_RATE_LIMIT: '0' })).toThrow(/WEBHOOK_RATE_LIMIT/);
    expect(settingsFromEnv({ WEBHOOK_RATE_LIMIT: '50' }).tunables.webhooks?.rateLimitPerSecond).toBe(50);
    expect(settingsFromEnv({}).tunables.webhooks?.rateLimitPerSecond).toBeUndefined();
    expect(() => settingsFromEnv({ RETENTION_DAYS: 'week' })).toThrow(/RETENTION_DAYS/);
    expect(settingsFromEnv({ RETENTION_DAYS: '30' }).tunables.retentionDays).toBe(30);
    expect(settingsFromEnv({}).tunables.webhooks?.endpointConcurrency).toBe(16);
    expect(() => settingsFromEnv({ LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL/);
    expect(() => settingsFromEnv({ PUBLIC_URL: 'example.org' })).toThrow(/PUBLIC_URL/);
    expect(() => settingsFromEnv({ SEARCH_CACHE_MB: 'lots' })).toThrow(/SEARCH_CACHE_MB/);
    expect(() => settingsFromEnv({ SEARCH_CACHE_MB: '0' })).toThrow(/SEARCH_CACHE_MB/);
    for (const value of ['1', 'many', '2.5', '1000']) expect(() => settingsFromEnv({ JOB_CONCURRENCY: value })).toThrow(/JOB_CONCURRENCY/);
    for (const workers of ['0', 'two', '1.5', '-1']) expect(() => settingsFromEnv({ CCDA_WORKERS: workers })).toThrow(/CCDA_WORKERS/);
  });
});

describe('the service on SQLite', () => {
  test('first start creates the sandbox account once; the signing secret and the data survive a restart', async () => {
    const dataDir = await tempDir();
    const announced: string[] = [];
    const first = await start({ dataDir, announce: (text) => announced.push(text) });
    expect(first.sandboxAccount).toBeDefined();
    const { apiKey } = first.sandboxAccount!;
    expect(announced).toHaveLength(1);
    expect(announced[0]).toContain(apiKey);
    expect(announced[0]).toContain(`curl -s -H "x-api-key: ${apiKey}" ${first.publicUrl}/medical/v1/facility`);
    expect(first.publicUrl).toBe(first.url);

    const secretFile = join(dataDir, 'url-signing-secret');
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
    const secret = await readFile(secretFile, 'utf8');
    const { uploadUrl } = await startImport(first, apiKey);
    await first.close();

    const second = await start({ dataDir, announce: (text) => announced.push(text) });
    expect(second.sandboxAccount).toBeUndefined();
    expect(announced).toHaveLength(1);
    expect(await readFile(secretFile, 'utf8')).toBe(secret);
    expect((await api(second, apiKey, 'GET', '/medical/v1/facility')).body.facilities).toHaveLength(1);
    // The URL was signed before the restart (and names the old port): its path and signature still hold.
    const moved = new URL(uploadUrl);
    const uploaded = await fetch(`${second.url}${moved.pathname}${moved.search}`, { method: 'PUT', headers: { 'x-api-key': apiKey, 'content-type': 'text/csv' }, body: CSV });
    expect(uploaded.status).toBe(200);
  });

  test('RATE_LIMITS=off turns the limits off, and a class set to a number limits only that class', async () => {
    // The service as `npm start` builds it: settings from the environment, merged onto the defaults.
    const service = async (env: Record<string, string>) => start({ ...settingsFromEnv(env), port: 0, host: '127.0.0.1', dataDir: await tempDir(), logger: silent });
    const statuses = async (started: ServiceHandle) => {
      const { apiKey } = started.sandboxAccount!;
      const answers = await Promise.all(Array.from({ length: 12 }, () => api(started, apiKey, 'GET', '/medical/v1/facility')));
      return answers.map((answer) => answer.status);
    };
    expect(new Set(await statuses(await service({ RATE_LIMITS: 'off' })))).toEqual(new Set([200]));
    // startService merges the settings it is given onto those of an empty environment: `off` must win.
    expect({ ...settingsFromEnv({}), ...settingsFromEnv({ RATE_LIMITS: 'off' }) }.tunables.rateLimits).toEqual({ standard: 0, create: 0, documentQuery: 0, consolidated: 0 });
    expect((await statuses(await service({ RATE_LIMITS: 'standard=10' }))).filter((status) => status === 429)).toHaveLength(2);
  });

  test('wrong API keys over HTTP are counted per client address: past the limit 429 TOO_MANY_FAILED_ATTEMPTS with Retry-After', async () => {
    const dataDir = await tempDir();
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const service = await start({ dataDir, clock, background: false, sandboxAccount: true, announce: () => {}, tunables: { failedAuthPerMinute: 2 } });
    const apiKey = service.sandboxAccount!.apiKey;
    expect((await api(service, apiKey, 'GET', '/medical/v1/facility')).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await api(service, 'cb_wrong', 'GET', '/medical/v1/facility')).status).toBe(401);
    const locked = await fetch(`${service.url}/medical/v1/facility`, { headers: { 'x-api-key': 'cb_wrong' } });
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('30');
    expect(((await locked.json()) as { code: string }).code).toBe('TOO_MANY_FAILED_ATTEMPTS');
    expect((await api(service, apiKey, 'GET', '/medical/v1/facility')).status).toBe(429);
    clock.advance(30_000);
    expect((await api(service, apiKey, 'GET', '/medical/v1/facility')).status).toBe(200);
  });

  test('graceful shutdown: a request in flight finishes, then new connections are refused', async () => {
    const dataDir = await tempDir();
    const service = await start({ dataDir, background: false, sandboxAccount: true, announce: () => {} });
    const apiKey = service.sandboxAccount!.apiKey;
    const { requestId, uploadUrl } = await startImport(service, apiKey);

    let sentFirstHalf!: () => void;
    const firstHalfSent = new Promise<void>((resolve) => (sentFirstHalf = resolve));
    const half = Math.floor(CSV.length / 2);
    const slowBody = Readable.from(
      (async function* () {
        yield Buffer.from(CSV.slice(0, half));
        sentFirstHalf();
        await sleep(300);
        yield Buffer.from(CSV.slice(half));
      })(),
    );
    const upload = fetch(uploadUrl, {
      method: 'PUT',
      headers: { 'x-api-key': apiKey, 'content-type': 'text/csv' },
      body: Readable.toWeb(slowBody) as ReadableStream<Uint8Array>,
      duplex: 'half',
    } as RequestInit);
    await firstHalfSent;
    await sleep(50);
    const closing = service.close();
    const response = await upload;
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ requestId, status: 'processing', total: 2 });
    await closing;
    await expect(fetch(`${service.url}/healthz`)).rejects.toThrow();
  });

  test('in the background: the import runs and both webhooks reach a real receiver, signed, with no settle()', async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const dataDir = await tempDir();
    const service = await start({ dataDir, tunables: { webhooks: { allowPrivate: true } }, pollMs: 50, sandboxAccount: true, announce: () => {} });
    const { accountId, apiKey } = service.sandboxAccount!;
    const settings = (await service.deps.storage.webhookSettings.get(accountId))!;
    await service.deps.storage.webhookSettings.put({ ...settings, webhookUrl: `${receiver.url}/hook`, webhookEnabled: true });

    const { requestId, uploadUrl } = await startImport(service, apiKey);
    expect((await fetch(uploadUrl, { method: 'PUT', headers: { 'x-api-key': apiKey, 'content-type': 'text/csv' }, body: CSV })).status).toBe(200);

    // The import's document queries follow on their own; only its two bulk messages are looked at here.
    const bulkRequests = () => receiver.requests.filter((request) => JSON.parse(request.body).meta.type === 'medical.bulk-patient-create');
    const deadline = Date.now() + 15_000;
    while (bulkRequests().length < 2 && Date.now() < deadline) await sleep(50);
    expect(bulkRequests().map((request) => JSON.parse(request.body).bulkPatientCreate.status)).toEqual(['processing', 'completed']);
    for (const request of receiver.requests) {
      const expected = createHmac('sha256', settings.webhookKey).update(request.body).digest('hex');
      expect(request.headers['x-metriport-signature']).toBe(expected);
    }
    for (const request of bulkRequests()) expect(JSON.parse(request.body).meta.requestId).toBe(requestId);
    expect((await api(service, apiKey, 'GET', `/medical/v1/patient/bulk/${requestId}`)).body).toMatchObject({ status: 'completed', succeeded: 2 });
  });
});

const pgProbe = await probePostgres();

describe.skipIf(!pgProbe.available)('the service on PostgreSQL (DATABASE_URL)', () => {
  test('migrates its own schema, imports, and serves the result', async () => {
    const schema = await createPgSchema('koa');
    cleanups.push(() => schema.drop());
    const dataDir = await tempDir();
    const service = await start({ dataDir, databaseUrl: schema.url, databaseSchema: schema.schema, background: false, sandboxAccount: true, announce: () => {} });
    const apiKey = service.sandboxAccount!.apiKey;
    const { requestId, uploadUrl } = await startImport(service, apiKey);
    expect((await fetch(uploadUrl, { method: 'PUT', headers: { 'x-api-key': apiKey, 'content-type': 'text/csv' }, body: CSV })).status).toBe(200);
    await service.settle();
    const status = await api(service, apiKey, 'GET', `/medical/v1/patient/bulk/${requestId}`);
    expect(status.body).toMatchObject({ status: 'completed', total: 2, succeeded: 2, failed: 0 });
    expect((await (await fetch(status.body.result)).text()).split(/\r?\n/)[0]).toContain('metriportId,status,reason');
    expect((await api(service, apiKey, 'GET', '/medical/v1/patient')).body.patients).toHaveLength(2);
    // Closing first: the schema is dropped after its connections are gone.
    await service.close();
  });
});

/** A raw TCP connection to the service, with what it received and a promise of its close. */
function rawConnection(service: ServiceHandle): Promise<{ socket: Socket; received: () => string; closed: Promise<void>; next: (text: string) => Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(service.port, '127.0.0.1');
    let text = '';
    let waiter: { marker: string; done: (text: string) => void } | undefined;
    // A refused connection may be reset rather than ended; either way it closes.
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (waiter && text.includes(waiter.marker)) {
        const { done } = waiter;
        waiter = undefined;
        done(text);
      }
    });
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    cleanups.push(async () => {
      socket.destroy();
      await closed;
    });
    socket.once('connect', () =>
      resolve({
        socket,
        received: () => text,
        closed,
        // Sends a request and resolves with everything received once its (empty-bodied or small) answer is in.
        next: (request) =>
          new Promise((done) => {
            text = '';
            waiter = { marker: '"status":"ok"}', done };
            socket.write(request);
          }),
      }),
    );
    socket.once('error', reject);
  });
}

const HEALTH_REQUEST = 'GET /healthz HTTP/1.1\r\nHost: carebridge.test\r\n\r\n';

describe('server timeouts and the connection cap', () => {
  test('a client sending its headers a byte at a time, never finishing, is cut off with 408 after the headers timeout', async () => {
    const service = await start({ dataDir: await tempDir(), background: false, sandboxAccount: false, headersTimeoutMs: 200, requestTimeoutMs: 1_000 });
    const slow = await rawConnection(service);
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: carebridge.test\r\nX-Slow: ');
    // A byte now and then for as long as the connection lives: the timeout is no idle timeout.
    const drip = setInterval(() => slow.socket.writable && slow.socket.write('a'), 20);
    await slow.closed.finally(() => clearInterval(drip));
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408/);
  }, 20_000);

  test('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const service = await start({ dataDir: await tempDir(), background: false, sandboxAccount: false, keepAliveTimeoutMs: 100 });
    const client = await rawConnection(service);
    expect(await client.next(HEALTH_REQUEST)).toMatch(/^HTTP\/1\.1 200/);
    await client.closed;
  }, 20_000);

  test('with maxConnections 2 a third connection is closed unanswered while the first two are served', async () => {
    const service = await start({ dataDir: await tempDir(), background: false, sandboxAccount: false, maxConnections: 2, keepAliveTimeoutMs: 600_000 });
    const first = await rawConnection(service);
    const second = await rawConnection(service);
    expect(await first.next(HEALTH_REQUEST)).toMatch(/^HTTP\/1\.1 200/);
    expect(await second.next(HEALTH_REQUEST)).toMatch(/^HTTP\/1\.1 200/);
    const third = await rawConnection(service);
    third.socket.write(HEALTH_REQUEST);
    await third.closed;
    expect(third.received()).toBe('');
    expect(await first.next(HEALTH_REQUEST)).toMatch(/^HTTP\/1\.1 200/);
    expect(await second.next(HEALTH_REQUEST)).toMatch(/^HTTP\/1\.1 200/);
  }, 20_000);
});
