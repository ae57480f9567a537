/**
 * Benchmark of bulk patient create through the real Koa service on SQLite, as a customer sees it
 * (start -> PUT -> completed webhook), each measure with its ratio to csv-parse alone reading the same
 * file in the same run. The service runs as a child process so its peak RSS is its own. Prints one JSON
 * object per measure.
 */
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse';
import { generateCsv } from './generate.js';
import { emit, POPULATION_SEED, prepareDataDir, startReceiver, startService, stopService, type Receiver, type Service } from './support.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const EXISTING = (process.env.BENCH_EXISTING ?? '100000,1000000').split(',').filter(Boolean).map(Number);
/** BENCH_MEASURES=dry,real: only those of the fresh-account runs (both by default; profiling one at a time). */
const FRESH_RUNS = (process.env.BENCH_MEASURES ?? 'dry,real').split(',');

/** csv-parse alone, streaming the same file from disk: the baseline every ratio is against. */
async function csvParseBaselineMs(file: string): Promise<number> {
  const started = performance.now();
  let records = 0;
  for await (const _record of createReadStream(file).pipe(parse({ bom: true, record_delimiter: ['\r\n', '\n'] }))) records++;
  if (records === 0) throw new Error('baseline read nothing');
  return performance.now() - started;
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
