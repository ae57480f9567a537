import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Container } from 'inversify';
import { QueryTypes, Sequelize, type Transaction } from 'sequelize';
import { describe, expect, test } from 'vitest';
import { storageModule } from '../../adapters/container/storage.module.js';
import { TOKENS } from '../../adapters/container/tokens.js';
import { SequelizeStorage } from '../../adapters/storage/sequelize/sequelize.storage.js';
import { SqlInstanceRegistry } from '../../adapters/storage/sequelize/instance-registry.js';
import type { Patient } from '../../core/domain/types.js';
import { defineStorageContract } from '../ports/storage.contract.js';
import { at, builders, patientCount, rowCounts } from '../ports/storage/fixtures.js';

describe('storage contract: SQLite in memory', () => {
  defineStorageContract({
    test,
    make: async () => {
      const storage = await SequelizeStorage.open({ url: ':memory:' });
      return { storage, close: () => storage.close() };
    },
    serialisesTransactions: true,
    // Every query shares the one connection that holds an in-memory database, transaction or not.
    isolatesUncommittedWrites: false,
    numRuns: 40,
  });
});

async function withDataDir<T>(work: (dataDir: string) => Promise<T>): Promise<T> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'carebridge-storage-'));
  try {
    return await work(dataDir);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

describe('storage contract: SQLite file (WAL)', () => {
  defineStorageContract({
    test,
    make: async () => {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'carebridge-storage-'));
      const storage = await SequelizeStorage.open({ dataDir });
      return {
        storage,
        close: async () => {
          await storage.close();
          await rm(dataDir, { recursive: true, force: true });
        },
      };
    },
    serialisesTransactions: true,
    isolatesUncommittedWrites: true,
    numRuns: 25,
  });
});

let serial = 0;
function patient(overrides: Partial<Patient> = {}): Patient {
  serial += 1;
  return {
    id: `00000000-0000-7000-8000-${serial.toString(16).padStart(12, '0')}`,
    accountId: 'account-a',
    facilityIds: ['facility-1'],
    cohortIds: [],
    externalId: `mrn-${serial}`,
    firstName: 'Ana',
    lastName: `García ${serial}`,
    dob: '1975-06-30',
    genderAtBirth: 'F',
    address: [{ addressLine1: '1 Main St', city: 'Austin', state: 'TX', zip: '73301', country: 'USA' }],
    contact: [{ phone: '5125550100' }],
    personalIdentifiers: [],
    hieOptOut: false,
    matchKeys: [`1975-06-30|F|garcia${serial}`, `zip|73301|${serial % 10}`, `ssn|${serial}`],
    version: 1,
    createdAt: new Date(Date.UTC(2024, 0, 1) + serial).toISOString(),
    updatedAt: '2024-01-01T00:00:00.000Z',
    ...overrides,
  };
}

