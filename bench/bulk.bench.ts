/**
 * Issue 5 benchmark: bulk patient create through the real Koa service on SQLite, as a customer sees it
 * (start -> PUT -> completed webhook), each measure with its ratio to csv-parse alone reading the same
 * file in the same run. The service runs as a child process so its peak RSS is its own. Prints one JSON
 * object per measure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse';
import { createAccount } from '../core/accounts.js';
import { createFacility } from '../core/entities/facilities.js';
import { matchKeysFor } from '../core/matching/block.js';
import type { Patient } from '../core/domain/types.js';
import { SystemClock } from '../adapters/clock/system.clock.js';
import { NodeSecrets } from '../adapters/crypto/node.secrets.js';
import { Uuid7Ids } from '../adapters/ids/uuid7.ids.js';
import { SequelizeStorage } from '../adapters/storage/sequelize/sequelize.storage.js';
import { generateCsv, personOf } from './generate.js';
import { startScriptArguments } from '../spec/support/start-command.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const EXISTING = (process.env.BENCH_EXISTING ?? '100000,1000000').split(',').filter(Boolean).map(Number);
const POPULATION_SEED = 7;
/** BENCH_MEASURES=dry,real: only those of the fresh-account runs (both by default; profiling one at a time). */
const FRESH_RUNS = (process.env.BENCH_MEASURES ?? 'dry,real').split(',');

