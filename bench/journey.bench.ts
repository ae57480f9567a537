/**
 * The whole journey of an import, as a customer lives it: start -> upload -> completed -> every document
 * query the import set off done (documents fetched from the sandbox network, converted to FHIR, indexed)
 * -> every webhook delivered. Through the real Koa service on SQLite (a child process, so its peak RSS is
 * its own), with a webhook receiver on 127.0.0.1. Beside it, in the same run:
 * - the floor: the time @medplum/ccda alone takes, warm, on one core, for exactly the documents the
 *   journey converted (the sandbox network decides them from each patient's id), and the time the
 *   converter with its repairs takes;
 * - the API's latency (GET /patient/:id) sampled while the journey runs;
 * - a second import of 1,000 rows started mid-journey, against the same import on an idle service.
 * BENCH_JOURNEY_ROWS=2000,20000 (default 2000). Prints one JSON object per measure.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SandboxHieNetwork } from '../adapters/hie/sandbox.hie.js';
import { generateCsv } from './generate.js';
import { Sequelize } from 'sequelize';
import { databaseEnv, emit, prepareDataDir, startReceiver, startService, stopService, type BenchDatabase, type Receiver, type Service } from './support.js';

const SIZES = (process.env.BENCH_JOURNEY_ROWS ?? '2000').split(',').filter(Boolean).map(Number);
/** BENCH_DATABASE_URL=postgres://...: the services run on PostgreSQL, each in a schema of its own (dropped after). */
const DATABASE_URL = process.env.BENCH_DATABASE_URL;
const schemas: string[] = [];

function databaseFor(name: string): BenchDatabase | undefined {
  if (!DATABASE_URL) return undefined;
  const schema = `bench_${name.replace(/[^a-z0-9]/gi, '_')}_${process.pid}`;
  schemas.push(schema);
  return { url: DATABASE_URL, schema };
}
const SECOND_IMPORT_ROWS = Number(process.env.BENCH_SECOND_IMPORT_ROWS ?? 1_000);
const FIXTURES = fileURLToPath(new URL('../sandbox-data/ccda/', import.meta.url));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

interface Api {
  get(path: string): Promise<Record<string, unknown>>;
  post(path: string, body?: unknown): Promise<Record<string, unknown>>;
}

function apiOf(service: Service, apiKey: string): Api {
  const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
  return {
    get: async (path) => (await (await fetch(`${service.url}${path}`, { headers })).json()) as Record<string, unknown>,
    post: async (path, body) =>
      (await (await fetch(`${service.url}${path}`, { method: 'POST', headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })).json()) as Record<string, unknown>,
  };
}

/** Start and upload; resolves with the request id once the file is accepted. */
async function startImport(service: Service, api: Api, apiKey: string, facilityId: string, csv: string): Promise<string> {
  const { requestId, uploadUrl } = (await api.post(`/medical/v1/patient/bulk?facilityId=${facilityId}`)) as { requestId: string; uploadUrl: string };
  const upload = await fetch(uploadUrl, { method: 'PUT', headers: { 'x-api-key': apiKey, 'content-type': 'text/csv' }, body: csv });
  if (upload.status !== 200) throw new Error(`upload failed: ${upload.status} ${await upload.text()}`);
  return requestId;
}

interface Progress {
  total: number;
  processing: number;
  completed: number;
  failed: number;
}

/**
 * Waits until the import's document queries have all ended (none processing, and no new one started for a
 * second: they are started a page at a time) and the outbox holds nothing pending.
 */
async function untilJourneyDone(api: Api, requestId: string): Promise<{ progress: Progress; queriesEndedAt: number; endedAt: number }> {
  let settled: { total: number; at: number } | undefined;
  let queriesEnded: { total: number; at: number } | undefined;
  for (;;) {
    const status = await api.get(`/medical/v1/patient/bulk/${requestId}`);
    const progress = status.documentQueries as Progress | undefined;
    const queriesDone = progress !== undefined && progress.total > 0 && progress.processing === 0;
    if (queriesDone && queriesEnded?.total !== progress.total) queriesEnded = { total: progress.total, at: performance.now() };
    const ended = queriesDone && (await api.get('/settings/webhook')).processing === 0;
    if (ended && settled?.total === progress.total) return { progress, queriesEndedAt: queriesEnded!.at, endedAt: settled.at };
    settled = ended ? { total: progress.total, at: performance.now() } : undefined;
    await sleep(ended ? 1_000 : 250);
  }
}

