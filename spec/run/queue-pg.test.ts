import { QueryTypes, Sequelize } from 'sequelize';
import { afterAll, describe, expect, test } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { SqlQueue } from '../../adapters/queue/sql/sql.queue.js';
import type { ClaimedJob } from '../../core/ports/queue.port.js';
import { createPgSchema, probePostgres } from '../support/pg.js';
import { defineQueueContract } from '../ports/queue.contract.js';

// Throws under CI when PostgreSQL is unreachable, so the run fails instead of skipping.
const pg = await probePostgres();

const connections: Sequelize[] = [];
function connect(pool = 5): Sequelize {
  if (!pg.available) throw new Error('PostgreSQL is not available');
  const sequelize = new Sequelize(pg.url, { dialect: 'postgres', logging: false, pool: { max: pool, min: 0, idle: 5_000 } });
  connections.push(sequelize);
  return sequelize;
}
let shared: Sequelize | undefined;

afterAll(async () => {
  await Promise.all(connections.map((sequelize) => sequelize.close()));
});

describe.skipIf(!pg.available)('SqlQueue on PostgreSQL', () => {
  defineQueueContract({
    test,
    make: async (options) => {
      shared ??= connect(10);
      const schema = await createPgSchema('queue');
      const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
      const queue = await SqlQueue.open({ ...options, sequelize: shared, schema: schema.schema, clock, ids: new SequentialIds() });
      return { queue, clock, close: () => schema.drop() };
    },
    numRuns: 15,
  });

  test('pg: workers on separate connection pools claiming in parallel never hold the same job at once', async () => {
    const schema = await createPgSchema('queueconc');
    try {
      const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
      const ids = new SequentialIds();
      const workerCount = 4;
      // Each worker is its own "process": its own Sequelize and pool, opening the queue at the same time
      // (so the migrations race too).
      const queues = await Promise.all(
        Array.from({ length: workerCount }, () => SqlQueue.open({ sequelize: connect(3), schema: schema.schema, clock, ids })),
      );
      const total = 400;
      for (let i = 0; i < total; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => queues[0]!.enqueue({ type: 'work', payload: { n: i + j } })));
      }

      const holder = new Map<string, string>();
      const claimsPerWorker = Array.from({ length: workerCount }, () => 0);
      const doubleClaims: string[] = [];
      const work = async (w: number) => {
        const workerId = `worker-${w}`;
        const queue = queues[w]!;
        for (;;) {
          const jobs: ClaimedJob[] = await queue.claim({ workerId, limit: 1 + (w % 3), leaseMs: 60_000 });
          if (jobs.length === 0) return;
          for (const job of jobs) {
            if (holder.has(job.id)) doubleClaims.push(job.id);
            holder.set(job.id, workerId);
            claimsPerWorker[w]! += 1;
          }
          // Let the other workers' claims interleave with this worker's completions.
          await new Promise((resolve) => setImmediate(resolve));
          for (const job of jobs) await queue.complete(job.id, workerId);
        }
      };
      await Promise.all(Array.from({ length: workerCount }, (_, w) => work(w)));

      expect(doubleClaims).toEqual([]);
      expect(holder.size).toBe(total);
      expect(claimsPerWorker.reduce((a, b) => a + b, 0)).toBe(total);
      expect(claimsPerWorker.filter((n) => n > 0).length, `claims per worker: ${claimsPerWorker.join(', ')}`).toBeGreaterThan(1);
      expect(await queues[1]!.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: total });
    } finally {
      await schema.drop();
    }
  });

  test('pg: when leases expire, workers racing to reclaim never take one job twice in a round', async () => {
    const schema = await createPgSchema('queuelease');
    try {
      const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
      const ids = new SequentialIds();
      const workerCount = 4;
      const queues = await Promise.all(Array.from({ length: workerCount }, () => SqlQueue.open({ sequelize: connect(3), schema: schema.schema, clock, ids })));
      const total = 120;
      for (let i = 0; i < total; i++) await queues[0]!.enqueue({ type: 'work', payload: { n: i } });

      for (let round = 1; round <= 3; round++) {
        // Every job is due again at the start of a round: pending in round 1, lease expired afterwards.
        const holder = new Map<string, string>();
        const doubleClaims: string[] = [];
        await Promise.all(
          queues.map(async (queue, w) => {
            for (;;) {
              const jobs = await queue.claim({ workerId: `worker-${w}`, limit: 7, leaseMs: 1_000 });
              if (jobs.length === 0) return;
              for (const job of jobs) {
                if (holder.has(job.id)) doubleClaims.push(job.id);
                holder.set(job.id, `worker-${w}`);
                expect(job.attempt).toBe(round);
              }
            }
          }),
        );
        expect(doubleClaims).toEqual([]);
        expect(holder.size).toBe(total);
        expect(new Set(holder.values()).size, 'only one worker took part').toBeGreaterThan(1);
        clock.advance(1_000);
      }
    } finally {
      await schema.drop();
    }
  });

  test('pg: concurrent enqueues of one key from separate pools give one job', async () => {
    const schema = await createPgSchema('queuekey');
    try {
      const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
      const ids = new SequentialIds();
      const first = await SqlQueue.open({ sequelize: connect(2), schema: schema.schema, clock, ids });
      const second = await SqlQueue.open({ sequelize: connect(2), schema: schema.schema, clock, ids });
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? first : second).enqueue({ type: 'bulk.process', payload: { i }, key: 'bulk:r1' })),
      );
      expect(new Set(results).size).toBe(1);
      expect(await first.stats()).toEqual({ pending: 1, running: 0, dead: 0, done: 0 });
    } finally {
      await schema.drop();
    }
  });

  test('pg: the tables live in the given schema and the migration is recorded in queue_migrations', async () => {
    const schema = await createPgSchema('queuemeta');
    try {
      const sequelize = connect(2);
      const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
      await SqlQueue.open({ sequelize, schema: schema.schema, clock, ids: new SequentialIds() });
      // Opening again is a no-op: the migration is not run twice.
      await SqlQueue.open({ sequelize, schema: schema.schema, clock, ids: new SequentialIds() });
      const select = <T extends object>(sql: string) => sequelize.query<T>(sql, { type: QueryTypes.SELECT, replacements: { schema: schema.schema } });
      const tables = await select<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = :schema ORDER BY tablename');
      expect(tables.map((row) => row.tablename)).toEqual(['queue_jobs', 'queue_migrations']);
      expect(await select(`SELECT name FROM "${schema.schema}"."queue_migrations"`)).toEqual([{ name: '0001-queue-jobs' }, { name: '0002-lanes-and-turns' }, { name: '0003-finished-by-age' }]);
      const indexes = await select<{ indexname: string }>(
        "SELECT indexname FROM pg_indexes WHERE schemaname = :schema AND tablename = 'queue_jobs' ORDER BY indexname",
      );
      expect(indexes.map((row) => row.indexname)).toEqual([
        'queue_jobs_active_key',
        'queue_jobs_claim_order',
        'queue_jobs_finished_updated_at',
        'queue_jobs_key_turn',
        'queue_jobs_locked_by',
        'queue_jobs_pkey',
        'queue_jobs_status_lease_until',
        'queue_jobs_status_run_at',
      ]);
    } finally {
      await schema.drop();
    }
  });
});
