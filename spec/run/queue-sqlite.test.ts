import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryTypes, Sequelize, type Transaction } from 'sequelize';
import { expect, test, vi } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { SqlQueue } from '../../adapters/queue/sql/sql.queue.js';
import { openSequelize, runTransaction } from '../../adapters/storage/sequelize/connection.js';
import { defineQueueContract } from '../ports/queue.contract.js';
import { runAtRank } from '../../adapters/work-rank.js';

defineQueueContract({
  test,
  make: async (options) => {
    const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
    const sequelize = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
    const queue = await SqlQueue.open({ ...options, sequelize, clock, ids: new SequentialIds() });
    return { queue, clock, close: () => sequelize.close() };
  },
  numRuns: 40,
});

test('sqlite: two connections to one database file (as two processes would have) never claim a job twice', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-queue-'));
  const connections: Sequelize[] = [];
  try {
    const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
    const ids = new SequentialIds();
    const open = async () => {
      const sequelize = new Sequelize({ dialect: 'sqlite', storage: join(dir, 'queue.sqlite'), logging: false });
      connections.push(sequelize);
      // Writers wait for each other instead of failing at once, as the service configures it.
      await sequelize.query('PRAGMA busy_timeout = 5000');
      await sequelize.query('PRAGMA journal_mode = WAL', { type: QueryTypes.SELECT });
      return SqlQueue.open({ sequelize, clock, ids });
    };
    const first = await open();
    const second = await open();
    const total = 150;
    for (let i = 0; i < total; i++) await first.enqueue({ type: 'work', payload: i });

    const holder = new Map<string, string>();
    const doubleClaims: string[] = [];
    const work = async (queue: SqlQueue, workerId: string) => {
      for (;;) {
        const jobs = await queue.claim({ workerId, limit: 3, leaseMs: 60_000 });
        if (jobs.length === 0) return;
        for (const job of jobs) {
          if (holder.has(job.id)) doubleClaims.push(job.id);
          holder.set(job.id, workerId);
        }
        for (const job of jobs) await queue.complete(job.id, workerId);
      }
    };
    await Promise.all([work(first, 'a1'), work(first, 'a2'), work(second, 'b1'), work(second, 'b2')]);
    expect(doubleClaims).toEqual([]);
    expect(holder.size).toBe(total);
    expect(await second.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: total });
  } finally {
    await Promise.all(connections.map((sequelize) => sequelize.close()));
    await rm(dir, { recursive: true, force: true });
  }
});

