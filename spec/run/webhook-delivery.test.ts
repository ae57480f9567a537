import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import { HttpWebhookSender } from '../../adapters/webhook/http.webhook-sender.js';
import { verifyStandardWebhook, verifyWebhookSignature } from '../../contract/signature.js';
import type { OutboxMessage, WebhookSettings } from '../../core/domain/types.js';
import type { WebhookDelivery, WebhookSenderPort } from '../../core/ports/webhook-sender.port.js';
import { DEFAULT_DELIVERY_TIMEOUT_MS, type DeliveryDeps, type DeliveryReport } from '../../core/webhooks/delivery.js';
import { deliverDueMessages } from '../../core/webhooks/dispatcher.js';
import { enqueueMessage } from '../../core/webhooks/enqueue.js';
import { resumePendingMessages, retryParked } from '../../core/webhooks/requeue.js';
import { webhookStatus } from '../../core/webhooks/status.js';
import { pingWebhook } from '../../core/webhooks/ping.js';
import { bulkPatientCreateMessage } from '../../core/webhooks/envelope.js';
import { createRetrySchedule, DEFAULT_RETRY_DELAYS_MS } from '../../core/webhooks/retry-schedule.js';
import { startReceiver, type Receiver, type ReceiverBehaviour } from '../support/receiver.js';

const START = '2024-05-01T00:00:00.000Z';
const KEY = 'whk_test-key-of-account';

interface World {
  storage: MemoryStorage;
  clock: SteppedClock;
  ids: SequentialIds;
  receiver: Receiver;
  sender: HttpWebhookSender;
  /** Every delivery handed to the sender, failed attempts included. */
  attempts: WebhookDelivery[];
  deps: DeliveryDeps;
  setEndpoint(accountId: string, settings?: Partial<WebhookSettings>): Promise<void>;
  /**
   * Stores `count` messages for the account in one transaction, as a use case would: bulk messages, all of
   * the bulk request `stream` when given (one stream), else each of its own request (a stream each).
   */
  enqueue(accountId: string, count?: number, stream?: string): Promise<OutboxMessage[]>;
  pass(limit?: number, accountId?: string): Promise<DeliveryReport>;
  /** Moves the clock to the earliest next attempt unless something is deliverable now; false when nothing is pending. */
  stepToNextAttempt(...accountIds: string[]): Promise<boolean>;
  messages(accountId: string): Promise<OutboxMessage[]>;
  /** webhook-ids of the requests the receiver acknowledged with a 2xx, in order. */
  acknowledged(): string[];
  /**
   * webhook-ids of the attempts the sender saw delivered (a 2xx in time), in the order they ended. Under load
   * a receiver may answer after the sender gave up: acknowledged there, a timeout here (and sent again).
   */
  observed(): string[];
}

const worlds: World[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) {
    await world.sender.close();
    await world.receiver.close();
  }
});

async function makeWorld(overrides: Partial<DeliveryDeps> = {}): Promise<World> {
  const storage = new MemoryStorage();
  const clock = new SteppedClock(START);
  const ids = new SequentialIds();
  const receiver = await startReceiver();
  const sender = new HttpWebhookSender({ allowPrivate: true });
  const attempts: WebhookDelivery[] = [];
  const observed: string[] = [];
  const recordingSender: WebhookSenderPort = {
    send: async (delivery) => {
      attempts.push(delivery);
      const result = await sender.send(delivery);
      if (result.outcome === 'delivered') observed.push(delivery.messageId);
      return result;
    },
  };
  // random 0.5 cancels the jitter, so the schedule can be checked to the millisecond.
  const deps: DeliveryDeps = { storage, clock, ids, webhookSender: recordingSender, random: () => 0.5, ...overrides };

  const world: World = {
    storage,
    clock,
    ids,
    receiver,
    sender,
    attempts,
    deps,
    async setEndpoint(accountId, settings = {}) {
      await storage.webhookSettings.put({
        accountId,
        webhookUrl: `${receiver.url}/hook/${accountId}`,
        webhookKey: `${KEY}-${accountId}`,
        webhookEnabled: true,
        webhookStatusDetail: null,
        updatedAt: clock.now().toISOString(),
        ...settings,
      });
    },
    async enqueue(accountId, count = 1, stream) {
      return storage.transaction(async (tx) => {
        const stored: OutboxMessage[] = [];
        for (let i = 0; i < count; i += 1) {
          const requestId = stream ?? ids.next();
          const message = bulkPatientCreateMessage(
            { messageId: ids.next(), requestId, when: clock.now(), data: { seq: String(i) } },
            { requestId, status: 'processing' },
          );
          stored.push(await enqueueMessage(tx, accountId, message));
        }
        return stored;
      });
    },
    pass: (limit = 100, accountId) => deliverDueMessages(world.deps, accountId === undefined ? { limit } : { limit, accountId }),
    async stepToNextAttempt(...accountIds) {
      const pending = (await Promise.all(accountIds.map((a) => storage.outbox.list(a, 'pending')))).flat();
      if (pending.length === 0) return false;
      const now = clock.now().toISOString();
      // Messages waiting behind an older one of their stream are due but not deliverable: step to the next wait's end.
      if (deliverableNow(pending, now)) return true;
      const later = pending.map((m) => m.nextAttemptAt).filter((at) => at > now).sort()[0];
      if (later !== undefined) clock.set(later);
      return true;
    },
    messages: (accountId) => storage.outbox.list(accountId),
    acknowledged: () =>
      receiver.requests.filter((r) => r.answeredStatus !== undefined && r.answeredStatus < 300).map((r) => String(r.headers['webhook-id'])),
    observed: () => [...observed],
  };
  worlds.push(world);
  return world;
}

