/**
 * What the benchmarks share: the real service as a child process (started as `npm start` starts it), a
 * data directory prepared with an account and a facility, and a webhook receiver on 127.0.0.1.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Sequelize } from 'sequelize';
import { createAccount } from '../core/accounts.js';
import { createFacility } from '../core/entities/facilities.js';
import { matchKeysFor } from '../core/matching/block.js';
import type { Patient } from '../core/domain/types.js';
import { SystemClock } from '../adapters/clock/system.clock.js';
import { NodeSecrets } from '../adapters/crypto/node.secrets.js';
import { Uuid7Ids } from '../adapters/ids/uuid7.ids.js';
import { SequelizeStorage } from '../adapters/storage/sequelize/sequelize.storage.js';
import { personOf } from './generate.js';
import { freePort } from '../spec/support/service-process.js';
import { startScriptArguments } from '../spec/support/start-command.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const POPULATION_SEED = 7;

export function emit(measure: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(measure)}\n`);
}

export { freePort };

/** PostgreSQL instead of the SQLite file in the data directory: a schema of its own on that database. */
export interface BenchDatabase {
  url: string;
  schema: string;
}

/** The service's environment for `database`. */
export function databaseEnv(database: BenchDatabase | undefined): Record<string, string> {
  return database ? { DATABASE_URL: database.url, DATABASE_SCHEMA: database.schema } : {};
}

/** Creates the account (and facility) in the data directory before the service starts; seeds patients. */
export async function prepareDataDir(dataDir: string, existing: number, database?: BenchDatabase): Promise<{ apiKey: string; facilityId: string }> {
  if (database) {
    const admin = new Sequelize(database.url, { logging: false });
    await admin.query(`CREATE SCHEMA IF NOT EXISTS "${database.schema}"`);
    await admin.close();
  }
  const storage = await SequelizeStorage.open(database ? { url: database.url, schema: database.schema } : { dataDir });
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
          version: 1,
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

export interface Receiver {
  url: string;
  server: Server;
  completed: (requestId: string) => Promise<number>;
  /** Messages received (pings aside), by `meta.type`. */
  counts: Map<string, number>;
}

/** A webhook receiver that answers pings and notes when each bulk request's completed message lands. */
export async function startReceiver(): Promise<Receiver> {
  const waiters = new Map<string, (at: number) => void>();
  const arrived = new Map<string, number>();
  const counts = new Map<string, number>();
  const server = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const message = JSON.parse(body);
      if (message.meta?.type === 'ping') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pong: message.ping }));
        return;
      }
      counts.set(message.meta?.type, (counts.get(message.meta?.type) ?? 0) + 1);
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
    counts,
    completed: (requestId) => {
      const at = arrived.get(requestId);
      return at !== undefined ? Promise.resolve(at) : new Promise((resolve) => waiters.set(requestId, resolve));
    },
  };
}

export interface Service {
  child: ChildProcess;
  url: string;
  peakRssMb: () => number;
  /** CPU time the service has used so far (user + system, every thread), ms. */
  cpuMs: () => number;
}

/**
 * BENCH_BUILT=1: the service as `npm start` runs it (its flags, the JavaScript built into dist/, built once
 * per bench process here), rather than the sources through tsx: what a deployment's memory and speed are,
 * without the TypeScript loader's thread and the compiled sources it keeps.
 */
let built = false;
function builtStartArguments(): string[] {
  if (!built) {
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    built = true;
  }
  const manifest = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { scripts: { start: string } };
  const [command, ...args] = manifest.scripts.start.trim().split(/\s+/);
  if (command !== 'node') throw new Error(`npm start must run node itself, not ${command}`);
  return args;
}

/**
 * Starts the service as a child process. `cpus` (a `taskset -c` list such as `0` or `0,1`) pins it to those
 * cores (util-linux's taskset runs it), for measures of instances that each have cores of their own.
 */
export async function startService(dataDir: string, env: Record<string, string> = {}, options: { cpus?: string } = {}): Promise<Service> {
  const port = await freePort();
  // BENCH_CPU_PROF=<dir>: the service writes a V8 CPU profile there when it stops (node --cpu-prof), one per
  // thread (the converter threads' too).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const node = [process.execPath, ...profile, ...(process.env.BENCH_BUILT === '1' ? builtStartArguments() : startScriptArguments())];
  const [command, ...args] = options.cpus === undefined ? node : ['taskset', '-c', options.cpus, ...node];
  const child = spawn(command!, args, {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', WEBHOOK_ALLOW_PRIVATE: 'true', ...env },
    // BENCH_SERVICE_LOG=<file>: the service's log lines (stdout) go there instead of nowhere.
    stdio: ['ignore', process.env.BENCH_SERVICE_LOG ? openSync(process.env.BENCH_SERVICE_LOG, 'a') : 'ignore', 'inherit'],
  });
  child.once('exit', (code, signal) => {
    if (!child.killed) process.stderr.write(`the service exited on its own: code ${code}, signal ${signal}\n`);
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
    // utime and stime of /proc/<pid>/stat, in clock ticks (100 a second on Linux); the fields after the
    // command's name, which is in parentheses and may hold spaces.
    cpuMs: () => {
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    },
  };
}

export async function stopService(service: Service): Promise<void> {
  if (service.child.exitCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGTERM');
  await exited;
}

