/**
 * Request-path throughput, with wrk (Debian's `wrk`) on loopback: the service's GET /medical/v1/patient/:id
 * (authenticated, one patient read) against a bare Koa app answering a small JSON body, on the same
 * machine in the same run, with /healthz and two kinds of 401 beside them. Targets: the patient read at
 * >= 25% of bare Koa, and no slower than 2x a 401.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { emit, freePort, prepareDataDir, startService, stopService } from './support.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.BENCH_THROUGHPUT_SECONDS ?? 8);
const CONNECTIONS = Number(process.env.BENCH_THROUGHPUT_CONNECTIONS ?? 32);

if (spawnSync('wrk', ['--version']).error) {
  emit({ measure: 'request-path throughput', skipped: 'wrk is not installed (apt-get install -y wrk)' });
  process.exit(0);
}

/** CPU time (user + system) a process has used so far, in microseconds, from /proc. */
function cpuMicros(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/**
 * Requests per second wrk measured, its latency quantiles, and the server's CPU time per request: on a
 * machine busy with other work throughput swings with the load, CPU per request much less.
 */
function wrk(url: string, headers: Record<string, string> = {}, serverPid?: number): { perSecond: number; p50Ms: number; p99Ms: number; non2xx: number; cpuUsPerRequest: number } {
  const cpuBefore = cpuMicros(serverPid);
  const args = ['-t2', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--latency'];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  const result = spawnSync('wrk', [...args, url], { encoding: 'utf8' });
  const out = result.stdout;
  const perSecond = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const ms = (label: string) => {
    const match = new RegExp(`\\s${label}%\\s+([\\d.]+)(us|ms|s)`).exec(out);
    if (!match) return NaN;
    const value = Number(match[1]);
    return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value;
  };
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const cpuUsPerRequest = Number(((cpuMicros(serverPid) - cpuBefore) / requests).toFixed(1));
  return { perSecond: Math.round(perSecond), p50Ms: ms('50'), p99Ms: ms('99'), non2xx, cpuUsPerRequest };
}

// The bare Koa app in a process of its own, as the service is.
const barePort = await freePort();
const bare = spawn(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    `import Koa from 'koa';
     const app = new Koa();
     app.use((ctx) => { ctx.body = { id: '0192a6d0-0000-7000-8000-000000000001', firstName: 'Jane', lastName: 'Doe' }; });
     app.listen(${barePort}, '127.0.0.1');`,
  ],
  { cwd: ROOT, stdio: 'ignore' },
);
const dataDir = await mkdtemp(join(tmpdir(), 'carebridge-throughput-'));
try {
  const { apiKey, facilityId } = await prepareDataDir(dataDir, 1_000);
  const service = await startService(dataDir);
  try {
    const created = await fetch(`${service.url}/medical/v1/patient?facilityId=${facilityId}`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({
        firstName: 'Jane',
        lastName: 'Doe',
        dob: '1980-01-02',
        genderAtBirth: 'F',
        address: [{ addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' }],
      }),
    });
    const patient = (await created.json()) as { id: string };
    if (!created.ok) throw new Error(`creating the patient answered ${created.status}`);
    for (let i = 0; i < 50; i++) await fetch(`http://127.0.0.1:${barePort}/`).catch(() => undefined);

    const pid = service.child.pid;
    const bareKoa = wrk(`http://127.0.0.1:${barePort}/`, {}, bare.pid);
    const patientRead = wrk(`${service.url}/medical/v1/patient/${patient.id}`, { 'x-api-key': apiKey }, pid);
    const health = wrk(`${service.url}/healthz`, {}, pid);
    const noKey = wrk(`${service.url}/medical/v1/patient/${patient.id}`, {}, pid);
    const wrongKey = wrk(`${service.url}/medical/v1/patient/${patient.id}`, { 'x-api-key': 'cb_not-a-key-of-this-service' }, pid);
    emit({
      measure: 'request-path throughput (wrk, loopback)',
      connections: CONNECTIONS,
      seconds: SECONDS,
      bareKoa,
      patientRead,
      healthz: health,
      unauthorizedNoKey: noKey,
      unauthorizedWrongKey: wrongKey,
      patientReadVsBareKoa: Number((patientRead.perSecond / bareKoa.perSecond).toFixed(3)),
      targetVsBareKoa: 0.25,
      unauthorizedVsPatientRead: Number((noKey.perSecond / patientRead.perSecond).toFixed(2)),
      // The same two ratios in CPU per request, steadier than throughput when other work shares the cores.
      cpuBareKoaVsPatientRead: Number((bareKoa.cpuUsPerRequest / patientRead.cpuUsPerRequest).toFixed(3)),
      cpuPatientReadVsUnauthorized: Number((patientRead.cpuUsPerRequest / noKey.cpuUsPerRequest).toFixed(2)),
      targetUnauthorizedVsPatientReadAtMost: 2,
    });
  } finally {
    await stopService(service);
  }
} finally {
  bare.kill();
  await rm(dataDir, { recursive: true, force: true });
}
