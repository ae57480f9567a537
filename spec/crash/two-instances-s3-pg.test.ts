import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse/sync';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { generateCsv } from '../../bench/generate.js';
import { createPgSchema, probePostgres, type PgSchema } from '../support/pg.js';
import { startBalancer } from '../support/balancer.js';
import { startS3Server, type TestS3Server } from '../support/s3.js';
import { startScriptArguments } from '../support/start-command.js';

/**
 * Several machines: real service processes (`npm start`'s entry) on one PostgreSQL schema and one S3
 * bucket (s3rver on 127.0.0.1), behind a round-robin balancer that is their PUBLIC_URL. Imports and
 * document queries go through both; the instance holding the large import's lease is killed with SIGKILL
 * midway; a replacement joins. Then every row has exactly one outcome, no patient exists twice, every
 * webhook was delivered and none was sent twice at the same time, and search answers the same from
 * either instance. Instances whose PUBLIC_URL or URL signing secret disagree are refused at start.
 */

// Under CI an unreachable PostgreSQL throws here, failing the file; elsewhere the suite is skipped with a printed reason.
const pgProbe = await probePostgres();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Three batches of the importer (2,500 rows each): the kill lands after the first commits, before the last. */
const LARGE_ROWS = 7_500;
/** Patients who take part in exchange: each gets a document query, converted documents and webhooks. */
const SMALL_ROWS = 24;
const SECRET = 'two-instances-url-signing-secret';
const BUCKET = 'carebridge-instances';

