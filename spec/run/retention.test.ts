import { describe, expect, test } from 'vitest';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import { MemoryQueue } from '../../adapters/queue/memory/memory.queue.js';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import type { NetworkQuery, OutboxMessage } from '../../core/domain/types.js';
import { pruneFinishedWork } from '../../core/retention.js';

const DAY = 86_400_000;

function message(index: number, status: OutboxMessage['status'], deliveredAt?: string): OutboxMessage {
  return {
    id: `m${String(index).padStart(5, '0')}`,
    accountId: 'a1',
    type: 'medical.bulk-patient-create',
    body: '{}',
    streamKey: `s${index}`,
    status,
    attempts: status === 'pending' ? 0 : 1,
    nextAttemptAt: '2026-01-01T00:00:00.000Z',
    createdAt: '2026-01-01T00:00:00.000Z',
    ...(deliveredAt ? { deliveredAt } : {}),
  };
}

describe('pruneFinishedWork', () => {
  test('the outbox and the queue stop growing: old delivered messages and dead jobs go in batches, work stays', async () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const storage = new MemoryStorage();
    const queue = new MemoryQueue({ clock, ids: new SequentialIds() });
    // 1,200 messages delivered on day 0, 10 delivered on day 9, and pending and parked ones from day 0.
    for (let i = 0; i < 1_200; i++) await storage.outbox.add(message(i, 'delivered', '2026-01-01T00:00:00.000Z'));
    for (let i = 1_200; i < 1_210; i++) await storage.outbox.add(message(i, 'delivered', '2026-01-10T00:00:00.000Z'));
    await storage.outbox.add(message(2_000, 'pending'));
    await storage.outbox.add(message(2_001, 'parked'));
    for (let i = 0; i < 3; i++) await queue.enqueue({ type: 't', payload: i, maxAttempts: 1 });
    for (const job of await queue.claim({ workerId: 'w', limit: 3, leaseMs: 60_000 })) await queue.fail(job.id, 'w', { error: 'x' });
    clock.advance(10 * DAY);

    let pauses = 0;
    const report = await pruneFinishedWork({ storage, queue, clock }, { days: 7, batch: 500, pause: async () => void pauses++ });
    expect(report).toEqual({ messages: 1_200, jobs: 3, networkQueries: 0, attempts: 0 });
    // 1,200 rows in batches of 500: a pause after each full batch.
    expect(pauses).toBe(2);
    expect(await storage.outbox.counts('a1')).toEqual({ pending: 1, delivered: 10, parked: 1 });
    expect(await queue.dead()).toEqual([]);
    expect(await pruneFinishedWork({ storage, queue, clock }, { days: 7 })).toEqual({ messages: 0, jobs: 0, networkQueries: 0, attempts: 0 });
  });

  test('a sweep stops after maxBatches; the next one goes on', async () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const storage = new MemoryStorage();
    const queue = new MemoryQueue({ clock, ids: new SequentialIds() });
    for (let i = 0; i < 30; i++) await storage.outbox.add(message(i, 'delivered', '2026-01-01T00:00:00.000Z'));
    clock.advance(8 * DAY);
    expect(await pruneFinishedWork({ storage, queue, clock }, { days: 7, batch: 10, maxBatches: 2 })).toEqual({ messages: 20, jobs: 0, networkQueries: 0, attempts: 0 });
    expect(await pruneFinishedWork({ storage, queue, clock }, { days: 7, batch: 10, maxBatches: 2 })).toEqual({ messages: 10, jobs: 0, networkQueries: 0, attempts: 0 });
  });

  test('network queries stop growing: those whose every source ended before the retention go; running ones stay', async () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const storage = new MemoryStorage();
    const queue = new MemoryQueue({ clock, ids: new SequentialIds() });
    const query = (id: string, statuses: ('processing' | 'completed' | 'failed')[], updatedAt: string): NetworkQuery => ({
      id,
      accountId: 'a1',
      patientId: 'p1',
      facilityId: 'f1',
      sources: statuses.map((status, i) => ({ type: (['hie', 'pharmacy', 'lab'] as const)[i]!, status, startedAt: '2026-01-01T00:00:00.000Z' })),
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt,
    });
    await storage.networkQueries.insert(query('q1', ['completed', 'failed'], '2026-01-01T00:00:00.000Z'));
    await storage.networkQueries.insert(query('q2', ['completed', 'processing'], '2026-01-01T00:00:00.000Z'));
    await storage.networkQueries.insert(query('q3', ['completed'], '2026-01-09T00:00:00.000Z'));
    clock.advance(10 * DAY);
    expect(await pruneFinishedWork({ storage, queue, clock }, { days: 7 })).toEqual({ messages: 0, jobs: 0, networkQueries: 1, attempts: 0 });
    expect(await storage.networkQueries.get('a1', 'q1')).toBeUndefined();
    expect(await storage.networkQueries.get('a1', 'q2')).toBeDefined();
    expect(await storage.networkQueries.get('a1', 'q3')).toBeDefined();
  });

  test('the delivery log stops growing: attempts older than the retention go, whatever became of their message', async () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const storage = new MemoryStorage();
    const queue = new MemoryQueue({ clock, ids: new SequentialIds() });
    const attempt = (id: string, attemptedAt: string) => ({
      id,
      accountId: 'a1',
      deliveryId: 'm1',
      messageId: 'm1',
      type: 'medical.bulk-patient-create' as const,
      attemptedAt,
      outcome: 'failed' as const,
      latencyMs: 5,
    });
    await storage.webhookAttempts.addMany([attempt('old1', '2026-01-01T00:00:00.000Z'), attempt('old2', '2026-01-02T00:00:00.000Z'), attempt('new', '2026-01-09T00:00:00.000Z')]);
    clock.advance(10 * DAY);
    expect(await pruneFinishedWork({ storage, queue, clock }, { days: 7 })).toEqual({ messages: 0, jobs: 0, networkQueries: 0, attempts: 2 });
    expect((await storage.webhookAttempts.list('a1', {}, 10)).map((row) => row.id)).toEqual(['new']);
  });
});
