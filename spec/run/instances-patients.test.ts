import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { ApiResponse } from '../../core/api/types.js';
import { createCarebridge, type Carebridge } from '../../hosts/embedded/carebridge.js';
import { csvOf, personRow, SAMPLE_ADDRESS } from '../support/api.js';
import { createPgSchema, probePostgres } from '../support/pg.js';

// Under CI an unreachable PostgreSQL throws here, failing the file; elsewhere its half is skipped with a printed reason.
const pg = await probePostgres();

/*
 * Two instances of the embedded service on one database, each running imports and answering creates at
 * once: the account's people are one patient each, whichever instance wrote them. On one SQLite file
 * and on one PostgreSQL schema.
 */

const TRIALS = 3;
const SECRET = 'instances-patients-url-signing-secret';
const PUBLIC_URL = 'https://cb.example.org';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** People `from`..`to` - 1 as import rows, opted out so the imports start no document queries. */
const rowsOf = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => personRow(from + i, { hieOptOut: 'true' }));

function call(instance: Carebridge, apiKey: string, method: string, url: string, options: { body?: unknown; csv?: string } = {}): Promise<ApiResponse> {
  const target = new URL(url, PUBLIC_URL);
  return instance.handler({
    method,
    path: target.pathname,
    query: Object.fromEntries(target.searchParams),
    headers: { 'x-api-key': apiKey, 'content-type': options.csv !== undefined ? 'text/csv' : 'application/json' },
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.csv !== undefined ? { bodyStream: options.csv } : {}),
  });
}

async function twoInstances(database: { dataDir: string; database?: string; databaseSchema?: string }): Promise<[Carebridge, Carebridge]> {
  const start = async () => {
    const instance = await createCarebridge({ ...database, publicUrl: PUBLIC_URL, urlSigningSecret: SECRET, background: false, ccdaWorkers: 1, jobConcurrency: 2 });
    cleanups.push(() => instance.close());
    return instance;
  };
  return [await start(), await start()];
}

async function trial(instances: [Carebridge, Carebridge]): Promise<void> {
  const [one, two] = instances;
  const { apiKey } = await one.createAccount('Instances Clinic');
  const facility = await call(one, apiKey, 'POST', '/medical/v1/facility', { body: { name: 'Main', npi: '1234567893', address: SAMPLE_ADDRESS } });
  expect(facility.status).toBe(201);
  // People 0..399 and 200..599, and the first file again: each imported through one instance or the other.
  const files = [csvOf(rowsOf(0, 400)), csvOf(rowsOf(200, 600)), csvOf(rowsOf(0, 400))];
  const requests: string[] = [];
  for (const [i, csv] of files.entries()) {
    const instance = instances[i % 2]!;
    const started = await call(instance, apiKey, 'POST', '/medical/v1/patient/bulk');
    expect(started.status).toBe(200);
    const body = started.body as { requestId: string; uploadUrl: string };
    expect((await call(instance, apiKey, 'PUT', body.uploadUrl, { csv })).status).toBe(200);
    requests.push(body.requestId);
  }
  // Both instances take the queued imports, while requests to both create people of the files.
  const creates = [5, 300, 598].flatMap((n) =>
    instances.map((instance) =>
      call(instance, apiKey, 'POST', '/medical/v1/patient', {
        body: { firstName: `Jane${String.fromCharCode(97 + (n % 26))}`, lastName: `Doe${n}`, dob: '1980-01-15', genderAtBirth: 'F', address: [SAMPLE_ADDRESS] },
      }),
    ),
  );
  await Promise.all([one.settle(), two.settle(), ...creates]);
  for (const created of await Promise.all(creates)) expect([200, 201]).toContain(created.status);
  await Promise.all([one.settle(), two.settle()]);
  for (const requestId of requests) {
    expect((await call(one, apiKey, 'GET', `/medical/v1/patient/bulk/${requestId}`)).body).toMatchObject({ status: 'completed', failed: 0 });
  }
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = (await call(two, apiKey, 'GET', `/medical/v1/patient?count=500${cursor ? `&cursor=${cursor}` : ''}`)).body as {
      patients: { firstName: string; lastName: string }[];
      meta: { nextPage?: string };
    };
    names.push(...page.patients.map((patient) => `${patient.firstName} ${patient.lastName}`));
    cursor = page.meta.nextPage ? new URL(page.meta.nextPage).searchParams.get('cursor')! : undefined;
  } while (cursor);
  expect({ patients: names.length, people: new Set(names).size }).toEqual({ patients: 600, people: 600 });
}

describe('one person, one patient across instances sharing a database', () => {
  test(`SQLite file: imports and creates through two instances at once (${TRIALS} trials)`, async () => {
    for (let i = 0; i < TRIALS; i++) {
      const dataDir = await mkdtemp(join(tmpdir(), 'carebridge-instances-patients-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      await trial(await twoInstances({ dataDir }));
    }
  });

  test.skipIf(!pg.available)(`PostgreSQL: imports and creates through two instances at once (${TRIALS} trials)`, async () => {
    for (let i = 0; i < TRIALS; i++) {
      const dataDir = await mkdtemp(join(tmpdir(), 'carebridge-instances-patients-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const schema = await createPgSchema('instpatients');
      cleanups.push(() => schema.drop());
      await trial(await twoInstances({ dataDir, database: schema.url, databaseSchema: schema.schema }));
    }
  });
});
