import { describe, expect, test } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import { MemoryHost } from '../../hosts/memory/memory.host.js';
import { resumeInterruptedWork } from '../jobs.js';
import type { BulkRequest } from '../domain/types.js';
import { CoreError } from '../errors.js';
import type { StoragePort } from '../ports/storage.port.js';
import { NotedPauses, pauseOf } from './pause.js';
import { BULK_BATCH_SIZE } from './row-importer.js';

/*
 * A full storage pauses an import instead of failing it: the status says so, the job is retried on a bounded
 * backoff that never uses up its attempts, and the import goes on by itself once space is freed, with every
 * row one outcome and nobody created twice.
 */

// Opted out: no document query follows the import, which is all these tests look at.
const HEADER = 'externalId,firstName,lastName,dob,gender,addressLine1,city,state,zip,hieOptOut';
const ROWS = 2 * BULK_BATCH_SIZE + 100;
/** Tries while full: more than a job's attempts (10 unless told), so none of them may count. */
const STEPS = 25;

function csvOf(rows: number): string {
  const lines = [HEADER];
  for (let i = 0; i < rows; i++) lines.push(`e${i},Pat,Person${i},1980-01-0${1 + (i % 9)},F,1 Main St,Springfield,IL,62701,true`);
  return lines.join('\n') + '\n';
}

/**
 * What the SQL storage lets out when SQLite finds the disk full: an INTERNAL CoreError (the statement, which
 * may hold PHI, kept out of it) whose cause is the driver's error.
 */
function sqliteFull(): Error {
  const driver = Object.assign(new Error('SQLITE_FULL: database or disk is full'), { code: 'SQLITE_FULL', errno: 13 });
  return new CoreError('INTERNAL', 'storage query failed (SQLITE_FULL)', { cause: driver, details: { code: 'SQLITE_FULL' } });
}

/**
 * A memory storage that fills up on demand: once `fillAfterBatches` batches have committed it refuses every
 * transaction (what a batch is written in), and with `small: 'refused'` single writes of a bulk request too
 * (a disk with not even a page left); reads always work.
 */
function fillingStorage(options: { fillAfterBatches: number; small: 'accepted' | 'refused' }) {
  const inner = new MemoryStorage();
  let batches = 0;
  let freed = false;
  const full = () => !freed && batches >= options.fillAfterBatches;
  const refused = { transactions: 0, small: 0 };
  const bulkRequests = {
    ...inner.bulkRequests,
    updateIfStatus: async (...args: Parameters<StoragePort['bulkRequests']['updateIfStatus']>) => {
      if (full() && options.small === 'refused') throw (refused.small++, sqliteFull());
      return inner.bulkRequests.updateIfStatus(...args);
    },
  };
  const storage: StoragePort = {
    ...inner,
    accounts: inner.accounts,
    bulkRequests,
    transaction: async (work) => {
      if (full()) throw (refused.transactions++, sqliteFull());
      let wroteOutcomes = false;
      const result = await inner.transaction((tx) =>
        work({
          ...tx,
          bulkRows: {
            ...tx.bulkRows,
            putMany: async (outcomes) => {
              wroteOutcomes = true;
              return tx.bulkRows.putMany(outcomes);
            },
          },
        }),
      );
      if (wroteOutcomes) batches++;
      return result;
    },
    close: () => inner.close(),
  };
  return {
    storage,
    refused,
    free() {
      freed = true;
    },
  };
}

