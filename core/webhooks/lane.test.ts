import { describe, expect, test } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import { countingReads } from '../../spec/support/storage-reads.js';
import type { WebhookDelivery, WebhookDeliveryResult } from '../ports/webhook-sender.port.js';
import { DEFAULT_HOLD_MS, type DeliveryDeps } from './delivery.js';
import { deliverDueMessages } from './dispatcher.js';
import { enqueueMessage } from './enqueue.js';
import { bulkPatientCreateMessage } from './envelope.js';

const ACCOUNT = 'acct-1';

/** Delivery over the memory storage, counting its reads, with a receiver that takes everything (`onSend` acts before it answers). */
async function makeWorld() {
  const clock = new SteppedClock('2026-03-01T08:00:00.000Z');
  const ids = new SequentialIds();
  const memory = new MemoryStorage();
  const reads = new Map<string, number>();
  const storage = countingReads(memory, reads);
  const sent: WebhookDelivery[] = [];
  const world = {
    clock,
    storage: memory,
    reads,
    sent,
    onSend: undefined as ((count: number) => Promise<void>) | undefined,
    deps: undefined as unknown as DeliveryDeps,
  };
  world.deps = {
    storage,
    clock,
    ids,
    random: () => 0.5,
    // One stream in flight: the poll's claim takes 4 messages, and the lane claims the others itself.
    endpointConcurrency: 1,
    webhookSender: {
      send: async (delivery): Promise<WebhookDeliveryResult> => {
        sent.push(delivery);
        await world.onSend?.(sent.length);
        return { outcome: 'delivered', status: 200, durationMs: 1 };
      },
    },
  };
  await memory.webhookSettings.put({ accountId: ACCOUNT, webhookUrl: 'https://receiver.test/hook', webhookKey: 'key-1', webhookEnabled: true, webhookStatusDetail: null, updatedAt: clock.now().toISOString() });
  return world;
}

/** `count` messages of the account, each a stream of its own, stored as a use case stores them. */
async function enqueue(world: Awaited<ReturnType<typeof makeWorld>>, count: number): Promise<string[]> {
  return world.storage.transaction(async (tx) => {
    const stored: string[] = [];
    for (let i = 0; i < count; i++) {
      const requestId = `request-${i}`;
      const message = bulkPatientCreateMessage({ messageId: `message-${i}`, requestId, when: world.clock.now() }, { requestId, status: 'processing' });
      stored.push((await enqueueMessage(tx, ACCOUNT, message)).id);
    }
    return stored;
  });
}

describe('an endpoint lane', () => {
  test('reads its endpoint once when what it claims later is nothing: not again for an empty claim', async () => {
    const world = await makeWorld();
    await enqueue(world, 3);
    world.reads.clear();
    expect(await deliverDueMessages(world.deps, { limit: 100 })).toMatchObject({ delivered: 3 });
    expect(world.reads.get('webhookSettings.get')).toBe(1);
  });

  test('reads its endpoint again for each claim that brings messages, and sends them with what the account set last', async () => {
    const world = await makeWorld();
    await enqueue(world, 6);
    // The key changes while the first claim's messages are being sent.
    world.onSend = async (count) => {
      if (count === 1) await world.storage.webhookSettings.put({ ...(await world.storage.webhookSettings.get(ACCOUNT))!, webhookKey: 'key-2' });
    };
    world.reads.clear();
    expect(await deliverDueMessages(world.deps, { limit: 100 })).toMatchObject({ delivered: 6 });
    expect(world.sent.map((delivery) => delivery.signingKey)).toEqual(['key-1', 'key-1', 'key-1', 'key-1', 'key-2', 'key-2']);
    // At the start, after the claim that brought the last two, and not after the empty one that ended the lane.
    expect(world.reads.get('webhookSettings.get')).toBe(2);
  });

  test('an endpoint turned off while its lane runs gets nothing more: what the lane claims after is set aside, pending', async () => {
    const world = await makeWorld();
    const ids = await enqueue(world, 6);
    world.onSend = async (count) => {
      if (count === 1) await world.storage.webhookSettings.put({ ...(await world.storage.webhookSettings.get(ACCOUNT))!, webhookEnabled: false });
    };
    expect(await deliverDueMessages(world.deps, { limit: 100 })).toMatchObject({ delivered: 4 });
    expect(world.sent).toHaveLength(4);
    const rest = (await world.storage.outbox.list(ACCOUNT)).filter((message) => ids.slice(4).includes(message.id));
    expect(rest.map((message) => message.status)).toEqual(['pending', 'pending']);
    // And they stay so, polls or not, until the endpoint is on again.
    expect(await deliverDueMessages(world.deps, { limit: 100 })).toMatchObject({ delivered: 0 });
    world.clock.advance(DEFAULT_HOLD_MS);
    expect(await deliverDueMessages(world.deps, { limit: 100 })).toMatchObject({ delivered: 0 });
    expect(world.sent).toHaveLength(4);
  });
});
