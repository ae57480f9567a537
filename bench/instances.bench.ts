/**
 * One instance against two, on PostgreSQL and an S3 bucket (s3rver, a child process on 127.0.0.1), behind
 * a round-robin balancer on 127.0.0.1 that is the instances' PUBLIC_URL. The same work each time, on a
 * fresh schema and bucket prefix:
 * - one 100,000-row import (start -> upload -> completed webhook): one import is one job, so a second
 *   instance can only take the requests and webhooks off the first;
 * - two 50,000-row imports started together (until both completed webhooks): each instance can take one;
 * - the journey of a 2,000-row import (start -> completed -> every document query done -> every webhook
 *   delivered): the document queries and conversions are shared out through the queue.
 * Everything (PostgreSQL, s3rver, the balancer, the instances) shares this machine's cores: on 2 cores
 * two instances compete with each other for them. BENCH_DATABASE_URL (default the test database),
 * BENCH_INSTANCES_ROWS, BENCH_INSTANCES_JOURNEY_ROWS, BENCH_INSTANCES_MEASURES=import,two-imports,journey.
 * BENCH_INSTANCES_PIN=1: each instance is pinned to a core of its own (taskset; instance i to core i), so
 * one instance on one core is measured against two on two cores: what a second machine would add, as far
 * as the shared database, bucket and balancer (not pinned) allow.
 * Prints one JSON object per measure.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sequelize } from 'sequelize';
import { generateCsv } from './generate.js';
import { databaseEnv, emit, prepareDataDir, startReceiver, startService, stopService, type Receiver, type Service } from './support.js';
import { startBalancer, type Balancer } from '../spec/support/balancer.js';
import { startS3Server, type TestS3Server } from '../spec/support/s3.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? process.env.CAREBRIDGE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const IMPORT_ROWS = Number(process.env.BENCH_INSTANCES_ROWS ?? 100_000);
const JOURNEY_ROWS = Number(process.env.BENCH_INSTANCES_JOURNEY_ROWS ?? 2_000);
const MEASURES = (process.env.BENCH_INSTANCES_MEASURES ?? 'import,two-imports,journey').split(',');
const PIN = process.env.BENCH_INSTANCES_PIN === '1';
const BUCKET = 'carebridge-bench';
const schemas: string[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => Math.round(ms / 100) / 10;

interface Cluster {
  balancer: Balancer;
  instances: Service[];
  apiKey: string;
  facilityId: string;
  get(path: string): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** `count` instances on a fresh schema and bucket prefix, behind a balancer, with the receiver as webhook endpoint. */
