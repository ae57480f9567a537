import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'vitest';
import { SequelizeStorage } from '../../adapters/storage/sequelize/sequelize.storage.js';
import { defineStorageContract } from '../ports/storage.contract.js';

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