test('sqlite: reopening runs no migration twice and keeps the jobs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-queue-'));
  try {
    const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
    const storage = join(dir, 'queue.sqlite');
    const before = new Sequelize({ dialect: 'sqlite', storage, logging: false });
    const id = await (await SqlQueue.open({ sequelize: before, clock, ids: new SequentialIds() })).enqueue({ type: 't', payload: { kept: true } });
    await before.close();

    const after = new Sequelize({ dialect: 'sqlite', storage, logging: false });
    try {
      const queue = await SqlQueue.open({ sequelize: after, clock, ids: new SequentialIds({ seed: 1 }) });
      expect(await after.query('SELECT name FROM queue_migrations', { type: QueryTypes.SELECT })).toEqual([{ name: '0001-queue-jobs' }, { name: '0002-lanes-and-turns' }, { name: '0003-finished-by-age' }]);
      expect(await queue.claim({ workerId: 'w', limit: 5, leaseMs: 1_000 })).toMatchObject([{ id, payload: { kept: true } }]);
    } finally {
      await after.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('sqlite: a schema is refused (SQLite has none)', async () => {
  const sequelize = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
  try {
    await expect(SqlQueue.open({ sequelize, schema: 'jobs', clock: new SteppedClock('2026-01-01T00:00:00Z'), ids: new SequentialIds() })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
  } finally {
    await sequelize.close();
  }
});

test('sqlite: a queue write while a storage transaction holds the writer waits for it in turn, and reads go on meanwhile', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-queue-'));
  // The database as the service opens it: WAL, a busy timeout, transactions through the one writer.
  const sequelize = await openSequelize({ dataDir: dir });
  try {
    const queue = await SqlQueue.open({ sequelize, clock: new SteppedClock('2026-03-01T09:00:00.000Z'), ids: new SequentialIds() });
    await sequelize.query('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)');
    // A statement waiting in SQLite's busy handler on the shared connection would now wait longer than the
    // test runs, and the read below behind it: the read answers only if no write waits there.
    await sequelize.query('PRAGMA busy_timeout = 600000');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inTransaction!: () => void;
    const started = new Promise<void>((resolve) => (inTransaction = resolve));
    const storageWrite = runTransaction(sequelize, async (transaction) => {
      await sequelize.query("INSERT INTO notes (text) VALUES ('written')", { transaction });
      inTransaction();
      await held;
    });
    await started;

    const enqueued = queue.enqueue({ type: 'work', payload: 1 });
    // A read of the shared connection answers while the write waits for the writer.
    expect(await sequelize.query('SELECT COUNT(*) AS n FROM notes', { type: QueryTypes.SELECT })).toEqual([{ n: 0 }]);
    release();
    await storageWrite;
    expect(await enqueued).toEqual(expect.any(String));
    expect(await queue.stats()).toMatchObject({ pending: 1 });
  } finally {
    await sequelize.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('sqlite: a claim that takes something takes the one writer once (its statements share one transaction), and none when there is nothing', async () => {
  const statements: string[] = [];
  const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
  const sequelize = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: (sql) => statements.push(sql) });
  try {
    const queue = await SqlQueue.open({ sequelize, clock, ids: new SequentialIds() });
    await queue.enqueue({ type: 'work', payload: 1 });
    const begins = () => statements.filter((sql) => /BEGIN/i.test(sql)).length;

    let before = begins();
    expect(await queue.claim({ workerId: 'w', limit: 5, leaseMs: 60_000 })).toHaveLength(1);
    expect(begins() - before).toBe(1);
    before = begins();
    expect(await queue.claim({ workerId: 'w', limit: 5, leaseMs: 60_000 })).toEqual([]);
    expect(begins() - before).toBe(0);
  } finally {
    await sequelize.close();
  }
});

test('sqlite: a background job waiting for the writer lets an urgent write (an import batch, a request) go first', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-queue-'));
  const sequelize = await openSequelize({ dataDir: dir });
  try {
    await sequelize.query('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inTransaction!: () => void;
    const started = new Promise<void>((resolve) => (inTransaction = resolve));
    const holding = runTransaction(sequelize, async () => {
      inTransaction();
      await held;
    });
    await started;
    const write = (text: string) => (transaction: Transaction) => sequelize.query('INSERT INTO notes (text) VALUES (:text)', { replacements: { text }, transaction });
    const background = runAtRank('background', () => runTransaction(sequelize, write('document query')));
    const urgent = runTransaction(sequelize, write('import batch'));
    release();
    await Promise.all([holding, background, urgent]);
    expect(await sequelize.query('SELECT text FROM notes ORDER BY id', { type: QueryTypes.SELECT })).toEqual([{ text: 'import batch' }, { text: 'document query' }]);
  } finally {
    await sequelize.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('sqlite: a claim that finds nothing to take takes no turn of the writer; one that finds a job or a run-out lease does', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-queue-'));
  const sequelize = await openSequelize({ dataDir: dir });
  try {
    const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
    const queue = await SqlQueue.open({ sequelize, clock, ids: new SequentialIds() });
    const transactions = vi.spyOn(sequelize, 'transaction');
    const claim = (lanes?: ('interactive' | 'background')[]) => queue.claim({ workerId: 'w', limit: 4, leaseMs: 10_000, ...(lanes ? { lanes } : {}) });
    expect(await claim()).toEqual([]);
    expect(transactions).not.toHaveBeenCalled();

    await queue.enqueue({ type: 't', payload: 1, lane: 'background' });
    const enqueued = transactions.mock.calls.length;
    // Only interactive work asked for, and there is none: still no turn.
    expect(await claim(['interactive'])).toEqual([]);
    expect(await queue.claim({ workerId: 'w', limit: 4, leaseMs: 10_000, types: [] })).toEqual([]);
    expect(transactions.mock.calls.length).toBe(enqueued);
    expect((await claim(['background'])).map((job) => job.payload)).toEqual([1]);
    expect(transactions.mock.calls.length).toBe(enqueued + 1);

    // Its lease runs out: the next claim takes it over, whatever lane it asks for (a run-out lease is dealt with).
    clock.advance(10_001);
    const before = transactions.mock.calls.length;
    expect((await claim(['background'])).map((job) => job.attempt)).toEqual([2]);
    expect(transactions.mock.calls.length).toBe(before + 1);
    transactions.mockRestore();
  } finally {
    await sequelize.close();
    await rm(dir, { recursive: true, force: true });
  }
});