interface Instance {
  name: string;
  child: ChildProcess;
  url: string;
  output: () => string;
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Counts every webhook by `webhook-id`, and the requests for a message that arrived while another copy was in flight. */
interface WatchingReceiver {
  url: string;
  received: Map<string, number>;
  types: Map<string, string>;
  concurrentDuplicates: number;
  close(): Promise<void>;
}

async function startReceiver(): Promise<WatchingReceiver> {
  const inFlight = new Map<string, number>();
  const state = { received: new Map<string, number>(), types: new Map<string, string>(), concurrentDuplicates: 0 };
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readAll(req)).toString('utf8')) as { meta: { type: string }; ping?: string };
    if (body.meta.type === 'ping') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pong: body.ping }));
      return;
    }
    const id = String(req.headers['webhook-id']);
    const running = inFlight.get(id) ?? 0;
    if (running > 0) state.concurrentDuplicates++;
    inFlight.set(id, running + 1);
    state.received.set(id, (state.received.get(id) ?? 0) + 1);
    state.types.set(id, body.meta.type);
    // A receiver that takes a few ms, so that copies sent by two instances at once would overlap.
    setTimeout(() => {
      inFlight.set(id, inFlight.get(id)! - 1);
      res.writeHead(200).end();
    }, 5);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received: state.received,
    types: state.types,
    get concurrentDuplicates() {
      return state.concurrentDuplicates;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function spawnInstance(name: string, env: Record<string, string>): { child: ChildProcess; port: number; output: () => string; ready: Promise<void> } {
  const port = Number(env.PORT);
  const child = spawn(process.execPath, startScriptArguments(), { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const ready = (async () => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`instance ${name} exited with ${child.exitCode}:\n${output}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`instance ${name} did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return { child, port, output: () => output, ready };
}

async function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = exitOf(child);
  child.kill(signal);
  await exited;
}

describe.skipIf(!pgProbe.available)('several instances on one PostgreSQL database and one S3 bucket', () => {
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test('they share imports, document queries and webhooks, and lose nothing when one is killed', async () => {
    const s3: TestS3Server = await startS3Server([BUCKET]);
    cleanups.push(() => s3.stop());
    const schema: PgSchema = await createPgSchema('twoinstances');
    cleanups.push(() => schema.drop());
    const db = new pg.Client({ connectionString: schema.url });
    await db.connect();
    cleanups.push(() => db.end());
    const balancer = await startBalancer();
    cleanups.push(() => balancer.close());
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());

    const instances: Instance[] = [];
    cleanups.push(() => Promise.all(instances.map((instance) => kill(instance.child, 'SIGTERM'))));
    const settingsFor = async (overrides: Record<string, string> = {}): Promise<Record<string, string>> => {
      const dataDir = mkdtempSync(join(tmpdir(), 'carebridge-instance-'));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      return {
        DATA_DIR: dataDir,
        DATABASE_URL: schema.url,
        DATABASE_SCHEMA: schema.schema,
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        PUBLIC_URL: balancer.url,
        URL_SIGNING_SECRET: SECRET,
        BLOB_URL: `s3://${BUCKET}/shared`,
        S3_ENDPOINT: s3.endpoint,
        S3_REGION: s3.region,
        S3_FORCE_PATH_STYLE: 'true',
        S3_ACCESS_KEY_ID: s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        // Claims of a killed instance on outbox messages run out within the test.
        WEBHOOK_LEASE_SECONDS: '20',
        CCDA_WORKERS: '1',
        ...overrides,
      };
    };
    const launch = async (name: string): Promise<Instance> => {
      const started = spawnInstance(name, await settingsFor());
      await started.ready;
      const instance = { name, child: started.child, url: `http://127.0.0.1:${started.port}`, output: started.output };
      instances.push(instance);
      balancer.backends.push(instance.url);
      return instance;
    };
    const logs = () => instances.map((instance) => `--- ${instance.name}\n${instance.output()}`).join('\n');

    // The first start on an empty database creates the sandbox account and prints its key; then the second.
    const a = await launch('a');
    const apiKey = /x-api-key: (cb_[A-Za-z0-9_-]+)/.exec(a.output())?.[1];
    expect(apiKey, a.output()).toBeTruthy();
    const b = await launch('b');

    const call = async (base: string, method: string, path: string, body?: unknown) => {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { 'x-api-key': apiKey!, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined, text };
    };
    const api = (method: string, path: string, body?: unknown) => call(balancer.url, method, path, body);

    const settings = await api('POST', '/settings', { webhookUrl: receiver.url });
    expect(settings.status, settings.text).toBe(200);
    expect(settings.body.webhookEnabled, settings.text).toBe(true);
    const facility = await api('POST', '/medical/v1/facility', {
      name: 'Two Instances Clinic',
      npi: '1234567893',
      address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' },
    });
    expect(facility.status, facility.text).toBe(201);

    const startImport = async (csv: string) => {
      // Start on one instance, upload on the next (the balancer alternates): the upload URL, its signature
      // and the stored file travel between them.
      const started = await api('POST', `/medical/v1/patient/bulk?facilityId=${facility.body.id}`);
      expect(started.status, started.text).toBe(200);
      const upload = await fetch(started.body.uploadUrl, { method: 'PUT', headers: { 'x-api-key': apiKey!, 'content-type': 'text/csv' }, body: csv });
      expect(upload.status, await upload.clone().text()).toBe(200);
      return started.body.requestId as string;
    };
    // The large file's people are opted out (no document queries, so the test stays short); the small one's take part.
    const largeCsv = generateCsv({ rows: LARGE_ROWS, seed: 101, invalidShare: 0.02 })
      .split('\n')
      .map((line, index) => (index === 0 || line === '' ? line : line.replace(/,(true)?$/, ',true')))
      .join('\n');
    const largeId = await startImport(largeCsv);
    const smallId = await startImport(
      generateCsv({ rows: SMALL_ROWS, seed: 202, invalidShare: 0 })
        .split('\n')
        .map((line, index) => (index === 0 || line === '' ? line : line.replace(/,(true)?$/, ',')))
        .join('\n'),
    );

    // Kill whichever instance holds the large import's lease once its first batch has committed.
    let victim: Instance | undefined;
    let processedAtKill = 0;
    const killDeadline = Date.now() + 60_000;
    while (!victim) {
      const status = await api('GET', `/medical/v1/patient/bulk/${largeId}`);
      expect(status.body.status, `${status.text}\n${logs()}`).toBe('processing');
      if (status.body.processed >= 2_500) {
        const { rows } = await db.query<{ locked_by: string }>(
          `SELECT locked_by FROM "${schema.schema}".queue_jobs WHERE type = 'bulk.process' AND status = 'running' AND payload LIKE $1`,
          [`%${largeId}%`],
        );
        const pid = rows[0]?.locked_by.split(':')[1];
        victim = instances.find((instance) => String(instance.child.pid) === pid);
        processedAtKill = status.body.processed;
      }
      if (Date.now() > killDeadline) throw new Error(`the large import never reached 2,500 rows\n${logs()}`);
      if (!victim) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    balancer.backends.splice(balancer.backends.indexOf(victim.url), 1);
    await kill(victim.child, 'SIGKILL');
    expect(processedAtKill).toBeLessThan(LARGE_ROWS);
    const killedAt = Date.now();
    const survivor = victim === a ? b : a;

    // A replacement joins (the killed instance still looks alive for a minute, with the same settings).
    // Instances that disagree on a shared setting are refused, with the setting named.
    const refused = async (name: string, overrides: Record<string, string>) => {
      const started = spawnInstance(name, await settingsFor(overrides));
      // Never ready: it is expected to exit.
      started.ready.catch(() => undefined);
      return { code: await exitOf(started.child), output: started.output() };
    };
    const [replacement, wrongUrl, wrongSecret] = await Promise.all([
      launch('c'),
      refused('wrong-url', { PUBLIC_URL: 'http://127.0.0.1:9' }),
      refused('wrong-secret', { URL_SIGNING_SECRET: 'a-different-url-signing-secret' }),
    ]);
    expect(wrongUrl.code, wrongUrl.output).toBe(1);
    expect(wrongUrl.output).toMatch(/could not start: PUBLIC_URL/);
    expect(wrongSecret.code, wrongSecret.output).toBe(1);
    expect(wrongSecret.output).toMatch(/could not start: URL_SIGNING_SECRET/);
    expect(wrongSecret.output).not.toContain(SECRET);
    const live = [survivor, replacement];

    const waitFor = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await probe();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms\n${logs()}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    // An import's document queries start shortly after it completes; it is finished when all have run.
    const finished = (requestId: string, queriesPerSuccess: 0 | 1) =>
      waitFor(
        `import ${requestId} finishing with its document queries`,
        async () => {
          const status = await api('GET', `/medical/v1/patient/bulk/${requestId}`);
          if (status.body.status === 'failed') throw new Error(`import failed: ${status.text}`);
          const queries = status.body.documentQueries ?? { total: 0, processing: 0 };
          const queriesDone = queries.total === queriesPerSuccess * status.body.succeeded && queries.processing === 0;
          return status.body.status === 'completed' && queriesDone ? status.body : undefined;
        },
        150_000,
      );
    const large = await finished(largeId, 0);
    console.info(`killed ${victim.name} at ${processedAtKill} of ${LARGE_ROWS} rows; the import completed ${Math.round((Date.now() - killedAt) / 1000)} s later`);
    const small = await finished(smallId, 1);

    const outcomes = async (status: { result: string; succeeded: number; failed: number }, rows: number) => {
      expect(status).toMatchObject({ status: 'completed', total: rows, processed: rows });
      expect(status.succeeded + status.failed).toBe(rows);
      const result = await fetch(status.result);
      expect(result.status).toBe(200);
      const lines = parse(await result.text()) as string[][];
      expect(lines).toHaveLength(rows + 1);
      const statusColumn = lines[0]!.indexOf('status');
      const idColumn = lines[0]!.indexOf('metriportId');
      const cells = lines.slice(1).map((line) => line[statusColumn]);
      expect(cells.every((cell) => cell === 'succeeded' || cell === 'failed')).toBe(true);
      expect(cells.filter((cell) => cell === 'succeeded')).toHaveLength(status.succeeded);
      return lines.slice(1).map((line) => line[idColumn]!).filter(Boolean);
    };
    const smallPatients = await outcomes(small, SMALL_ROWS);
    const createdIds = [...(await outcomes(large, LARGE_ROWS)), ...smallPatients];
    // Every person in the files is distinct: each succeeded row is its own patient, none exists twice.
    expect(new Set(createdIds).size).toBe(createdIds.length);
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await api('GET', `/medical/v1/patient?count=500${cursor ? `&cursor=${cursor}` : ''}`);
      listed.push(...page.body.patients.map((patient: { id: string }) => patient.id));
      cursor = page.body.meta.nextPage ? new URL(page.body.meta.nextPage).searchParams.get('cursor')! : undefined;
    } while (cursor);
    expect(listed.length).toBe(createdIds.length);
    expect(new Set(listed)).toEqual(new Set(createdIds));

    // Document queries asked of each live instance directly, run by whichever claims them.
    const asked = await Promise.all(
      live.map(async (instance, index) => {
        const patientId = smallPatients[index]!;
        const started = await call(instance.url, 'POST', `/medical/v1/document/query?patientId=${patientId}&facilityId=${facility.body.id}`);
        expect(started.status, started.text).toBe(200);
        return { patientId, requestId: started.body.requestId as string };
      }),
    );
    for (const { patientId, requestId } of asked) {
      await waitFor(
        `document query ${requestId}`,
        async () => {
          const status = await api('GET', `/medical/v1/document/query?patientId=${patientId}`);
          return status.body.requestId === requestId && status.body.download?.status !== 'processing' && status.body.convert?.status !== 'processing' ? status.body : undefined;
        },
        60_000,
      );
    }

    // Every message of the outbox delivered, each received, none sent twice at the same time. (One whose
    // sender died mid-request may come again later, with the same id: receivers drop the repeat.)
    const outbox = await waitFor(
      'the outbox draining',
      async () => {
        const { rows } = await db.query<{ id: string; status: string }>(`SELECT id, status FROM "${schema.schema}".outbox`);
        return rows.every((row) => row.status === 'delivered') ? rows : undefined;
      },
      90_000,
    );
    expect(outbox.length).toBeGreaterThan(SMALL_ROWS * 2);
    expect(outbox.filter((row) => !receiver.received.has(row.id)).map((row) => row.id)).toEqual([]);
    expect(receiver.concurrentDuplicates).toBe(0);
    const types = new Set(receiver.types.values());
    for (const type of ['medical.bulk-patient-create', 'medical.document-download', 'medical.document-conversion']) expect(types).toContain(type);

    // Search answers the same from either live instance (each builds its index from the shared storage).
    const searched = async (instance: Instance, patientId: string, query: string | undefined) => {
      const response = await call(instance.url, 'GET', `/medical/v1/patient/${patientId}/consolidated/search${query ? `?query=${query}` : ''}`);
      expect(response.status, response.text).toBe(200);
      if (!response.body.url) return { count: response.body.resourceCount as number, ids: [] as string[] };
      const bundle = (await (await fetch(response.body.url)).json()) as { entry?: { resource: { resourceType: string; id: string } }[] };
      return { count: response.body.resourceCount as number, ids: (bundle.entry ?? []).map((entry) => `${entry.resource.resourceType}/${entry.resource.id}`).sort() };
    };
    let compared = 0;
    for (const patientId of smallPatients.slice(0, 6)) {
      for (const query of [undefined, 'pneumonia', 'pnuemonia']) {
        const [first, second] = await Promise.all(live.map((instance) => searched(instance, patientId, query)));
        expect(second, `${patientId} ${query}`).toEqual(first);
        if (first!.count > 0) compared++;
      }
    }
    expect(compared).toBeGreaterThan(0);
  }, 400_000);
});