const byId = (messages: OutboxMessage[]) => new Map(messages.map((m) => [m.id, m]));

/**
 * Whether any of these pending messages (each account's oldest first, as `list` gives them) may be sent
 * now: it is due and no older message of its stream is still waiting.
 */
function deliverableNow(pending: readonly OutboxMessage[], now: string): boolean {
  const waitingStreams = new Set<string>();
  for (const message of pending) {
    const stream = `${message.accountId} ${message.streamKey}`;
    if (message.nextAttemptAt > now) waitingStreams.add(stream);
    else if (!waitingStreams.has(stream)) return true;
  }
  return false;
}

describe('deliverDueMessages against a real receiver, with a stepped clock', () => {
  test('receiver down for a while, then up: nothing lost, order kept, the same messageId and bytes on every attempt', async () => {
    const w = await makeWorld();
    await w.setEndpoint('acct-1');
    const enqueued = await w.enqueue('acct-1', 3, 'bulk-1');
    await w.receiver.down();

    // One stream: the oldest fails; the two later ones wait behind it instead of overtaking (and are not even tried).
    expect(await w.pass()).toEqual({ delivered: 0, failed: 1, parked: 0, deferred: 0 });
    await w.stepToNextAttempt('acct-1');
    expect(await w.pass()).toEqual({ delivered: 0, failed: 1, parked: 0, deferred: 0 });
    expect(w.attempts.map((a) => a.messageId)).toEqual([enqueued[0]!.id, enqueued[0]!.id]);

    await w.receiver.up();
    await w.stepToNextAttempt('acct-1');
    expect(await w.pass()).toEqual({ delivered: 3, failed: 0, parked: 0, deferred: 0 });

    expect(w.acknowledged()).toEqual(enqueued.map((m) => m.id));
    const stored = byId(await w.messages('acct-1'));
    for (const original of enqueued) {
      expect(stored.get(original.id)).toMatchObject({ status: 'delivered', body: original.body });
      for (const attempt of w.attempts.filter((a) => a.messageId === original.id)) expect(attempt.body).toBe(original.body);
    }
    expect(stored.get(enqueued[0]!.id)!.attempts).toBe(3);
    for (const request of w.receiver.requests) {
      const id = String(request.headers['webhook-id']);
      expect(JSON.parse(request.body).meta.messageId).toBe(id);
      expect(verifyWebhookSignature(request.body, String(request.headers['x-metriport-signature']), `${KEY}-acct-1`)).toBe(true);
      const timestamp = Number(request.headers['webhook-timestamp']);
      expect(timestamp).toBe(Math.floor(w.clock.now().getTime() / 1000));
      expect(verifyStandardWebhook(request.body, request.headers, `${KEY}-acct-1`, { nowSeconds: timestamp })).toBe(true);
    }
    expect(await webhookStatus(w.deps, 'acct-1')).toMatchObject({ webhookEnabled: true, webhookStatusDetail: null, processing: 0, failed: 0, messages: { pending: 0, parked: 0 } });
  });

  test('always 500: the 8 attempts follow the default schedule, then the message is parked and the endpoint unhealthy; retry redelivers it', async () => {
    const w = await makeWorld();
    await w.setEndpoint('acct-1');
    const [message] = await w.enqueue('acct-1');
    w.receiver.setDefault({ kind: 'status', status: 500 });

    const reports: DeliveryReport[] = [];
    do reports.push(await w.pass());
    while ((await w.stepToNextAttempt('acct-1')) && reports.length < 50);

    expect(w.attempts).toHaveLength(8);
    const times = w.attempts.map((a) => a.timestamp * 1000);
    const waits = times.slice(1).map((t, i) => t - times[i]!);
    expect(waits).toEqual(DEFAULT_RETRY_DELAYS_MS.slice(1));
    expect(reports.reduce((n, r) => n + r.failed, 0)).toBe(7);
    expect(reports.at(-1)).toMatchObject({ parked: 1 });
    expect(new Set(w.attempts.map((a) => a.messageId))).toEqual(new Set([message!.id]));
    expect(new Set(w.receiver.requests.map((r) => r.body))).toEqual(new Set([message!.body]));

    const parked = (await w.messages('acct-1'))[0]!;
    expect(parked).toMatchObject({ status: 'parked', attempts: 8 });
    expect(parked.lastError).toContain('500');
    const status = await webhookStatus(w.deps, 'acct-1');
    expect(status).toMatchObject({ webhookEnabled: true, processing: 0, failed: 1 });
    expect(status.webhookStatusDetail).toMatch(/^Unhealthy: message .* parked after 8 failed attempts/);

    // Nothing happens to a parked message until someone asks.
    w.clock.advance(7 * 86_400_000);
    expect(await w.pass()).toEqual({ delivered: 0, failed: 0, parked: 0, deferred: 0 });

    w.receiver.setDefault({ kind: 'ok' });
    expect(await retryParked(w.deps, 'acct-1')).toEqual({ retried: 1 });
    expect(await webhookStatus(w.deps, 'acct-1')).toMatchObject({ processing: 1, failed: 0 });
    expect(await w.pass()).toMatchObject({ delivered: 1 });
    const last = w.receiver.requests.at(-1)!;
    expect(last.headers['webhook-id']).toBe(message!.id);
    expect(last.body).toBe(message!.body);
    expect(await webhookStatus(w.deps, 'acct-1')).toMatchObject({ webhookEnabled: true, webhookStatusDetail: null, processing: 0, failed: 0, messages: { pending: 0, parked: 0 } });
  });

  test('a receiver slower than the timeout is a failed attempt (aborted); the default timeout is the product 4 s', async () => {
    const w = await makeWorld({ timeoutMs: 150 });
    await w.setEndpoint('acct-1');
    const [message] = await w.enqueue('acct-1');
    w.receiver.enqueue({ kind: 'slow', delayMs: 5_000 });
    const started = Date.now();
    expect(await w.pass()).toMatchObject({ failed: 1, delivered: 0 });
    expect(Date.now() - started).toBeLessThan(2_000);
    const stored = (await w.messages('acct-1'))[0]!;
    expect(stored).toMatchObject({ status: 'pending', attempts: 1 });
    expect(stored.lastError).toMatch(/no answer within 150 ms/);

    delete w.deps.timeoutMs;
    await w.stepToNextAttempt('acct-1');
    expect(await w.pass()).toMatchObject({ delivered: 1 });
    expect(w.attempts.map((a) => a.timeoutMs)).toEqual([150, DEFAULT_DELIVERY_TIMEOUT_MS]);
    expect(DEFAULT_DELIVERY_TIMEOUT_MS).toBe(4_000);
    expect(w.acknowledged()).toEqual([message!.id]);
  });

  test('a redirect is a failure and is not followed; the retry goes to the configured URL', async () => {
    const w = await makeWorld();
    await w.setEndpoint('acct-1');
    const [message] = await w.enqueue('acct-1');
    w.receiver.enqueue({ kind: 'redirect', status: 302, location: `${w.receiver.url}/moved` });
    expect(await w.pass()).toMatchObject({ failed: 1 });
    expect((await w.messages('acct-1'))[0]!.lastError).toMatch(/302.*redirect/);
    await w.stepToNextAttempt('acct-1');
    expect(await w.pass()).toMatchObject({ delivered: 1 });
    expect(w.receiver.requests.map((r) => r.path)).toEqual(['/hook/acct-1', '/hook/acct-1']);
    expect(w.acknowledged()).toEqual([message!.id]);
  });

  test('410 disables the endpoint and parks the message; later messages stay pending, not lost, until the URL is set again', async () => {
    const w = await makeWorld();
    await w.setEndpoint('acct-1');
    const [gone, second, third] = await w.enqueue('acct-1', 3, 'bulk-1');
    w.receiver.enqueue({ kind: 'status', status: 410 });

    expect(await w.pass()).toEqual({ delivered: 0, failed: 0, parked: 1, deferred: 2 });
    let status = await webhookStatus(w.deps, 'acct-1');
    expect(status).toMatchObject({ webhookEnabled: false, processing: 2, failed: 1 });
    expect(status.webhookStatusDetail).toMatch(/^Disabled: the receiver answered 410/);

    // Days pass; nothing is sent to a disabled endpoint and nothing is lost.
    for (let i = 0; i < 5; i += 1) {
      w.clock.advance(86_400_000);
      await w.pass();
    }
    expect(w.receiver.requests).toHaveLength(1);
    expect((await w.storage.outbox.list('acct-1', 'pending')).map((m) => m.id)).toEqual([second!.id, third!.id]);

    // The customer sets the URL again (the settings use case re-enables and resumes).
    await w.setEndpoint('acct-1');
    expect(await resumePendingMessages(w.deps, 'acct-1')).toEqual({ resumed: 2 });
    expect(await w.pass()).toMatchObject({ delivered: 2 });
    expect(await retryParked(w.deps, 'acct-1')).toEqual({ retried: 1 });
    expect(await w.pass()).toMatchObject({ delivered: 1 });
    expect(w.acknowledged()).toEqual([second!.id, third!.id, gone!.id]);
    status = await webhookStatus(w.deps, 'acct-1');
    expect(status).toMatchObject({ webhookEnabled: true, processing: 0, failed: 0 });
  });

  test('429 and 503 Retry-After are honoured when longer than the schedule step, not when shorter', async () => {
    const w = await makeWorld();
    await w.setEndpoint('acct-1');
    const [message] = await w.enqueue('acct-1');
    w.receiver.enqueue(
      { kind: 'status', status: 429, headers: { 'retry-after': '3600' } },
      { kind: 'status', status: 503, headers: { 'retry-after': '1' } },
    );
    const t0 = w.clock.now().getTime();
    expect(await w.pass()).toMatchObject({ failed: 1 });
    expect(Date.parse((await w.messages('acct-1'))[0]!.nextAttemptAt) - t0).toBe(3_600_000);

    w.clock.advance(60_000); // the schedule's own step has passed, the receiver's wait has not
    expect(await w.pass()).toEqual({ delivered: 0, failed: 0, parked: 0, deferred: 0 });
    expect(w.receiver.requests).toHaveLength(1);

    w.clock.set(new Date(t0 + 3_600_000));
    const t1 = w.clock.now().getTime();
    expect(await w.pass()).toMatchObject({ failed: 1 });
    expect(Date.parse((await w.messages('acct-1'))[0]!.nextAttemptAt) - t1).toBe(DEFAULT_RETRY_DELAYS_MS[2]);
    await w.stepToNextAttempt('acct-1');
    expect(await w.pass()).toMatchObject({ delivered: 1 });
    expect(w.acknowledged()).toEqual([message!.id]);
  });

  test('an account without a usable endpoint keeps its messages pending and does not starve other accounts', async () => {
    const w = await makeWorld();
    await w.setEndpoint('acct-1');
    await w.setEndpoint('acct-3', { webhookEnabled: false });
    const orphaned = await w.enqueue('acct-2', 4); // never saved settings
    const disabled = await w.enqueue('acct-3', 2);
    const served = await w.enqueue('acct-1', 3);

    for (let i = 0; i < 4; i += 1) await w.pass(3);
    expect(w.acknowledged()).toEqual(served.map((m) => m.id));
    expect((await w.storage.outbox.list('acct-2', 'pending')).map((m) => m.id)).toEqual(orphaned.map((m) => m.id));
    expect((await w.storage.outbox.list('acct-3', 'pending')).map((m) => m.id)).toEqual(disabled.map((m) => m.id));
    expect(await webhookStatus(w.deps, 'acct-2')).toEqual({
      webhookEnabled: false,
      webhookStatusDetail: null,
      health: 'disabled',
      failingSince: null,
      processing: 4,
      failed: 0,
      messages: { pending: 4, delivered: 0, parked: 0 },
    });

    await w.setEndpoint('acct-2');
    await resumePendingMessages(w.deps, 'acct-2');
    await w.pass(10);
    expect(w.acknowledged()).toEqual([...served, ...orphaned].map((m) => m.id));
  });

  test('order within a stream only: a failing stream holds back its own later messages, other streams of the account go on', async () => {
    const w = await makeWorld();
    await w.setEndpoint('acct-1');
    const [poison, behind] = await w.enqueue('acct-1', 2, 'bulk-poison');
    const others = await w.enqueue('acct-1', 3);
    w.receiver.setDefault(({ headers }) => (headers['webhook-id'] === poison!.id ? { kind: 'status', status: 500 } : { kind: 'ok' }));

    expect(await w.pass()).toEqual({ delivered: 3, failed: 1, parked: 0, deferred: 0 });
    expect(new Set(w.acknowledged())).toEqual(new Set(others.map((m) => m.id)));
    // A new stream created while the poison message waits goes at once; the poison's own stream does not.
    w.clock.advance(1_000);
    const [late] = await w.enqueue('acct-1');
    const [lateInStream] = await w.enqueue('acct-1', 1, 'bulk-poison');
    expect(await w.pass()).toEqual({ delivered: 1, failed: 0, parked: 0, deferred: 0 });
    expect(w.acknowledged().at(-1)).toBe(late!.id);

    // The poison message keeps its schedule; once parked, its stream goes on, in order.
    while (await w.stepToNextAttempt('acct-1')) await w.pass();
    expect(w.acknowledged().slice(-2)).toEqual([behind!.id, lateInStream!.id]);
    expect((await w.storage.outbox.get('acct-1', poison!.id))!).toMatchObject({ status: 'parked', attempts: DEFAULT_RETRY_DELAYS_MS.length });
    expect(w.attempts.filter((a) => a.messageId === behind!.id)).toHaveLength(1);
  });

  test('up to endpointConcurrency requests in flight per endpoint, one per stream', async () => {
    const w = await makeWorld({ endpointConcurrency: 4 });
    await w.setEndpoint('acct-1');
    await w.enqueue('acct-1', 12);
    const ordered = await w.enqueue('acct-1', 4, 'bulk-1');
    let inFlight = 0;
    let most = 0;
    const sender = w.deps.webhookSender;
    w.deps.webhookSender = {
      send: async (delivery) => {
        most = Math.max(most, ++inFlight);
        try {
          return await sender.send(delivery);
        } finally {
          inFlight -= 1;
        }
      },
    };
    w.receiver.setDefault({ kind: 'slow', delayMs: 20 });
    expect(await w.pass()).toMatchObject({ delivered: 16 });
    expect(most).toBe(4);
    const acknowledged = w.acknowledged();
    expect(acknowledged.filter((id) => ordered.some((m) => m.id === id))).toEqual(ordered.map((m) => m.id));
  });

  test('a rate limit sends at most perSecond messages a second to each endpoint; the rest stay due and go as the bucket refills', async () => {
    const w = await makeWorld({ rateLimit: { perSecond: 5, buckets: new Map() } });
    await w.setEndpoint('acct-1');
    await w.setEndpoint('acct-2');
    // Twenty streams on one endpoint, three messages on another.
    for (let i = 0; i < 20; i++) await w.enqueue('acct-1', 1);
    await w.enqueue('acct-2', 3);
    expect(await w.pass()).toMatchObject({ delivered: 8, failed: 0, parked: 0 });
    // Nothing more within the same second; the skipped messages were handed back, not stranded.
    expect(await w.pass()).toMatchObject({ delivered: 0 });
    w.clock.advance(400);
    expect(await w.pass()).toMatchObject({ delivered: 2 });
    w.clock.advance(600);
    expect(await w.pass()).toMatchObject({ delivered: 3 });
    // A quiet endpoint saves up one second's worth at most.
    w.clock.advance(60_000);
    expect(await w.pass()).toMatchObject({ delivered: 5 });
    w.clock.advance(1_000);
    expect(await w.pass()).toMatchObject({ delivered: 5 });
    expect((await w.messages('acct-1')).every((m) => m.status === 'delivered')).toBe(true);
    expect(new Set(w.acknowledged()).size).toBe(23);
  });

  test('429 with Retry-After pauses that endpoint only: its other streams wait, another account goes on', async () => {
    const pauses = new Map<string, number>();
    const w = await makeWorld({ endpointConcurrency: 1, endpointPauses: pauses });
    await w.setEndpoint('acct-1');
    await w.setEndpoint('acct-2');
    const [first, second] = await w.enqueue('acct-1', 2);
    const [other] = await w.enqueue('acct-2');
    let throttled = false;
    w.receiver.setDefault(({ headers }) => {
      if (headers['webhook-id'] !== first!.id || throttled) return { kind: 'ok' };
      throttled = true;
      return { kind: 'status', status: 429, headers: { 'retry-after': '120' } };
    });
    const t0 = w.clock.now().getTime();
    expect(await w.pass()).toEqual({ delivered: 1, failed: 1, parked: 0, deferred: 1 });
    expect(w.acknowledged()).toEqual([other!.id]);
    expect(Date.parse((await w.storage.outbox.get('acct-1', second!.id))!.nextAttemptAt)).toBe(t0 + 120_000);
    // A message created during the pause waits for its end too.
    w.clock.advance(10_000);
    const [during] = await w.enqueue('acct-1');
    expect(await w.pass()).toEqual({ delivered: 0, failed: 0, parked: 0, deferred: 1 });
    w.clock.set(new Date(t0 + 120_000));
    expect(await w.pass()).toMatchObject({ delivered: 3, failed: 0 });
    expect(w.acknowledged().slice(1).sort()).toEqual([first!.id, second!.id, during!.id].sort());
  });

  test('the ping expects its pong within 2 s and reports what happened', async () => {
    const w = await makeWorld();
    const deps = { webhookSender: w.deps.webhookSender, clock: w.clock, ids: w.ids };
    const url = `${w.receiver.url}/hook`;
    w.receiver.enqueue({ kind: 'ok', pong: true }, { kind: 'ok', body: '{"pong":"something else"}' }, { kind: 'status', status: 404 });
    const ok = await pingWebhook(deps, { url, key: KEY, token: 'tok-1' });
    expect(ok.ok).toBe(true);
    const request = w.receiver.requests[0]!;
    expect(JSON.parse(request.body)).toEqual({ ping: 'tok-1', meta: { messageId: ok.messageId, when: START, type: 'ping' } });
    expect(verifyWebhookSignature(request.body, String(request.headers['x-metriport-signature']), KEY)).toBe(true);
    expect(w.attempts[0]!.timeoutMs).toBe(2_000);

    const wrong = await pingWebhook(deps, { url, key: KEY, token: 'tok-2' });
    expect(wrong).toMatchObject({ ok: false });
    expect(wrong.detail).toMatch(/pong/);
    const missing = await pingWebhook(deps, { url, key: KEY, token: 'tok-3' });
    expect(missing).toMatchObject({ ok: false });
    expect(missing.detail).toMatch(/404/);
    w.receiver.enqueue({ kind: 'slow', delayMs: 3_000, then: { kind: 'ok', pong: true } });
    const slow = await pingWebhook(deps, { url, key: KEY, token: 'tok-4', timeoutMs: 100 });
    expect(slow.detail).toMatch(/no answer within 100 ms/);
  });
});

