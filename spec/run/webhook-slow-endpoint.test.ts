import { afterEach, describe, expect, test, vi } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import type { WebhookDelivery, WebhookSenderPort } from '../../core/ports/webhook-sender.port.js';
import { DEFAULT_ENDPOINT_CONCURRENCY } from '../../core/webhooks/delivery.js';
import { enqueueMessage } from '../../core/webhooks/enqueue.js';
import { FAILURES_BEFORE_REST } from '../../core/webhooks/lane.js';
import { bulkPatientCreateMessage } from '../../core/webhooks/envelope.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';

/*
 * The service's own delivery loop (the runtime's background work) with two endpoints of one account: one
 * holds every request it gets until the test lets it answer (or fails every one), the other answers at
 * once. What the healthy endpoint receives must not wait for the other, neither messages created while the
 * slow one holds its first ones nor its rate limit's next second's worth; and a failing endpoint is tried
 * a few times, then rests, rather than once per message it has. The clock is stepped; waits are for the
 * background loop to get to what is due, never for time to pass.
 */

const START = '2024-05-01T00:00:00.000Z';
const SLOW_URL = 'https://slow.example/hooks';
const FAILING_URL = 'https://failing.example/hooks';
const HEALTHY_URL = 'https://healthy.example/hooks';
/** How long the background loop may take to get to what is due (real time; it polls every 10 ms here). */
const WITHIN = { timeout: 5_000, interval: 10 };

/**
 * A sender standing for the receivers: the slow endpoint's requests wait until `release()`, the failing
 * endpoint answers 500 until `release()`, the healthy one answers at once.
 */
function receivers() {
  const held: { delivery: WebhookDelivery; answer: () => void }[] = [];
  const received = new Map<string, string[]>([
    [SLOW_URL, []],
    [FAILING_URL, []],
    [HEALTHY_URL, []],
  ]);
  let attemptsToFailing = 0;
  let holding = true;
  const sender: WebhookSenderPort = {
    async send(delivery) {
      if (delivery.url === SLOW_URL && holding) await new Promise<void>((answer) => held.push({ delivery, answer }));
      if (delivery.url === FAILING_URL) {
        attemptsToFailing += 1;
        if (holding) return { outcome: 'failed', status: 500, gone: false, error: 'the receiver answered HTTP 500', durationMs: 1 };
      }
      received.get(delivery.url)!.push(delivery.messageId);
      return { outcome: 'delivered', status: 200, durationMs: 1 };
    },
  };
  return {
    sender,
    /** Requests the slow endpoint holds, unanswered. */
    held: () => held.map((h) => h.delivery.messageId),
    /** Message ids an endpoint acknowledged, in the order it answered. */
    received: (url: string) => [...received.get(url)!],
    attemptsToFailing: () => attemptsToFailing,
    /** The slow endpoint answers what it holds and everything after at once; the failing one answers 200 from now on. */
    release() {
      holding = false;
      for (const { answer } of held.splice(0)) answer();
    },
  };
}

const opened: { runtime: Runtime; release: () => void }[] = [];
afterEach(async () => {
  for (const { runtime, release } of opened.splice(0)) {
    release();
    await runtime.close();
  }
});

/** The service with an account whose default endpoint is `defaultUrl` (the slow one unless said) and whose other endpoint is the healthy one. */
async function service(options: { rateLimitPerSecond?: number; defaultUrl?: string } = {}) {
  const { defaultUrl = SLOW_URL, ...webhooks } = options;
  const clock = new SteppedClock(START);
  const ids = new SequentialIds();
  const endpoints = receivers();
  const runtime = await createRuntime({
    profile: { kind: 'memory' },
    publicUrl: 'http://carebridge.test',
    clock,
    ids,
    pollMs: 10,
    webhooks: { sender: endpoints.sender, ...webhooks },
  });
  opened.push({ runtime, release: endpoints.release });
  const { accountId } = await runtime.createAccount('slow and healthy');
  const { storage } = runtime.deps;
  const now = clock.now().toISOString();
  await storage.webhookSettings.put({ accountId, webhookUrl: defaultUrl, webhookKey: 'whk_default-endpoint-key', webhookEnabled: true, webhookStatusDetail: null, updatedAt: now });
  await storage.webhookEndpoints.insert({
    id: 'endpoint-healthy',
    accountId,
    url: HEALTHY_URL,
    description: 'answers at once',
    enabled: true,
    eventTypes: [],
    secret: 'whsec_aGVhbHRoeS1lbmRwb2ludC1zZWNyZXQtYnl0ZXM=',
    statusDetail: null,
    createdAt: now,
    updatedAt: now,
  });
  /** Stores one stream (a bulk request) of `statuses.length` messages, for both endpoints; returns their ids. */
  const stream = (requestId: string, statuses: ('processing' | 'completed')[] = ['processing']) =>
    storage.transaction(async (tx) => {
      const stored: string[] = [];
      for (const status of statuses) {
        const message = bulkPatientCreateMessage({ messageId: ids.next(), requestId, when: clock.now() }, { requestId, status });
        stored.push((await enqueueMessage(tx, accountId, message)).id);
      }
      return stored;
    });
  runtime.background.start();
  /** The default endpoint's messages: how many were tried how many times. */
  const attemptsByMessage = async () => (await storage.outbox.list(accountId)).filter((m) => m.endpointId === undefined).map((m) => m.attempts);
  return { clock, endpoints, stream, attemptsByMessage };
}

