import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { expect } from 'vitest';
import type { WebhookDelivery, WebhookSenderPort } from '../../core/ports/webhook-sender.port.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

type ContractTest = (name: string, fn: () => Promise<void>, timeout?: number) => void;

export interface WebhookSenderContractOptions {
  test: ContractTest;
  /**
   * A fresh sender on every call, allowed to reach 127.0.0.1 (the suite's receiver). When it has a
   * `close()`, the suite calls it at the end of each test.
   */
  make: () => (WebhookSenderPort & { close?: () => Promise<void> }) | Promise<WebhookSenderPort & { close?: () => Promise<void> }>;
  /** How much later than `timeoutMs` an aborted attempt may come back. 1 s unless told. */
  abortSlackMs?: number;
  /** fast-check runs of the body/signature property. */
  numRuns?: number;
}

const KEY = 'k3y-for-the-contract_suite';

/** The documented algorithms (adapters/webhook/signature.ts), recomputed here independently of the adapter. */
function expectedMetriportSignature(body: string, key: string): string {
  return createHmac('sha256', Buffer.from(key, 'utf8')).update(Buffer.from(body, 'utf8')).digest('hex');
}

function expectedStandardSignature(id: string, timestamp: number, body: string, key: string): string {
  const secret = key.startsWith('whsec_') ? Buffer.from(key.slice(6), 'base64') : Buffer.from(key, 'utf8');
  return `v1,${createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64')}`;
}

function delivery(receiver: Receiver, overrides: Partial<WebhookDelivery> = {}): WebhookDelivery {
  const messageId = overrides.messageId ?? '00000000-0000-7000-8000-000000000001';
  return {
    url: `${receiver.url}/hooks/carebridge`,
    messageId,
    body: JSON.stringify({ meta: { messageId, when: '2024-05-01T12:00:00.000Z', type: 'ping' }, ping: 'abc' }),
    signingKey: KEY,
    timestamp: 1_714_564_800,
    timeoutMs: 2_000,
    ...overrides,
  };
}

/**
 * The behaviour every webhook sender must have (port contract in core/ports/webhook-sender.port.ts),
 * checked against a real HTTP receiver on 127.0.0.1.
 */