describe('SQLite specifics', () => {
  test('a file database runs in WAL mode with synchronous=NORMAL and a busy timeout, on every connection', async () => {
    await withDataDir(async (dataDir) => {
      const storage = await SequelizeStorage.open({ dataDir });
      try {
        const pragma = async (name: string, transaction?: Transaction) => {
          const [row] = await storage.sequelize.query<Record<string, unknown>>(`PRAGMA ${name}`, { type: QueryTypes.SELECT, transaction });
          return Object.values(row!)[0];
        };
        expect(await pragma('journal_mode')).toBe('wal');
        expect(await pragma('synchronous')).toBe(1);
        expect(await pragma('busy_timeout')).toBeGreaterThanOrEqual(1000);
        // Transactions get connections of their own; they are configured too.
        await storage.sequelize.transaction(async (transaction) => {
          expect(await pragma('synchronous', transaction)).toBe(1);
          expect(await pragma('busy_timeout', transaction)).toBeGreaterThanOrEqual(1000);
        });
      } finally {
        await storage.close();
      }
    });
  });

  test('an instance created elsewhere gets the same SQLite settings when a storage is opened on it', async () => {
    await withDataDir(async (dataDir) => {
      const sequelize = new Sequelize({ dialect: 'sqlite', storage: path.join(dataDir, 'shared.sqlite'), logging: false });
      const storage = await SequelizeStorage.open({ sequelize });
      try {
        const [mode] = await sequelize.query<{ journal_mode: string }>('PRAGMA journal_mode', { type: QueryTypes.SELECT });
        expect(mode?.journal_mode).toBe('wal');
        const [timeout] = await sequelize.query<Record<string, number>>('PRAGMA busy_timeout', { type: QueryTypes.SELECT });
        expect(Object.values(timeout!)[0]).toBeGreaterThanOrEqual(1000);
      } finally {
        await storage.close();
        await sequelize.close();
      }
    });
  });

  test('every write outside a caller\'s transaction (claims released, pruning, instance heartbeats) runs in a transaction of the one writer, never autocommitted on the connection reads share', async () => {
    await withDataDir(async (dataDir) => {
      // Autocommitted there, a write met a transaction's lock and waited in SQLite's busy handler (up to the
      // 5 s busy timeout), holding up the reads queued behind it: the API's p99 rose to 5 s in a busy journey.
      const autocommitted: string[] = [];
      const sequelize = new Sequelize({
        dialect: 'sqlite',
        storage: path.join(dataDir, 'writer.sqlite'),
        logging: (sql: string, options?: unknown) => {
          const text = sql.replace(/^Executing \([^)]*\): /, '');
          if (/^\s*(INSERT|UPDATE|DELETE)/i.test(text) && !(options as { transaction?: unknown } | undefined)?.transaction) autocommitted.push(text.slice(0, 60));
        },
      });
      const storage = await SequelizeStorage.open({ sequelize });
      try {
        const make = builders();
        const account = make.account();
        await storage.accounts.insert(account);
        await storage.outbox.add(make.outbox(account.id, { id: '00000000-0000-7000-8000-0000000000c1' }));
        await storage.outbox.add(make.outbox(account.id, { id: '00000000-0000-7000-8000-0000000000d1', status: 'delivered', deliveredAt: at(1) }));
        await storage.outbox.claim(at(10), 10, { owner: 'owner', leaseMs: 60_000 });
        autocommitted.length = 0;

        await storage.outbox.releaseClaims('owner');
        expect(await storage.outbox.pruneDelivered(at(100), 10)).toBe(1);
        await storage.webhookAttempts.prune(at(100), 10);
        await storage.networkQueries.pruneFinished(at(100), 10);
        const registry = new SqlInstanceRegistry(sequelize);
        const self = { instanceId: 'i1', publicUrl: 'http://127.0.0.1:1', secretFingerprint: 'f', blobLocation: 'b', startedAt: 1, heartbeatAt: 1 };
        await registry.join(self, () => false, () => undefined);
        await registry.heartbeat({ ...self, heartbeatAt: 2 });
        await registry.leave('i1');
        expect(autocommitted).toEqual([]);
        expect(await storage.outbox.list(account.id)).toEqual([expect.objectContaining({ id: '00000000-0000-7000-8000-0000000000c1' })]);
      } finally {
        await storage.close();
        await sequelize.close();
      }
    });
  });

  test('data survives reopening the file, and migrations are recorded once', async () => {
    await withDataDir(async (dataDir) => {
      const first = await SequelizeStorage.open({ dataDir });
      const stored = patient();
      await first.patients.insert(stored);
      await first.close();
      const second = await SequelizeStorage.open({ dataDir });
      try {
        expect(await second.patients.get(stored.accountId, stored.id)).toEqual(stored);
        const applied = await second.sequelize.query<{ name: string }>('SELECT name FROM carebridge_storage_migrations', { type: QueryTypes.SELECT });
        expect(applied.map((row) => row.name)).toEqual(['0001-initial', '0002-match-key-hashes', '0003-document-query-progress', '0004-outbox-streams', '0005-outbox-leases', '0006-network-queries', '0007-bulk-counts', '0008-rekey-names', '0009-patient-versions', '0010-bulk-pauses', '0011-webhook-endpoints', '0012-webhook-health']);
      } finally {
        await second.close();
      }
    });
  });

  test('two processes on one file: a writer waits for the other’s transaction instead of failing with SQLITE_BUSY', async () => {
    await withDataDir(async (dataDir) => {
      // Two Sequelize instances stand for two processes: they share nothing but the file.
      const one = await SequelizeStorage.open({ dataDir });
      const two = await SequelizeStorage.open({ dataDir });
      try {
        const held = patient();
        const waiting = patient();
        let inside!: () => void;
        const holding = new Promise<void>((resolve) => {
          inside = resolve;
        });
        const longTransaction = one.transaction(async (tx) => {
          await tx.patients.insert(held);
          inside();
          // Longer than Sequelize's own SQLITE_BUSY retries (about 0.6 s), so only the busy timeout saves the other writer.
          await new Promise((resolve) => setTimeout(resolve, 1_200));
        });
        await holding;
        await Promise.all([longTransaction, two.patients.insert(waiting), two.transaction((tx) => tx.bulkRows.putMany([{ requestId: 'r', rowIndex: 0, status: 'succeeded' }]))]);
        expect(await patientCount(one, 'account-a')).toBe(2);
        expect(await rowCounts(one, 'r')).toEqual({ total: 1, failed: 0 });
      } finally {
        await one.close();
        await two.close();
      }
    });
  });

  test('batch writes are multi-row statements, not one statement per record', async () => {
    const statements: string[] = [];
    const sequelize = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: (sql) => void statements.push(sql) });
    const storage = await SequelizeStorage.open({ sequelize });
    try {
      const batch = Array.from({ length: 2_500 }, () => patient());
      statements.length = 0;
      await storage.patients.insertMany(batch);
      // 2,500 patients at 1,000 rows per statement, their 7,500 key-index entries in one, the account's
      // revision (which holds its patients for the transaction), plus BEGIN and COMMIT.
      expect(statements.filter((sql) => /INSERT INTO/i.test(sql))).toHaveLength(3 + 1 + 1);
      expect(statements.length).toBeLessThanOrEqual(15);

      statements.length = 0;
      await storage.patients.updateMany(batch.map((p) => ({ ...p, hieOptOut: true, matchKeys: [`new|${p.id}`] })));
      expect(statements.length).toBeLessThanOrEqual(25);
      expect((await storage.patients.findByMatchKeys('account-a', [`new|${batch[1_234]!.id}`]))[0]?.hieOptOut).toBe(true);

      statements.length = 0;
      await storage.bulkRows.putMany(batch.map((p, rowIndex) => ({ requestId: 'r', rowIndex, status: 'succeeded' as const, action: 'created' as const, patientId: p.id })));
      expect(statements.length).toBeLessThanOrEqual(6);
      expect(await rowCounts(storage, 'r')).toEqual({ total: 2_500, failed: 0 });
    } finally {
      await storage.close();
      await sequelize.close();
    }
  });

  test('a database failure surfaces as INTERNAL without the statement (which holds PHI) in enumerable fields', async () => {
    const storage = await SequelizeStorage.open({ url: ':memory:' });
    try {
      // The failure keeps the statement (its values bound, not inlined) as its cause.
      await storage.sequelize.query('DROP TABLE patients');
      const error = await storage.patients.insert(patient({ lastName: 'Secretname', matchKeys: ['1975-06-30|F|secretname'] })).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toMatchObject({ code: 'INTERNAL' });
      expect(JSON.stringify(error).toLowerCase()).not.toContain('secretname');
      expect((error as Error).message.toLowerCase()).not.toContain('secretname');
      // The original stays reachable for a debugger, as a non-enumerable cause.
      expect(String(((error as Error).cause as { sql?: string }).sql)).toContain('INSERT INTO patients');
    } finally {
      await storage.close();
    }
  });

  test('a storage built on a given Sequelize instance leaves it open on close', async () => {
    const sequelize = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
    const storage = await SequelizeStorage.open({ sequelize });
    await storage.close();
    expect(await sequelize.query('SELECT 1 AS one', { type: QueryTypes.SELECT })).toEqual([{ one: 1 }]);
    await sequelize.close();
  });

  test('speed: insertMany stays well under 1 ms per patient on a file (ms per 1,000 printed)', async () => {
    await withDataDir(async (dataDir) => {
      const storage = await SequelizeStorage.open({ dataDir });
      try {
        const timings: number[] = [];
        for (let batch = 0; batch < 5; batch++) {
          const patients = Array.from({ length: 1_000 }, () => patient());
          const started = performance.now();
          await storage.patients.insertMany(patients);
          timings.push(performance.now() - started);
        }
        timings.sort((a, b) => a - b);
        const median = timings[2]!;
        console.info(`SQLite insertMany: median ${median.toFixed(0)} ms per 1,000 patients (${timings.map((t) => t.toFixed(0)).join(', ')})`);
        // Generous against a loaded 2-core machine; typical is well under 200 ms.
        expect(median).toBeLessThan(1_000);
        expect(await patientCount(storage, 'account-a')).toBe(5_000);
      } finally {
        await storage.close();
      }
    });
  });

  test('container module: binds a Sequelize storage, resolved asynchronously, closed on unbind', async () => {
    await withDataDir(async (dataDir) => {
      const container = new Container();
      container.load(storageModule({ kind: 'sequelize', dataDir }));
      const storage = await container.getAsync(TOKENS.storage);
      expect(storage).toBeInstanceOf(SequelizeStorage);
      expect(await container.getAsync(TOKENS.storage)).toBe(storage);
      const stored = patient();
      await storage.patients.insert(stored);
      await container.unbindAllAsync();
      await expect(storage.patients.get(stored.accountId, stored.id)).rejects.toThrow();
    });
  });
});
