import { describe, test } from 'vitest';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import { defineStorageContract } from '../ports/storage.contract.js';

describe('storage contract: memory', () => {
  defineStorageContract({
    test,
    make: async () => {
      const storage = new MemoryStorage();
      return { storage, close: () => storage.close() };
    },
    serialisesTransactions: true,
    isolatesUncommittedWrites: true,
    numRuns: 100,
  });
});
