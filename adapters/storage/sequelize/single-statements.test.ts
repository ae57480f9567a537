import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import { expect, test } from 'vitest';
import { at, builders } from '../../../spec/ports/storage/fixtures.js';
import { SteppedClock } from '../../clock/stepped.clock.js';
import { SequentialIds } from '../../ids/sequential.ids.js';
import { SqlQueue } from '../../queue/sql/sql.queue.js';
import { openSequelize, runStatement, runTransaction } from './connection.js';
import { RawSql } from './raw-sql.js';
import { SequelizeStorage } from './sequelize.storage.js';

async function withSqlite(work: (sequelize: Awaited<ReturnType<typeof openSequelize>>) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-single-'));
  const sequelize = await openSequelize({ dataDir: dir });
  try {
    await work(sequelize);
  } finally {
    await sequelize.close();
    await rm(dir, { recursive: true, force: true });
  }
}

test('writes of one statement outside a transaction (a job enqueued, claimed, completed; a record inserted or replaced; a webhook claim and its outcome) send no BEGIN or COMMIT', async () => {
  await withSqlite(async (sequelize) => {
    const storage = await SequelizeStorage.open({ sequelize });
    const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
    const queue = await SqlQueue.open({ sequelize, clock, ids: new SequentialIds() });
    const make = builders();
    const account = make.account();
    await storage.accounts.insert(account);
    const endpoint = make.webhookEndpoint(account.id);
    await storage.webhookEndpoints.insert(endpoint);
    await storage.outbox.add(make.outbox(account.id, { endpointId: endpoint.id }));

    // BEGIN, COMMIT and ROLLBACK go to the driver's exec (see controlTransactionsOnDriver).
    const controls: string[] = [];
    const original = sqlite3.Database.prototype.exec;
    sqlite3.Database.prototype.exec = function (this: sqlite3.Database, sql: string, callback?: (error: Error | null) => void) {
      controls.push(sql);
      return original.call(this, sql, callback);
    };
    try {
      const jobId = await queue.enqueue({ type: 'work', payload: { n: 1 } });
      const [job] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: 60_000 });
      expect(job?.id).toBe(jobId);
      await queue.complete(jobId, 'w');
      const [claimed] = await storage.outbox.claim(at(10), 10, { owner: 'owner', leaseMs: 60_000 });
      expect(claimed).toBeDefined();
      await storage.outbox.updateMany([{ ...claimed!, status: 'delivered', deliveredAt: at(11) }]);
      const cohort = make.cohort(account.id);
      await storage.cohorts.insert(cohort);
      expect(await storage.cohorts.update({ ...cohort, name: 'renamed' })).toMatchObject({ name: 'renamed' });
      expect(controls).toEqual([]);
      // A transaction still sends its own: the spy can tell.
      await storage.transaction(async (tx) => {
        await tx.cohorts.update({ ...cohort, name: 'again' });
      });
      expect(controls.map((sql) => sql.split(' ')[0])).toEqual(['BEGIN', 'COMMIT;']);
    } finally {
      sqlite3.Database.prototype.exec = original;
    }
    expect(await queue.stats()).toMatchObject({ done: 1 });
    await storage.close();
  });
});

test('a turn of one statement: a second statement is refused, a failed statement leaves nothing and the writer free, and it waits for a transaction holding the writer', async () => {
  await withSqlite(async (sequelize) => {
    const raw = new RawSql(sequelize);
    await sequelize.query('CREATE TABLE kept (id INTEGER PRIMARY KEY)');
    await expect(
      runStatement(sequelize, async (transaction) => {
        await raw.run(transaction, 'INSERT INTO kept (id) VALUES ($1)', [1]);
        await raw.run(transaction, 'INSERT INTO kept (id) VALUES ($1)', [2]);
      }),
    ).rejects.toMatchObject({ code: 'INTERNAL' });
    await expect(runStatement(sequelize, (transaction) => raw.run(transaction, 'INSERT INTO kept (id) VALUES ($1), ($2)', [3, 1]))).rejects.toMatchObject({ code: 'CONFLICT' });

    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const holding = new Promise<void>((resolve) => (entered = resolve));
    const transaction = runTransaction(sequelize, async (tx) => {
      entered();
      await gate;
      await raw.run(tx, 'INSERT INTO kept (id) VALUES ($1)', [10]);
      order.push('transaction');
    });
    await holding;
    const statement = runStatement(sequelize, async (tx) => {
      await raw.run(tx, 'INSERT INTO kept (id) VALUES ($1)', [11]);
      order.push('statement');
    });
    release();
    await Promise.all([transaction, statement]);
    expect(order).toEqual(['transaction', 'statement']);
    const [rows] = await sequelize.query('SELECT id FROM kept ORDER BY id');
    // The refused second statement's first one had committed: the refusal is a programming error caught by tests.
    expect(rows).toEqual([{ id: 1 }, { id: 10 }, { id: 11 }]);
  });
});