async function importWhileFull(small: 'accepted' | 'refused') {
  const clock = new SteppedClock('2026-03-02T08:00:00.000Z');
  const filling = fillingStorage({ fillAfterBatches: 1, small });
  const host = await MemoryHost.create({ clock, ids: new SequentialIds(), storage: filling.storage });
  const { apiKey } = await host.createAccount('Full Disk Clinic');
  const headers = { 'x-api-key': apiKey };
  const facility = await host.request({
    method: 'POST',
    path: '/medical/v1/facility',
    headers,
    body: { name: 'Main', npi: '1234567893', address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' } },
  });
  expect(facility.status).toBe(201);
  const started = await host.request({ method: 'POST', path: '/medical/v1/patient/bulk', headers, query: { facilityId: (facility.body as { id: string }).id } });
  const { requestId, uploadUrl } = started.body as { requestId: string; uploadUrl: string };
  const url = new URL(uploadUrl);
  const uploaded = await host.request({
    method: 'PUT',
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: { ...headers, 'content-type': 'text/csv' },
    bodyStream: csvOf(ROWS),
  });
  expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
  const status = async () => {
    const response = await host.request({ method: 'GET', path: `/medical/v1/patient/bulk/${requestId}`, headers });
    expect(response.status).toBe(200);
    return response.body as Record<string, unknown> & { status: string; processed: number; paused?: { code: string; since: string; reason: string } };
  };
  return { host, clock, filling, status, requestId, headers };
}

describe('an import on a full storage', () => {
  for (const small of ['accepted', 'refused'] as const) {
    test(`pauses with the reason in its status, is never failed, and resumes by itself once space is freed (single writes ${small} while full)`, async () => {
      const { host, clock, filling, status, requestId } = await importWhileFull(small);
      try {
        const pausedAt = clock.now().toISOString();
        await host.settle();
        const paused = await status();
        expect(paused).toMatchObject({ status: 'processing', processed: BULK_BATCH_SIZE });
        expect(paused.paused).toEqual({ code: 'STORAGE_FULL', since: pausedAt, reason: expect.stringContaining('storage is full') });
        expect(paused.paused!.reason).toContain(pausedAt);
        expect(paused.paused!.reason).toMatch(/resumes by itself once space is freed/);
        expect(paused.reason).toBeUndefined();
        // Written to the request when the storage takes that one write (every instance then shows it), else
        // shown from what the process running the import noted.
        const stored = await host.deps.storage.bulkRequests.getById(requestId);
        expect(stored?.paused).toEqual(small === 'accepted' ? { code: 'STORAGE_FULL', since: pausedAt } : undefined);
        if (small === 'refused') expect(filling.refused.small).toBeGreaterThan(0);

        // Far longer, and retried far more often, than the job's attempts would allow for any other failure.
        let retries = 0;
        for (let step = 0; step < STEPS; step++) {
          const before = filling.refused.transactions;
          clock.advance(30_000);
          await host.settle();
          retries += filling.refused.transactions > before ? 1 : 0;
          const now = await status();
          expect(now.status).toBe('processing');
          // The pause keeps the instant it began.
          expect(now.paused).toMatchObject({ code: 'STORAGE_FULL', since: pausedAt });
        }
        // Never more than 30 s between tries, so freed space is noticed within that.
        expect(retries).toBe(STEPS);
        expect((await host.deps.queue.stats()).dead).toBe(0);

        filling.free();
        clock.advance(30_000);
        await host.settle();
        const done = await status();
        expect(done).toMatchObject({ status: 'completed', processed: ROWS, succeeded: ROWS, failed: 0, created: ROWS });
        expect(done.paused).toBeUndefined();

        const outcomes = await host.deps.storage.bulkRows.range(requestId, 0, ROWS + 10);
        expect(outcomes.map((outcome) => outcome.rowIndex)).toEqual(Array.from({ length: ROWS }, (_, i) => i));
        const patientIds = outcomes.map((outcome) => outcome.patientId);
        expect(new Set(patientIds).size).toBe(ROWS);
        const [account] = await host.deps.storage.accounts.list();
        expect(await host.deps.storage.patients.list(account!.id)).toHaveLength(ROWS);
        expect((await host.deps.queue.stats()).dead).toBe(0);
      } finally {
        await host.close();
      }
    });
  }

  test('a pause ends with the first batch written after it, not only at completion', async () => {
    const { host, clock, filling, status } = await importWhileFull('accepted');
    try {
      await host.settle();
      expect((await status()).paused).toBeDefined();
      // Room for one more batch only: it is written, the next one finds the storage full again.
      filling.free();
      const write = filling.storage.transaction.bind(filling.storage);
      let written = 0;
      filling.storage.transaction = async (work) => {
        if (written >= 1) throw sqliteFull();
        const result = await write(work);
        written++;
        return result;
      };
      clock.advance(30_000);
      await host.settle();
      const again = await status();
      expect(again).toMatchObject({ status: 'processing', processed: 2 * BULK_BATCH_SIZE });
      // A new pause, since the storage filled again after a batch went through.
      expect(again.paused).toMatchObject({ code: 'STORAGE_FULL', since: clock.now().toISOString() });
    } finally {
      await host.close();
    }
  });
});

describe('an import whose job died while the storage was full', () => {
  test('is queued again by the running service once it has been quiet a while, and completes', async () => {
    const { host, clock, filling, status } = await importWhileFull('refused');
    try {
      await host.settle();
      expect((await status()).paused).toBeDefined();
      // What lease expiries do to a job whose failures cannot be written: its attempts run out.
      for (;;) {
        clock.advance(30_000);
        const [job] = await host.deps.queue.claim({ workerId: 'gone', limit: 1, leaseMs: 1_000 });
        if (!job) break;
        await host.deps.queue.fail(job.id, 'gone', { error: 'lease expired', retryAt: clock.now().toISOString() });
      }
      expect((await host.deps.queue.stats()).dead).toBe(1);
      filling.free();
      await host.settle();
      expect((await status()).status).toBe('processing');

      // Changed within the quiet time: left alone (it may be moving). Past it: queued again.
      const [request] = await host.deps.storage.bulkRequests.listByStatus('processing', 10);
      const quietMs = clock.now().getTime() - Date.parse(request!.updatedAt);
      expect(await resumeInterruptedWork(host.deps, { unchangedForMs: quietMs + 1 })).toEqual({ resumed: 0 });
      await host.settle();
      expect((await status()).status).toBe('processing');
      expect(await resumeInterruptedWork(host.deps, { unchangedForMs: quietMs })).toEqual({ resumed: 1 });
      await host.settle();
      expect(await status()).toMatchObject({ status: 'completed', processed: ROWS, created: ROWS });
    } finally {
      await host.close();
    }
  });
});

describe('the pauses a process notes', () => {
  const request = (id: string, processed: number, status: BulkRequest['status'] = 'processing') => ({ id, processed, status }) as BulkRequest;
  const pause = { code: 'STORAGE_FULL', since: '2026-03-02T08:00:00.000Z' } as const;

  test('hold only while the request has not moved on: a batch written by any instance, or leaving processing, ends them', () => {
    const pauses = new NotedPauses();
    pauses.note(request('a', 2_500), pause);
    expect(pauseOf({ pauses }, request('a', 2_500))).toEqual(pause);
    expect(pauseOf({ pauses }, request('a', 5_000))).toBeUndefined();
    expect(pauseOf({ pauses }, request('a', 2_500, 'completed'))).toBeUndefined();
    expect(pauseOf({ pauses }, request('b', 2_500))).toBeUndefined();
    // The pause written to the request wins.
    const written = { code: 'STORAGE_FULL', since: '2026-03-02T07:00:00.000Z' } as const;
    expect(pauseOf({ pauses }, { ...request('a', 2_500), paused: written })).toEqual(written);
    pauses.forget('a');
    expect(pauseOf({ pauses }, request('a', 2_500))).toBeUndefined();
  });

  test('are bounded: at most 1,000, the oldest going first', () => {
    const pauses = new NotedPauses();
    for (let i = 0; i < 2_500; i++) pauses.note(request(`r${i}`, 0), pause);
    expect(pauses.size).toBe(1_000);
    expect(pauses.of(request('r2499', 0))).toEqual(pause);
    expect(pauses.of(request('r0', 0))).toBeUndefined();
  });
});
