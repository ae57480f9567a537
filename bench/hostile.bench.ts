/**
 * The API while hostile documents are processed: four clients read a patient (GET /patient/:id) in a loop,
 * first alone, then while large hostile C-CDA uploads (a run of `<` within the conversion size limit, and
 * one past it) are stored, indexed for search and converted. Target: the reads' p99 under 100 ms
 * throughout, and the service's peak memory bounded by the size limit, not by what was uploaded.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emit, prepareDataDir, startService, stopService } from './support.js';

const MB = 1024 * 1024;
const HOSTILE_MB = Number(process.env.BENCH_HOSTILE_MB ?? 30);
const UPLOADS = Number(process.env.BENCH_HOSTILE_UPLOADS ?? 4);
const READERS = 4;

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 10) / 10;
}

/** Reads the patient in READERS loops until `work` settles (and for at least `minMs`); the latencies. */
async function readWhile(url: string, apiKey: string, work: Promise<unknown>, minMs: number) {
  const latencies: number[] = [];
  let done = false;
  let failures = 0;
  const statuses: Record<string, number> = {};
  void Promise.all([work, new Promise((resolve) => setTimeout(resolve, minMs))]).finally(() => (done = true));
  await Promise.all(
    Array.from({ length: READERS }, async () => {
      while (!done) {
        const started = performance.now();
        const response = await fetch(url, { headers: { 'x-api-key': apiKey } }).catch(() => undefined);
        if (!response?.ok) {
          failures++;
          const status = String(response?.status ?? 'no answer');
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (statuses[status] === 1 && response) process.stderr.write(`first ${status}: ${await response.clone().text()}\n`);
        }
        await response?.arrayBuffer();
        latencies.push(performance.now() - started);
      }
    }),
  );
  await work;
  latencies.sort((a, b) => a - b);
  return { requests: latencies.length, failures, ...(failures > 0 ? { statuses } : {}), p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), maxMs: quantile(latencies, 1) };
}

const dataDir = await mkdtemp(join(tmpdir(), 'carebridge-bench-hostile-'));
try {
  const { apiKey } = await prepareDataDir(dataDir, 1);
  const service = await startService(dataDir, { RATE_LIMITS: 'off' });
  try {
    const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
    const patients = (await (await fetch(`${service.url}/medical/v1/patient`, { headers })).json()) as { patients: { id: string }[] };
    const patientId = patients.patients[0]!.id;
    const read = `${service.url}/medical/v1/patient/${patientId}`;

    const baseline = await readWhile(read, apiKey, Promise.resolve(), 3_000);

    const upload = async (bytes: number) => {
      const described = await fetch(`${service.url}/medical/v1/document/upload?patientId=${patientId}`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ resourceType: 'DocumentReference', status: 'current', description: 'Hostile', content: [{ attachment: { contentType: 'application/xml' } }] }),
      });
      const { uploadUrl } = (await described.json()) as { uploadUrl: string };
      const put = await fetch(uploadUrl, { method: 'PUT', headers: { 'content-type': 'application/xml' }, body: Buffer.alloc(bytes, '<') });
      if (!put.ok) throw new Error(`upload answered ${put.status}: ${await put.text()}`);
    };
    // Conversions go on after the uploads answer: the reads go on for a while after them too.
    const uploads = Promise.all([...Array.from({ length: UPLOADS }, () => upload(HOSTILE_MB * MB)), upload(50 * MB)]).then(() => new Promise((resolve) => setTimeout(resolve, 5_000)));
    const underHostile = await readWhile(read, apiKey, uploads, 3_000);

    emit({
      measure: 'API reads while hostile documents are processed',
      uploads: `${UPLOADS} x ${HOSTILE_MB} MB of '<' (within the conversion limit) and 1 x 50 MB (past it), at once`,
      baseline,
      underHostile,
      targetP99Ms: 100,
      peakRssMb: service.peakRssMb(),
    });
  } finally {
    await stopService(service);
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
