import { Container } from 'inversify';
import { describe, expect, test } from 'vitest';
import { storageModule } from '../../adapters/container/storage.module.js';
import { TOKENS } from '../../adapters/container/tokens.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import type { Cohort } from '../../core/domain/types.js';
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

const cohort = (id: string, name = 'Asthma'): Cohort => ({
  id,
  accountId: 'account-a',
  name,
  createdAt: '2024-01-01T00:00:00.000Z',
  updatedAt: '2024-01-01T00:00:00.000Z',
});

describe('memory specifics', () => {
  test('a transaction that created a record someone else created meanwhile fails whole, keeping the other', async () => {
    const storage = new MemoryStorage();
    let proceed!: () => void;
    const gate = new Promise<void>((resolve) => {
      proceed = resolve;
    });
    const running = storage.transaction(async (tx) => {
      await tx.cohorts.insert(cohort('c-other', 'written in the transaction'));
      await tx.cohorts.insert(cohort('c-raced', 'from the transaction'));
      await gate;
    });
    await storage.cohorts.insert(cohort('c-raced', 'from outside'));
    proceed();
    await expect(running).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await storage.cohorts.list('account-a')).toEqual([cohort('c-raced', 'from outside')]);
  });

  test('container module: binds one memory storage per container', async () => {
    const container = new Container();
    container.load(storageModule({ kind: 'memory' }));
    const storage = container.get(TOKENS.storage);
    expect(storage).toBeInstanceOf(MemoryStorage);
    expect(container.get(TOKENS.storage)).toBe(storage);
    const other = new Container();
    other.load(storageModule({ kind: 'memory' }));
    expect(other.get(TOKENS.storage)).not.toBe(storage);
  });

  test('container module: binds a storage given as an instance', async () => {
    const given = new MemoryStorage();
    const container = new Container();
    container.load(storageModule({ kind: 'instance', storage: given }));
    expect(container.get(TOKENS.storage)).toBe(given);
  });
});
