import { Container } from 'inversify';
import { describe, expect, test } from 'vitest';
import { storageModule } from '../../adapters/container/storage.module.js';
import { TOKENS } from '../../adapters/container/tokens.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import type { Cohort, OutboxMessage } from '../../core/domain/types.js';
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

  test('the outbox indexes a claim reads, and its claims, shrink as messages are delivered, parked or deleted', async () => {
    const storage = new MemoryStorage();
    const when = (second: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, second)).toISOString();
    // Two accounts, each with its default endpoint and e1; 50 streams of two messages per endpoint.
    const messages: OutboxMessage[] = [];
    for (const accountId of ['account-a', 'account-b']) {
      for (const endpointId of [undefined, 'e1']) {
        for (let i = 0; i < 100; i++) {
          messages.push({
            id: `${accountId}-${endpointId ?? 'default'}-${i}`,
            accountId,
            type: 'medical.bulk-patient-create',
            body: '{}',
            streamKey: `s${Math.floor(i / 2)}${endpointId === undefined ? '' : `@${endpointId}`}`,
            status: 'pending',
            attempts: 0,
            nextAttemptAt: when(0),
            createdAt: when(i),
            ...(endpointId === undefined ? {} : { endpointId, messageId: `m${i}` }),
          });
        }
      }
    }
    await storage.transaction(async (tx) => {
      for (const message of messages) await tx.outbox.add(message);
    });
    expect(storage.outboxFootprint()).toEqual({ endpoints: 4, streams: 200, claims: 0 });

    const claimed = await storage.outbox.claim(when(1), 1_000, { owner: 'w1', leaseMs: 60_000 });
    expect(claimed).toHaveLength(400);
    expect(storage.outboxFootprint()).toEqual({ endpoints: 4, streams: 200, claims: 400 });

    // Account b: delivered, as a lane records them (in a transaction); its endpoints and streams go.
    const ofB = claimed.filter((m) => m.accountId === 'account-b');
    await storage.transaction((tx) => tx.outbox.updateMany(ofB.map((m) => ({ ...m, status: 'delivered', attempts: 1, deliveredAt: when(2) }))));
    expect(storage.outboxFootprint()).toEqual({ endpoints: 2, streams: 100, claims: 200 });

    // Account a: e1's deleted with its endpoint; of the default endpoint's, some parked, some handed back
    // and delivered later, the rest failed once and then delivered.
    expect(await storage.outbox.removeEndpointDeliveries('account-a', 'e1')).toBe(100);
    expect(storage.outboxFootprint()).toEqual({ endpoints: 1, streams: 50, claims: 100 });
    const ofA = claimed.filter((m) => m.accountId === 'account-a' && m.endpointId === undefined);
    await storage.outbox.updateMany(ofA.slice(0, 10).map((m) => ({ ...m, status: 'parked', attempts: 1 })));
    await storage.outbox.releaseClaims('w1', ofA.slice(10, 40).map((m) => m.id));
    await storage.outbox.updateMany(ofA.slice(40).map((m) => ({ ...m, attempts: 1, nextAttemptAt: when(30), lastError: 'the receiver answered HTTP 500' })));
    expect(storage.outboxFootprint()).toEqual({ endpoints: 1, streams: 45, claims: 0 });
    const rest = await storage.outbox.claim(when(40), 1_000, { owner: 'w2', leaseMs: 60_000 });
    expect(rest).toHaveLength(90);
    await storage.outbox.updateMany(rest.map((m) => ({ ...m, status: 'delivered', attempts: m.attempts + 1, deliveredAt: when(41) })));
    expect(storage.outboxFootprint()).toEqual({ endpoints: 0, streams: 0, claims: 0 });
    expect(await storage.outbox.pruneDelivered(when(50), 1_000)).toBe(290);
    expect(storage.outboxFootprint()).toEqual({ endpoints: 0, streams: 0, claims: 0 });
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