/** Ids of the import's patients, through the API (pages of the patient list). */
async function patientIdsOf(api: Api, facilityId: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.get(`/medical/v1/patient?facilityId=${facilityId}&count=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    for (const patient of (page.patients as { id: string; hieOptOut?: boolean }[]) ?? []) if (!patient.hieOptOut) ids.push(patient.id);
    const next = (page.meta as { nextPage?: string } | undefined)?.nextPage;
    cursor = next ? (new URL(next).searchParams.get('cursor') ?? undefined) : undefined;
  } while (cursor);
  return ids;
}

/**
 * The one-core floor for the documents the journey converted: `bareMs`, the library alone, the floor the
 * journey is held to, and `repairedMs`, the converter as the service runs it. Measured by
 * bench/conversion-floor.ts in a fresh process pinned to one core, once the service has stopped.
 */
async function conversionFloorMs(work: string, patientIds: readonly string[]): Promise<{ bareMs: number; repairedMs: number; documents: number }> {
  const network = new SandboxHieNetwork({ fixturesDir: FIXTURES });
  const uses = new Map<string, number>();
  for (const patientId of patientIds) {
    for (const ref of await network.findDocuments({ patientId, firstName: '', lastName: '', dob: '', genderAtBirth: 'U', zips: [] })) {
      uses.set(ref.fileName, (uses.get(ref.fileName) ?? 0) + 1);
    }
  }
  const list = join(work, 'floor-fixtures.json');
  writeFileSync(list, JSON.stringify([...uses].map(([file, count]) => ({ file, count }))));
  const script = fileURLToPath(new URL('./conversion-floor.ts', import.meta.url));
  const output = execFileSync('taskset', ['-c', '0', process.execPath, '--import', 'tsx', script, list], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const { bareMs, repairedMs } = JSON.parse(output) as { bareMs: number; repairedMs: number };
  return { bareMs, repairedMs, documents: [...uses.values()].reduce((sum, count) => sum + count, 0) };
}

/** A fresh service with an account, a facility and the receiver as its webhook endpoint. */
async function freshService(work: string, name: string, receiver: Receiver) {
  const dataDir = join(work, name);
  const database = databaseFor(name);
  const { apiKey, facilityId } = await prepareDataDir(dataDir, 0, database);
  const service = await startService(dataDir, databaseEnv(database));
  const api = apiOf(service, apiKey);
  await api.post('/settings', { webhookUrl: receiver.url });
  return { service, api, apiKey, facilityId };
}

async function idleImportMs(work: string, receiver: Receiver, csv: string): Promise<number> {
  const idle = await freshService(work, 'idle', receiver);
  try {
    const started = performance.now();
    const requestId = await startImport(idle.service, idle.api, idle.apiKey, idle.facilityId, csv);
    return (await receiver.completed(requestId)) - started;
  } finally {
    await stopService(idle.service);
  }
}

async function journey(rows: number, work: string, receiver: Receiver, secondCsv: string, idleSecondMs: number): Promise<void> {
  const csv = generateCsv({ rows, seed: 11 });
  const run = await freshService(work, `journey-${rows}`, receiver);
  const { service, api, apiKey, facilityId } = run;
  let stopped = false;
  try {
    // The machine's load (1-minute average) as the journey starts and ends: figures taken on a shared
    // machine are read with it.
    const loadAtStart = round(loadavg()[0]!, 2);
    const cpuAtStart = service.cpuMs();
    const started = performance.now();
    const requestId = await startImport(service, api, apiKey, facilityId, csv);
    const importedAt = await receiver.completed(requestId);
    const status = await api.get(`/medical/v1/patient/bulk/${requestId}`);

    // The API while the background work runs: one patient read every 50 ms.
    const latencies: number[] = [];
    let apiFailures = 0;
    let sampling = true;
    const someId = ((await api.get(`/medical/v1/patient?facilityId=${facilityId}&count=1`)).patients as { id: string }[])[0]!.id;
    const sampler = (async () => {
      while (sampling) {
        const at = performance.now();
        try {
          await fetch(`${service.url}/medical/v1/patient/${someId}`, { headers: { 'x-api-key': apiKey } });
          latencies.push(performance.now() - at);
        } catch (error) {
          // The service gone: the waits below fail with the reason; this loop only samples.
          apiFailures++;
          if (apiFailures === 1) process.stderr.write(`GET /patient/:id failed: ${String(error)} (${String((error as Error).cause)})\n`);
        }
        await sleep(50);
      }
    })();

    // A second import, once the background work is well under way.
    await sleep(Math.min(10_000, Math.max(1_000, (importedAt - started) * 2)));
    const secondStarted = performance.now();
    const secondId = await startImport(service, api, apiKey, facilityId, secondCsv);
    const secondMs = (await receiver.completed(secondId)) - secondStarted;

    const patientIds = await patientIdsOf(api, facilityId);
    const first = await untilJourneyDone(api, requestId);
    const second = await untilJourneyDone(api, secondId);
    const progress = first.progress;
    const journeyMs = Math.max(first.endedAt, second.endedAt) - started;
    // Every document fetched, converted and indexed; webhooks may still be on their way.
    const queriesMs = Math.max(first.queriesEndedAt, second.queriesEndedAt) - started;
    sampling = false;
    await sampler;

    const loadAtEnd = round(loadavg()[0]!, 2);
    const serviceCpuMs = service.cpuMs() - cpuAtStart;
    const peakRssMb = service.peakRssMb();
    // The floor once the service has stopped, so that nothing else runs on the machine meanwhile.
    await stopService(service);
    stopped = true;
    const floor = await conversionFloorMs(work, patientIds);
    const documents = floor.documents;
    emit({
      measure: `import journey (Koa, ${DATABASE_URL ? 'PostgreSQL' : 'SQLite'})`,
      rows,
      succeeded: status.succeeded,
      importMs: Math.round(importedAt - started),
      journeyMs: Math.round(journeyMs),
      queriesMs: Math.round(queriesMs),
      queries: progress,
      documentsConverted: documents,
      documentsPerSecond: round(documents / (journeyMs / 1000)),
      // The library alone on one core, warm: what the journey is held to.
      oneCoreConversionFloorMs: Math.round(floor.bareMs),
      ratioToFloor: round(journeyMs / floor.bareMs, 2),
      queriesRatioToFloor: round(queriesMs / floor.bareMs, 2),
      // The converter with its repairs, as the service runs it, on one core, warm.
      oneCoreRepairedConversionMs: Math.round(floor.repairedMs),
      ratioToRepairedConversion: round(journeyMs / floor.repairedMs, 2),
      // The service's CPU per document against the library's: what the journey's own work costs.
      serviceCpuMsPerDocument: round(serviceCpuMs / documents, 2),
      floorMsPerDocument: round(floor.bareMs / documents, 2),
      targetRatio: 1,
      // The cores the service kept busy on average: near the machine's cores it is bound by CPU (its own
      // or what other work leaves it), well below them by waiting (one step for another, or storage).
      serviceCpuMs,
      serviceCoresBusy: round(serviceCpuMs / journeyMs, 2),
      peakRssMb,
      targetPeakRssMb: 400,
      apiP50Ms: round(percentile(latencies, 50)),
      apiP99Ms: round(percentile(latencies, 99)),
      targetApiP99Ms: 100,
      apiSamples: latencies.length,
      apiFailures,
      secondImportRows: SECOND_IMPORT_ROWS,
      secondImportMs: Math.round(secondMs),
      secondImportIdleMs: Math.round(idleSecondMs),
      secondImportRatio: round(secondMs / idleSecondMs, 2),
      targetSecondImportRatio: 1.5,
      loadAverage: { start: loadAtStart, end: loadAtEnd, afterFloor: round(loadavg()[0]!, 2) },
      webhooks: Object.fromEntries(receiver.counts),
    });
  } finally {
    if (!stopped) await stopService(service);
  }
}

async function run(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'carebridge-journey-'));
  const receiver = await startReceiver();
  try {
    const secondCsv = generateCsv({ rows: SECOND_IMPORT_ROWS, seed: 99 });
    writeFileSync(join(work, 'second.csv'), secondCsv);
    const idleSecondMs = await idleImportMs(work, receiver, secondCsv);
    for (const rows of SIZES) {
      receiver.counts.clear();
      await journey(rows, work, receiver, secondCsv, idleSecondMs);
    }
  } finally {
    receiver.server.close();
    rmSync(work, { recursive: true, force: true });
    if (DATABASE_URL && schemas.length > 0) {
      const sequelize = new Sequelize(DATABASE_URL, { logging: false });
      for (const schema of schemas) await sequelize.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sequelize.close();
    }
  }
}

try {
  await run();
} catch (error) {
  // A service that died is reported by startService when its exit comes in: give it the time to.
  process.stderr.write(`journey bench failed: ${String(error)} (${String((error as Error).cause)})\n`);
  await sleep(2_000);
  process.exitCode = 1;
}