const behaviourArbitrary: fc.Arbitrary<ReceiverBehaviour> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<ReceiverBehaviour>({ kind: 'ok' }) },
  { weight: 4, arbitrary: fc.constantFrom<ReceiverBehaviour>({ kind: 'status', status: 500 }, { kind: 'status', status: 400 }) },
  { weight: 1, arbitrary: fc.constant<ReceiverBehaviour>({ kind: 'status', status: 410 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<ReceiverBehaviour>(
      { kind: 'status', status: 429, headers: { 'retry-after': '30' } },
      { kind: 'status', status: 503, headers: { 'retry-after': '2' } },
    ),
  },
  { weight: 1, arbitrary: fc.constant<ReceiverBehaviour>({ kind: 'hang-up' }) },
  // Slower than the sender's timeout: never answering, so the outcome does not hang on which timer fires first.
  { weight: 1, arbitrary: fc.constant<ReceiverBehaviour>({ kind: 'silent' }) },
);

const ACCOUNTS = ['acct-1', 'acct-2'] as const;
/** A stream is its account and bulk request id. */
const streamOf = (m: OutboxMessage) => `${m.accountId}/${m.streamKey}`;

describe('property', () => {
  test('any interleaving of streams and receiver behaviours: every message ends delivered xor parked, each stream in creation order, a due stream head always goes in the next pass', async () => {
    await fc.assert(
      fc
        .asyncProperty(
          // Each message: its account, its stream, and the wave (before which pass) it is created in.
          fc.array(fc.record({ account: fc.constantFrom(...ACCOUNTS), stream: fc.nat(3), wave: fc.nat(3) }), { minLength: 1, maxLength: 12 }),
          fc.array(behaviourArbitrary, { maxLength: 30 }),
          fc.integer({ min: 1, max: 4 }),
          fc.infiniteStream(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
          async (plan, behaviours, endpointConcurrency, randoms) => {
            const schedule = createRetrySchedule({ delaysMs: [0, 1_000, 5_000, 20_000], jitter: 0.2 });
            const random = randoms[Symbol.iterator]();
            const w = await makeWorld({
              schedule,
              timeoutMs: 100,
              endpointConcurrency,
              endpointPauses: new Map(),
              random: () => random.next().value as number,
            });
            try {
              for (const account of ACCOUNTS) await w.setEndpoint(account);
              w.receiver.enqueue(...behaviours);
              const enqueued: OutboxMessage[] = [];
              const pendingOf = async () => (await Promise.all(ACCOUNTS.map((a) => w.storage.outbox.list(a, 'pending')))).flat();
              let passes = 0;
              for (;;) {
                passes += 1;
                expect(passes, 'delivery never settles').toBeLessThan(300);
                for (const item of plan.filter((p) => p.wave === passes - 1)) {
                  w.clock.advance(1);
                  enqueued.push(...(await w.enqueue(item.account, 1, `s${item.stream}`)));
                }
                // Stream heads due now that were never tried: the pass must try each, whatever other streams do.
                const now = w.clock.now().toISOString();
                const pending = await pendingOf();
                const heads = pending.filter(
                  (m) => m.attempts === 0 && m.nextAttemptAt <= now && !pending.some((o) => streamOf(o) === streamOf(m) && o.createdAt + o.id < m.createdAt + m.id),
                );
                const pausedBefore = new Set<string>(ACCOUNTS.filter((a) => (w.deps.endpointPauses!.get(a) ?? 0) > w.clock.now().getTime()));
                const requestsBefore = w.receiver.requests.length;
                const attemptsBefore = w.attempts.length;
                await w.pass(100);
                // An endpoint that asked for a pause (429/503) or went away (410) in this pass is left alone on purpose.
                const stopped = new Set(pausedBefore);
                for (const r of w.receiver.requests.slice(requestsBefore)) {
                  if (r.behaviour.kind === 'status' && [410, 429, 503].includes(r.behaviour.status)) stopped.add(r.path.split('/').at(-1)!);
                }
                const tried = new Set(w.attempts.slice(attemptsBefore).map((a) => a.messageId));
                for (const head of heads) if (!stopped.has(head.accountId)) expect(tried.has(head.id), `head ${head.id} not tried`).toBe(true);

                for (const account of ACCOUNTS) {
                  const settings = await w.storage.webhookSettings.get(account);
                  if (settings && !settings.webhookEnabled) {
                    // A 410 disabled it: the customer sets the URL again, which re-enables and resumes.
                    await w.setEndpoint(account);
                    await resumePendingMessages(w.deps, account);
                  }
                }
                const left = await pendingOf();
                if (left.length === 0 && passes > 4) break;
                await w.stepToNextAttempt(...ACCOUNTS);
              }

              const stored = byId([...(await w.messages('acct-1')), ...(await w.messages('acct-2'))]);
              expect(stored.size).toBe(enqueued.length);
              // As the sender saw the answers: a 2xx that came after its timeout is a failed attempt (sent again).
              const acknowledged = w.observed();
              for (const original of enqueued) {
                const message = stored.get(original.id)!;
                // Never neither: a final state. Never both: delivered iff the receiver acknowledged it in time, exactly once.
                expect(['delivered', 'parked']).toContain(message.status);
                expect(acknowledged.filter((id) => id === original.id).length).toBe(message.status === 'delivered' ? 1 : 0);
                expect(message.body).toBe(original.body);
                expect(message.attempts).toBeLessThanOrEqual(schedule.maxAttempts);
              }
              for (const request of w.receiver.requests) expect(request.body).toBe(stored.get(String(request.headers['webhook-id']))!.body);
              // Within a stream, the messages delivered arrive in creation order.
              for (const stream of new Set(enqueued.map(streamOf))) {
                const order = enqueued.filter((m) => streamOf(m) === stream).map((m) => m.id);
                const delivered = acknowledged.filter((id) => order.includes(id));
                expect(delivered).toEqual(order.filter((id) => delivered.includes(id)));
              }
            } finally {
              await w.sender.close();
              await w.receiver.close();
              worlds.splice(worlds.indexOf(w), 1);
            }
          },
        ),
      { numRuns: 60 },
    );
  }, 180_000);
});

describe('a real receiver on 127.0.0.1 that fails the first attempt of every message', () => {
  test('every message is delivered, in order within each stream, each on its second attempt 5 s later', async () => {
    const w = await makeWorld({ random: Math.random });
    await w.setEndpoint('acct-1');
    const seen = new Set<string>();
    w.receiver.setDefault(({ headers }) => {
      const id = String(headers['webhook-id']);
      if (seen.has(id)) return { kind: 'ok' };
      seen.add(id);
      return { kind: 'status', status: 500 };
    });
    const enqueued: OutboxMessage[] = [];
    for (let i = 0; i < 60; i += 1) enqueued.push(...(await w.enqueue('acct-1', 1, `bulk-${i % 7}`)));
    let passes = 0;
    do {
      await w.pass(100);
      passes += 1;
    } while ((await w.stepToNextAttempt('acct-1')) && passes < 200);

    expect((await w.messages('acct-1')).every((m) => m.status === 'delivered' && m.attempts === 2)).toBe(true);
    const acknowledged = w.acknowledged();
    expect(new Set(acknowledged)).toEqual(new Set(enqueued.map((m) => m.id)));
    for (let s = 0; s < 7; s += 1) {
      const stream = enqueued.filter((m) => m.streamKey === `bulk:bulk-${s}`).map((m) => m.id);
      expect(acknowledged.filter((id) => stream.includes(id))).toEqual(stream);
    }
    // Each stream needs one retry step per message; the 7 streams go side by side.
    expect(w.clock.now().getTime() - Date.parse(START)).toBeLessThan(10 * 5_500);
  });
});

describe('what a customer is told of a failed attempt', () => {
  test('an unreachable receiver reads "not reachable from the service": no address, port or system error code', async () => {
    const w = await makeWorld();
    // A port on loopback that nothing listens on: the connection is refused at once.
    const closed = await startReceiver();
    const deadUrl = `${closed.url}/hook`;
    await closed.close();
    await w.setEndpoint('acct-1', { webhookUrl: deadUrl });
    await w.enqueue('acct-1');
    expect(await w.pass()).toMatchObject({ failed: 1 });
    const stored = (await w.messages('acct-1'))[0]!;
    expect(stored.lastError).toBe('the URL is not reachable from the service');

    const ping = await pingWebhook({ ...w.deps, ids: w.ids }, { url: deadUrl, key: KEY, token: 't' });
    expect(ping.ok).toBe(false);
    expect(ping.detail).toBe('Ping failed: the URL is not reachable from the service');
    expect(ping.detail).not.toMatch(/ECONN|127\.0\.0\.1|:\d{2,5}/);
  });

  test('a receiver refused by the SSRF guard reads the same, never "resolves to a loopback address"', async () => {
    const sender = new HttpWebhookSender({ allowPrivate: false });
    try {
      const clock = new SteppedClock(START);
      const ping = await pingWebhook({ webhookSender: sender, clock, ids: new SequentialIds() }, { url: 'http://10.0.0.8/hook', key: KEY, token: 't' });
      expect(ping).toMatchObject({ ok: false, detail: 'Ping failed: the URL is not reachable from the service' });
    } finally {
      await sender.close();
    }
  });
});