function emit(measure: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(measure)}\n`);
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** csv-parse alone, streaming the same file from disk: the baseline every ratio is against. */
async function csvParseBaselineMs(file: string): Promise<number> {
  const started = performance.now();
  let records = 0;
  for await (const _record of createReadStream(file).pipe(parse({ bom: true, record_delimiter: ['\r\n', '\n'] }))) records++;
  if (records === 0) throw new Error('baseline read nothing');
  return performance.now() - started;
}

/** Creates the account (and facility) in the data directory before the service starts; seeds patients. */
async function prepareDataDir(dataDir: string, existing: number): Promise<{ apiKey: string; facilityId: string }> {
  const storage = await SequelizeStorage.open({ dataDir });
  try {
    const deps = { storage, secrets: new NodeSecrets(), ids: new Uuid7Ids(), clock: new SystemClock() };
    const { account, apiKey } = await createAccount(deps, { name: 'Bench' });
    const facility = await createFacility(deps, account.id, {
      name: 'Bench Clinic',
      npi: '1234567893',
      tin: undefined,
      active: true,
      address: { addressLine1: '1 Main St', addressLine2: undefined, city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' },
    });
    const now = new Date().toISOString();
    for (let start = 0; start < existing; start += 5_000) {
      const batch: Patient[] = [];
      for (let i = start; i < Math.min(existing, start + 5_000); i++) {
        const person = personOf(POPULATION_SEED, i);
        batch.push({
          id: deps.ids.next(),
          accountId: account.id,
          facilityIds: [facility.id],
          cohortIds: [],
          firstName: person.firstName,
          lastName: person.lastName,
          dob: person.dob,
          genderAtBirth: person.gender as Patient['genderAtBirth'],
          address: [{ addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: person.zip, country: 'USA' }],
          contact: [],
          personalIdentifiers: [],
          hieOptOut: false,
          matchKeys: matchKeysFor({ lastName: person.lastName, dob: person.dob, genderAtBirth: person.gender as Patient['genderAtBirth'] }),
          createdAt: now,
          updatedAt: now,
        });
      }
      await storage.patients.insertMany(batch);
    }
    return { apiKey, facilityId: facility.id };
  } finally {
    await storage.close();
  }
}

interface Receiver {
  url: string;
  server: Server;
  completed: (requestId: string) => Promise<number>;
}

/** A webhook receiver that answers pings and notes when each bulk request's completed message lands. */
async function startReceiver(): Promise<Receiver> {
  const waiters = new Map<string, (at: number) => void>();
  const arrived = new Map<string, number>();
  const server = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const message = JSON.parse(body);
      if (message.meta?.type === 'ping') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pong: message.ping }));
        return;
      }
      const bulk = message.bulkPatientCreate;
      if (bulk && (bulk.status === 'completed' || bulk.status === 'failed')) {
        const at = performance.now();
        arrived.set(bulk.requestId, at);
        waiters.get(bulk.requestId)?.(at);
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    server,
    completed: (requestId) => {
      const at = arrived.get(requestId);
      return at !== undefined ? Promise.resolve(at) : new Promise((resolve) => waiters.set(requestId, resolve));
    },
  };
}

interface Service {
  child: ChildProcess;
  url: string;
  peakRssMb: () => number;
}

async function startService(dataDir: string): Promise<Service> {
  const port = await freePort();
  // BENCH_CPU_PROF=<dir>: the service writes a V8 CPU profile there when it stops (node --cpu-prof).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, ...startScriptArguments()], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', WEBHOOK_ALLOW_PRIVATE: 'true' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      if (i > 600) throw new Error('service did not start');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    child,
    url,
    // VmHWM: the kernel's record of the process's peak resident set.
    peakRssMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
      return Math.round(kb / 1024);
    },
  };
}

async function stopService(service: Service): Promise<void> {
  if (service.child.exitCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGTERM');
  await exited;
}

/** start -> PUT -> completed webhook, in ms; also the final status. */
async function importThroughService(service: Service, receiver: Receiver, apiKey: string, facilityId: string, file: string, dryRun: boolean) {
  const headers = { 'x-api-key': apiKey };
  const started = performance.now();
  const start = await fetch(`${service.url}/medical/v1/patient/bulk?facilityId=${facilityId}&dryRun=${dryRun}`, { method: 'POST', headers });
  const { requestId, uploadUrl } = (await start.json()) as { requestId: string; uploadUrl: string };
  const upload = await fetch(uploadUrl, {
    method: 'PUT',
    headers: { ...headers, 'content-type': 'text/csv' },
    body: createReadStream(file) as unknown as RequestInit['body'],
    duplex: 'half',
  } as RequestInit);
  if (upload.status !== 200) throw new Error(`upload failed: ${upload.status} ${await upload.text()}`);
  const uploadedAt = performance.now();
  const completedAt = await receiver.completed(requestId);
  const body = (await (await fetch(`${service.url}/medical/v1/patient/bulk/${requestId}`, { headers })).json()) as Record<string, unknown>;
  const status = { status: body.status, total: body.total, succeeded: body.succeeded, failed: body.failed };
  // uploadMs: start -> PUT answered (upload stored and checked); the rest is the import and the webhook.
  return { ms: completedAt - started, status: { uploadMs: Math.round(uploadedAt - started), ...status } };
}

async function run(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'carebridge-bench-'));
  const receiver = await startReceiver();
  try {
    const file = join(work, 'patients.csv');
    writeFileSync(file, generateCsv({ rows: ROWS, seed: 1 }));
    const baselineMs = await csvParseBaselineMs(file);
    emit({ measure: 'csv-parse baseline', rows: ROWS, ms: Math.round(baselineMs) });

    // (1) and (4): a fresh account, end to end; (2): the same file as a dry run, on the same service.
    {
      const dataDir = join(work, 'fresh');
      const { apiKey, facilityId } = await prepareDataDir(dataDir, 0);
      const service = await startService(dataDir);
      try {
        await fetch(`${service.url}/settings`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ webhookUrl: receiver.url }) });
        if (FRESH_RUNS.includes('dry')) {
          const dry = await importThroughService(service, receiver, apiKey, facilityId, file, true);
          emit({ measure: 'bulk create, dry run', rows: ROWS, ms: Math.round(dry.ms), ratioToCsvParse: +(dry.ms / baselineMs).toFixed(2), targetMs: 3_000, ...dry.status });
        }
        if (FRESH_RUNS.includes('real')) {
          const real = await importThroughService(service, receiver, apiKey, facilityId, file, false);
          emit({ measure: 'bulk create, end to end (Koa, SQLite)', rows: ROWS, ms: Math.round(real.ms), ratioToCsvParse: +(real.ms / baselineMs).toFixed(2), targetMs: 10_000, targetRatio: 8, ...real.status });
        }
        emit({ measure: 'service peak RSS during the runs', peakRssMb: service.peakRssMb(), targetMb: 400 });
      } finally {
        await stopService(service);
      }
    }

    // (3): the same size of import into accounts already holding many patients, a share of rows matching them.
    const perRow: Record<number, number> = {};
    for (const existing of EXISTING) {
      const dataDir = join(work, `existing-${existing}`);
      const seededAt = performance.now();
      const { apiKey, facilityId } = await prepareDataDir(dataDir, existing);
      const seedMs = performance.now() - seededAt;
      const matchingFile = join(work, `matching-${existing}.csv`);
      writeFileSync(matchingFile, generateCsv({ rows: ROWS, seed: 2, matchingShare: 0.2, existingPopulation: { seed: POPULATION_SEED, size: existing } }));
      const service = await startService(dataDir);
      try {
        await fetch(`${service.url}/settings`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ webhookUrl: receiver.url }) });
        const result = await importThroughService(service, receiver, apiKey, facilityId, matchingFile, false);
        perRow[existing] = result.ms / ROWS;
        emit({ measure: `bulk create into an account holding ${existing} patients`, rows: ROWS, existing, seedMs: Math.round(seedMs), ms: Math.round(result.ms), usPerRow: Math.round(perRow[existing]! * 1000), ratioToCsvParse: +(result.ms / baselineMs).toFixed(2), ...result.status });
      } finally {
        await stopService(service);
      }
    }
    if (EXISTING.length >= 2) {
      const [small, large] = [EXISTING[0]!, EXISTING[EXISTING.length - 1]!];
      emit({ measure: 'per-row cost growth', from: small, to: large, ratio: +(perRow[large]! / perRow[small]!).toFixed(2), target: 1.5 });
    }
  } finally {
    receiver.server.close();
    rmSync(work, { recursive: true, force: true });
  }
}

await run();