export function defineWebhookSenderContract(options: WebhookSenderContractOptions): void {
  const { test, make } = options;
  const abortSlackMs = options.abortSlackMs ?? 1_000;

  /** Runs `body` with a fresh sender and receiver, and always releases both. */
  const withSetup = (fn: (sender: WebhookSenderPort, receiver: Receiver) => Promise<void>) => async () => {
    const receiver = await startReceiver();
    const sender = await make();
    try {
      await fn(sender, receiver);
    } finally {
      await sender.close?.();
      await receiver.close();
    }
  };

  test(
    'a 200 is delivered: the exact body is POSTed as JSON with both signatures, the ids and a user agent',
    withSetup(async (sender, receiver) => {
      const d = delivery(receiver);
      const result = await sender.send(d);
      expect(result).toMatchObject({ outcome: 'delivered', status: 200 });
      expect(receiver.requests).toHaveLength(1);
      const [received] = receiver.requests;
      expect(received!.method).toBe('POST');
      expect(received!.path).toBe('/hooks/carebridge');
      expect(received!.body).toBe(d.body);
      expect(received!.headers['content-type']).toMatch(/^application\/json/);
      expect(received!.headers['x-metriport-signature']).toBe(expectedMetriportSignature(d.body, KEY));
      expect(received!.headers['webhook-id']).toBe(d.messageId);
      expect(received!.headers['webhook-timestamp']).toBe(String(d.timestamp));
      expect(received!.headers['webhook-signature']).toBe(expectedStandardSignature(d.messageId, d.timestamp, d.body, KEY));
      expect(received!.headers['user-agent']).toMatch(/^carebridge-webhooks\/\d+\.\d+\.\d+/);
    }),
  );

  test(
    'a whsec_ key signs the Standard Webhooks header with its base64-decoded bytes',
    withSetup(async (sender, receiver) => {
      const key = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
      const d = delivery(receiver, { signingKey: key });
      await sender.send(d);
      const headers = receiver.requests[0]!.headers;
      expect(headers['webhook-signature']).toBe(expectedStandardSignature(d.messageId, d.timestamp, d.body, key));
      expect(headers['x-metriport-signature']).toBe(expectedMetriportSignature(d.body, key));
    }),
  );

  test(
    'previous signing keys (a rotation\'s grace period) add one v1 value each to webhook-signature, the current key\'s first; x-metriport-signature stays the current key\'s',
    withSetup(async (sender, receiver) => {
      const current = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
      const previous = 'whsec_c2VjcmV0LWJ5dGVzLW9mLWF0LWxlYXN0LTI0';
      const d = delivery(receiver, { signingKey: current, previousSigningKeys: [previous] });
      await sender.send(d);
      const headers = receiver.requests[0]!.headers;
      expect(headers['webhook-signature']).toBe(
        `${expectedStandardSignature(d.messageId, d.timestamp, d.body, current)} ${expectedStandardSignature(d.messageId, d.timestamp, d.body, previous)}`,
      );
      expect(headers['x-metriport-signature']).toBe(expectedMetriportSignature(d.body, current));
    }),
  );

  test(
    'any 2xx is delivered and the answer body comes back (the ping reads its pong from it)',
    withSetup(async (sender, receiver) => {
      receiver.enqueue({ kind: 'ok', pong: true }, { kind: 'ok', status: 204 }, { kind: 'ok', status: 202, body: 'queued' });
      const first = await sender.send(delivery(receiver));
      expect(first.outcome).toBe('delivered');
      expect(first.outcome === 'delivered' && JSON.parse(first.responseBody ?? 'null')).toEqual({ pong: 'abc' });
      expect(await sender.send(delivery(receiver))).toMatchObject({ outcome: 'delivered', status: 204 });
      expect(await sender.send(delivery(receiver))).toMatchObject({ outcome: 'delivered', status: 202, responseBody: 'queued' });
    }),
  );

  test(
    'a 500 is a failure with its status, not gone, with no Retry-After',
    withSetup(async (sender, receiver) => {
      receiver.enqueue({ kind: 'status', status: 500, body: 'boom' });
      const result = await sender.send(delivery(receiver));
      expect(result).toMatchObject({ outcome: 'failed', status: 500, gone: false });
      expect(result.outcome === 'failed' && result.retryAfterMs).toBeUndefined();
      expect(result.outcome === 'failed' && result.error.length).toBeGreaterThan(0);
    }),
  );

  test(
    'a 410 is a failure that says the endpoint is gone',
    withSetup(async (sender, receiver) => {
      receiver.enqueue({ kind: 'status', status: 410 });
      expect(await sender.send(delivery(receiver))).toMatchObject({ outcome: 'failed', status: 410, gone: true });
    }),
  );

  test(
    'Retry-After of a 429 (seconds) and of a 503 (HTTP date) comes back in milliseconds',
    withSetup(async (sender, receiver) => {
      receiver.enqueue(
        { kind: 'status', status: 429, headers: { 'retry-after': '120' } },
        { kind: 'status', status: 503, headers: { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() } },
        { kind: 'status', status: 500, headers: { 'retry-after': '120' } },
      );
      const limited = await sender.send(delivery(receiver));
      expect(limited).toMatchObject({ outcome: 'failed', status: 429, gone: false, retryAfterMs: 120_000 });
      const unavailable = await sender.send(delivery(receiver));
      expect(unavailable).toMatchObject({ outcome: 'failed', status: 503 });
      const wait = unavailable.outcome === 'failed' ? unavailable.retryAfterMs : undefined;
      // HTTP dates have 1 s resolution, and the test itself takes a moment.
      expect(wait).toBeGreaterThan(3_590_000);
      expect(wait).toBeLessThanOrEqual(3_600_000);
      const other = await sender.send(delivery(receiver));
      expect(other.outcome === 'failed' && other.retryAfterMs).toBeUndefined();
    }),
  );

  test(
    'a redirect is a failure and is not followed',
    withSetup(async (sender, receiver) => {
      receiver.enqueue({ kind: 'redirect', status: 302, location: `${receiver.url}/elsewhere` });
      receiver.enqueue({ kind: 'redirect', status: 307, location: `${receiver.url}/elsewhere` });
      expect(await sender.send(delivery(receiver))).toMatchObject({ outcome: 'failed', status: 302, gone: false });
      expect(await sender.send(delivery(receiver))).toMatchObject({ outcome: 'failed', status: 307, gone: false });
      expect(receiver.requests.map((r) => r.path)).toEqual(['/hooks/carebridge', '/hooks/carebridge']);
    }),
  );

  test(
    'a receiver slower than timeoutMs is aborted: a failure without status, marked timedOut, returned on time',
    withSetup(async (sender, receiver) => {
      receiver.enqueue({ kind: 'slow', delayMs: 5_000 });
      const started = Date.now();
      const result = await sender.send(delivery(receiver, { timeoutMs: 250 }));
      const took = Date.now() - started;
      expect(result).toMatchObject({ outcome: 'failed', gone: false, timedOut: true });
      expect(result.outcome === 'failed' && result.status).toBeUndefined();
      expect(took).toBeGreaterThanOrEqual(240);
      expect(took).toBeLessThan(250 + abortSlackMs);
      expect(receiver.requests).toHaveLength(1);
    }),
  );

  test(
    'a receiver that is down, or hangs up, is a failure, never a throw',
    withSetup(async (sender, receiver) => {
      receiver.enqueue({ kind: 'hang-up' });
      expect(await sender.send(delivery(receiver))).toMatchObject({ outcome: 'failed', gone: false });
      await receiver.down();
      const refused = await sender.send(delivery(receiver));
      expect(refused).toMatchObject({ outcome: 'failed', gone: false });
      expect(refused.outcome === 'failed' && refused.status).toBeUndefined();
      await receiver.up();
      expect(await sender.send(delivery(receiver))).toMatchObject({ outcome: 'delivered' });
    }),
  );

  test(
    'property: any JSON body arrives byte for byte and both signatures verify',
    withSetup(async (sender, receiver) => {
      await fc.assert(
        fc.asyncProperty(
          fc.jsonValue().map((v) => JSON.stringify({ meta: { messageId: 'm', type: 'ping' }, v })),
          fc.string({ minLength: 1, maxLength: 40 }),
          fc.integer({ min: 1_600_000_000, max: 2_000_000_000 }),
          async (body, key, timestamp) => {
            const before = receiver.requests.length;
            const d = delivery(receiver, { body, signingKey: key, timestamp, messageId: `msg-${before}` });
            expect(await sender.send(d)).toMatchObject({ outcome: 'delivered' });
            const received = receiver.requests[before]!;
            expect(received.body).toBe(body);
            expect(received.headers['x-metriport-signature']).toBe(expectedMetriportSignature(body, key));
            expect(received.headers['webhook-signature']).toBe(expectedStandardSignature(d.messageId, timestamp, body, key));
          },
        ),
        { numRuns: options.numRuns ?? 40 },
      );
    }),
  );
}