describe("the service's delivery loop, one endpoint holding every request", () => {
  test('the healthy endpoint receives what is created while the slow one holds its first messages; the slow one gets all of it once it answers, each stream in order', async () => {
    const { endpoints, stream } = await service();
    const first = [await stream('bulk-1', ['processing', 'completed']), await stream('bulk-2', ['processing', 'completed']), await stream('bulk-3', ['processing', 'completed'])];
    const heads = first.map(([head]) => head!);
    await vi.waitFor(() => {
      expect(endpoints.received(HEALTHY_URL)).toHaveLength(6);
      expect(endpoints.held().sort()).toEqual([...heads].sort());
    }, WITHIN);

    const later: string[] = [];
    for (let i = 0; i < 10; i++) later.push(...(await stream(`later-${i}`)));
    await vi.waitFor(() => expect(endpoints.received(HEALTHY_URL)).toHaveLength(16), WITHIN);
    expect(endpoints.received(HEALTHY_URL).slice(6).sort()).toEqual([...later].sort());
    // The slow one still holds its first three and has answered nothing.
    expect(endpoints.held().sort()).toEqual([...heads].sort());
    expect(endpoints.received(SLOW_URL)).toEqual([]);

    endpoints.release();
    await vi.waitFor(() => expect(endpoints.received(SLOW_URL)).toHaveLength(16), WITHIN);
    const slow = endpoints.received(SLOW_URL);
    expect([...slow].sort()).toEqual([...first.flat(), ...later].sort());
    for (const [processing, completed] of first) expect(slow.indexOf(processing!)).toBeLessThan(slow.indexOf(completed!));
  });

  test("with a rate limit per endpoint, the healthy endpoint gets each second's worth while the slow one holds its first", async () => {
    const { clock, endpoints, stream } = await service({ rateLimitPerSecond: 5 });
    for (let i = 0; i < 20; i++) await stream(`bulk-${i}`);
    await vi.waitFor(() => {
      expect(endpoints.received(HEALTHY_URL)).toHaveLength(5);
      expect(endpoints.held()).toHaveLength(5);
    }, WITHIN);
    for (const second of [1, 2, 3]) {
      clock.advance(1_000);
      await vi.waitFor(() => expect(endpoints.received(HEALTHY_URL)).toHaveLength(5 * (second + 1)), WITHIN);
    }
    expect(endpoints.received(SLOW_URL)).toEqual([]);
    expect(new Set(endpoints.received(HEALTHY_URL)).size).toBe(20);
  });

  test(`a failing endpoint rests after ${FAILURES_BEFORE_REST} failed attempts in a row (and those in flight then), its other messages waiting, due; the healthy one gets everything meanwhile`, async () => {
    const { clock, endpoints, stream, attemptsByMessage } = await service({ defaultUrl: FAILING_URL });
    const MESSAGES = 3 * FAILURES_BEFORE_REST;
    for (let i = 0; i < MESSAGES; i++) await stream(`bulk-${i}`);
    const tried = async () => (await attemptsByMessage()).reduce((sum, attempts) => sum + attempts, 0);
    await vi.waitFor(async () => {
      expect(endpoints.received(HEALTHY_URL)).toHaveLength(MESSAGES);
      expect(await tried()).toBeGreaterThanOrEqual(FAILURES_BEFORE_REST);
    }, WITHIN);
    const firstRound = await tried();
    expect(firstRound).toBeLessThan(FAILURES_BEFORE_REST + DEFAULT_ENDPOINT_CONCURRENCY);
    expect(Math.max(...(await attemptsByMessage()))).toBe(1);
    expect(endpoints.attemptsToFailing()).toBe(firstRound);

    // After the rest (the first retry's 5 s, and its jitter): one window's worth of attempts, then another rest.
    clock.advance(5_500);
    await vi.waitFor(async () => expect(await tried()).toBeGreaterThan(firstRound), WITHIN);
    expect(await tried()).toBeLessThanOrEqual(firstRound + DEFAULT_ENDPOINT_CONCURRENCY);
    expect((await attemptsByMessage()).filter((attempts) => attempts === 0).length).toBeGreaterThan(0);

    // Once it answers, the next tries deliver everything (those tried twice are due again 5 min later).
    endpoints.release();
    clock.advance(6 * 60_000);
    await vi.waitFor(() => expect(new Set(endpoints.received(FAILING_URL)).size).toBe(MESSAGES), WITHIN);
  });
});