async function cluster(count: number, name: string, work: string, s3: TestS3Server, receiver: Receiver): Promise<Cluster> {
  const schema = `bench_inst_${name.replace(/[^a-z0-9]/gi, '_')}_${process.pid}`;
  schemas.push(schema);
  const database = { url: DATABASE_URL, schema };
  const { apiKey, facilityId } = await prepareDataDir(join(work, `${name}-setup`), 0, database);
  const balancer = await startBalancer();
  const env = {
    ...databaseEnv(database),
    PUBLIC_URL: balancer.url,
    URL_SIGNING_SECRET: 'bench-instances-url-signing-secret',
    BLOB_URL: `s3://${BUCKET}/${name}`,
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: s3.region,
    S3_FORCE_PATH_STYLE: 'true',
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  const instances: Service[] = [];
  for (let i = 0; i < count; i++) {
    const instance = await startService(join(work, `${name}-${i}`), env, PIN ? { cpus: String(i % cpus().length) } : {});
    instances.push(instance);
    balancer.backends.push(instance.url);
  }
  const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
  const settings = await fetch(`${balancer.url}/settings`, { method: 'POST', headers, body: JSON.stringify({ webhookUrl: receiver.url }) });
  if (settings.status !== 200) throw new Error(`webhook settings: ${settings.status} ${await settings.text()}`);
  return {
    balancer,
    instances,
    apiKey,
    facilityId,
    get: async (path) => (await (await fetch(`${balancer.url}${path}`, { headers })).json()) as Record<string, unknown>,
    async stop() {
      await Promise.all(instances.map((instance) => stopService(instance)));
      await balancer.close();
    },
  };
}

async function startImport(cluster: Cluster, csv: string): Promise<string> {
  const headers = { 'x-api-key': cluster.apiKey };
  const start = await fetch(`${cluster.balancer.url}/medical/v1/patient/bulk?facilityId=${cluster.facilityId}`, { method: 'POST', headers });
  const { requestId, uploadUrl } = (await start.json()) as { requestId: string; uploadUrl: string };
  const upload = await fetch(uploadUrl, { method: 'PUT', headers: { ...headers, 'content-type': 'text/csv' }, body: csv });
  if (upload.status !== 200) throw new Error(`upload failed: ${upload.status} ${await upload.text()}`);
  return requestId;
}

/** Until the import's document queries have all ended (stable for a second) and no webhook is pending. */
async function untilJourneyDone(cluster: Cluster, requestId: string): Promise<Record<string, unknown>> {
  let settledTotal: number | undefined;
  for (;;) {
    const status = await cluster.get(`/medical/v1/patient/bulk/${requestId}`);
    const queries = status.documentQueries as { total: number; processing: number } | undefined;
    const ended = queries !== undefined && queries.total > 0 && queries.processing === 0 && (await cluster.get('/settings/webhook')).processing === 0;
    if (ended && settledTotal === queries.total) return status;
    settledTotal = ended ? queries.total : undefined;
    await sleep(ended ? 1_000 : 250);
  }
}

type Measure = (cluster: Cluster, receiver: Receiver) => Promise<{ ms: number; details: Record<string, unknown> }>;

const measures: Record<string, { title: string; run: Measure }> = {
  import: {
    title: `one ${IMPORT_ROWS}-row import`,
    run: async (cluster, receiver) => {
      const csv = generateCsv({ rows: IMPORT_ROWS, seed: 1 });
      const started = performance.now();
      const requestId = await startImport(cluster, csv);
      const ms = (await receiver.completed(requestId)) - started;
      const status = await cluster.get(`/medical/v1/patient/bulk/${requestId}`);
      return { ms, details: { succeeded: status.succeeded, failed: status.failed } };
    },
  },
  'two-imports': {
    title: `two ${IMPORT_ROWS / 2}-row imports at once`,
    run: async (cluster, receiver) => {
      const files = [generateCsv({ rows: IMPORT_ROWS / 2, seed: 2 }), generateCsv({ rows: IMPORT_ROWS / 2, seed: 3 })];
      const started = performance.now();
      const ids = await Promise.all(files.map((csv) => startImport(cluster, csv)));
      const ends = await Promise.all(ids.map((id) => receiver.completed(id)));
      return { ms: Math.max(...ends) - started, details: { eachMs: ends.map((end) => Math.round(end - started)) } };
    },
  },
  journey: {
    title: `the journey of a ${JOURNEY_ROWS}-row import`,
    run: async (cluster, receiver) => {
      const csv = generateCsv({ rows: JOURNEY_ROWS, seed: 11 });
      const started = performance.now();
      const requestId = await startImport(cluster, csv);
      const importedAt = await receiver.completed(requestId);
      const status = await untilJourneyDone(cluster, requestId);
      return { ms: performance.now() - started, details: { importMs: Math.round(importedAt - started), queries: status.documentQueries, webhooks: Object.fromEntries(receiver.counts) } };
    },
  },
};

async function run(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'carebridge-instances-'));
  const s3 = await startS3Server([BUCKET]);
  const receiver = await startReceiver();
  try {
    for (const key of MEASURES) {
      const measure = measures[key];
      if (!measure) throw new Error(`unknown measure ${key}; known: ${Object.keys(measures).join(', ')}`);
      const results: Record<number, number> = {};
      for (const count of [1, 2]) {
        receiver.counts.clear();
        const running = await cluster(count, `${key}_${count}`, work, s3, receiver);
        try {
          const { ms, details } = await measure.run(running, receiver);
          results[count] = ms;
          emit({
            measure: `instances: ${measure.title}`,
            instances: count,
            ms: Math.round(ms),
            peakRssMb: running.instances.map((instance) => instance.peakRssMb()),
            ...details,
          });
        } finally {
          await running.stop();
        }
      }
      emit({ measure: `instances: ${measure.title}, one against two`, oneS: seconds(results[1]!), twoS: seconds(results[2]!), speedup: Math.round((results[1]! / results[2]!) * 100) / 100, cores: cpus().length, pinned: PIN });
    }
  } finally {
    receiver.server.close();
    await s3.stop();
    rmSync(work, { recursive: true, force: true });
    const sequelize = new Sequelize(DATABASE_URL, { logging: false });
    for (const schema of schemas) await sequelize.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sequelize.close();
  }
}

await run();
