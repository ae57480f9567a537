import type { LookupAddress } from 'node:dns';
import { MetriportMedicalApi } from '@metriport/api-sdk';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, test } from 'vitest';
import { HttpWebhookSender, parseRetryAfter } from '../../adapters/webhook/http.webhook-sender.js';
import {
  signStandardWebhook,
  signWebhookBody,
  verifyStandardWebhook,
  verifyWebhookSignature,
  webhookSigningSecret,
} from '../../contract/signature.js';
import { defineWebhookSenderContract } from '../ports/webhook-sender.contract.js';
import { startReceiver } from '../support/receiver.js';

defineWebhookSenderContract({ test, make: () => new HttpWebhookSender({ allowPrivate: true }) });

/** A resolver that answers from a table, as `dns.lookup` would with `all: true`. */
function fakeLookup(table: Record<string, LookupAddress[]>) {
  return ((hostname: string, _options: unknown, callback: (e: NodeJS.ErrnoException | null, a: LookupAddress[]) => void) => {
    const answer = table[hostname];
    if (!answer) {
      const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      callback(error, []);
      return;
    }
    callback(null, answer);
  }) as unknown as typeof import('node:dns').lookup;
}

describe('HttpWebhookSender: SSRF guard when private destinations are not allowed', () => {
  test('literal loopback and private addresses, and localhost, are refused without a request', async () => {
    const receiver = await startReceiver();
    const sender = new HttpWebhookSender({ allowPrivate: false });
    try {
      const base = { messageId: 'm1', body: '{}', signingKey: 'k', timestamp: 1, timeoutMs: 1_000 };
      for (const url of [`${receiver.url}/x`, `http://localhost:${receiver.port}/x`, `http://[::1]:${receiver.port}/`, 'http://10.0.0.8/', 'http://2130706433/']) {
        const result = await sender.send({ ...base, url });
        expect(result, url).toMatchObject({ outcome: 'failed', gone: false });
        expect(result.outcome === 'failed' && result.error, url).toMatch(/^refused:/);
      }
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await sender.close();
      await receiver.close();
    }
  });

  test('a public-looking hostname that resolves to a private address is refused at connect time', async () => {
    const receiver = await startReceiver();
    const sender = new HttpWebhookSender({
      allowPrivate: false,
      lookup: fakeLookup({ 'hooks.customer.test': [{ address: '127.0.0.1', family: 4 }], 'mixed.customer.test': [{ address: '93.184.215.14', family: 4 }, { address: '10.1.2.3', family: 4 }] }),
    });
    try {
      const base = { messageId: 'm1', body: '{}', signingKey: 'k', timestamp: 1, timeoutMs: 1_000 };
      const rebound = await sender.send({ ...base, url: `http://hooks.customer.test:${receiver.port}/x` });
      expect(rebound).toMatchObject({ outcome: 'failed', gone: false });
      expect(rebound.outcome === 'failed' && rebound.error).toMatch(/refused: hooks\.customer\.test resolves to a loopback, private/);
      const mixed = await sender.send({ ...base, url: `http://mixed.customer.test:${receiver.port}/x` });
      expect(mixed.outcome === 'failed' && mixed.error).toMatch(/refused: mixed\.customer\.test/);
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await sender.close();
      await receiver.close();
    }
  });

  test('the same hostname is reached when it resolves to loopback and private destinations are allowed', async () => {
    const receiver = await startReceiver();
    const sender = new HttpWebhookSender({ allowPrivate: true, lookup: fakeLookup({ 'hooks.customer.test': [{ address: '127.0.0.1', family: 4 }] }) });
    try {
      const result = await sender.send({ url: `http://127.0.0.1:${receiver.port}/x`, messageId: 'm1', body: '{}', signingKey: 'k', timestamp: 1, timeoutMs: 1_000 });
      expect(result.outcome).toBe('delivered');
    } finally {
      await sender.close();
      await receiver.close();
    }
  });
});

describe('webhook signatures', () => {
  test('x-metriport-signature verifies with the Metriport SDK (existing receivers keep working)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), fc.string({ minLength: 1, maxLength: 64 }), (body, key) => {
        const signature = signWebhookBody(body, key);
        expect(MetriportMedicalApi.verifyWebhookSignature(key, body, signature)).toBe(true);
        expect(verifyWebhookSignature(body, signature, key)).toBe(true);
        expect(verifyWebhookSignature(Buffer.from(body, 'utf8'), signature, key)).toBe(true);
      }),
      { numRuns: 50 },
    );
  });

  test('a tampered body, another key or a malformed signature does not verify', () => {
    const signature = signWebhookBody('{"a":1}', 'key');
    expect(verifyWebhookSignature('{"a":2}', signature, 'key')).toBe(false);
    expect(verifyWebhookSignature('{"a":1}', signature, 'other')).toBe(false);
    expect(verifyWebhookSignature('{"a":1}', signature.slice(0, -2), 'key')).toBe(false);
    expect(verifyWebhookSignature('{"a":1}', 'zz' + signature.slice(2), 'key')).toBe(false);
    expect(verifyWebhookSignature('{"a":1}', signature.toUpperCase(), 'key')).toBe(true);
  });

  test('the Standard Webhooks published test vector reproduces exactly (interoperability, not self-consistency)', () => {
    const key = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"test": 2432232314}';
    expect(signStandardWebhook('msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, body, key)).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    const headers = { 'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek', 'webhook-timestamp': '1614265330', 'webhook-signature': 'v1,bm9wZQ== v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' };
    expect(verifyStandardWebhook(body, headers, key, { nowSeconds: 1614265330 + 60 })).toBe(true);
  });

  test('the signing secret of a plain key is whsec_ + base64(UTF-8 bytes of the key): the stock library signs as the sender does', () => {
    const key = 'Zm9vYmFyLWJhc2U2NHVybC1rZXk_-x';
    const secret = webhookSigningSecret(key);
    expect(secret).toBe(`whsec_${Buffer.from(key, 'utf8').toString('base64')}`);
    const signed = signStandardWebhook('id1', 1700000000, '{}', key);
    expect(signStandardWebhook('id1', 1700000000, '{}', secret)).toBe(signed);
    expect(new Webhook(secret).sign('id1', new Date(1700000000 * 1000), '{}')).toBe(signed);
  });

  test('a whsec_ key keeps its meaning: its secret is itself, in strict base64 (padded) when it was written loosely', () => {
    const key = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    expect(webhookSigningSecret(key)).toBe(key);
    const unpadded = 'whsec_c2VjcmV0LWJ5dGU';
    expect(webhookSigningSecret(unpadded)).toBe('whsec_c2VjcmV0LWJ5dGU=');
    for (const written of [key, unpadded]) {
      const signed = signStandardWebhook('id1', 1700000000, '{}', written);
      expect(new Webhook(webhookSigningSecret(written)).sign('id1', new Date(1700000000 * 1000), '{}')).toBe(signed);
    }
  });

  test('Standard Webhooks verification refuses a stale or future timestamp, a tampered body and missing headers', () => {
    const key = 'secret-key';
    const body = '{"meta":{}}';
    const headers = { 'webhook-id': 'id1', 'webhook-timestamp': '1700000000', 'webhook-signature': signStandardWebhook('id1', 1700000000, body, key) };
    expect(verifyStandardWebhook(body, headers, key, { nowSeconds: 1700000000 + 299 })).toBe(true);
    expect(verifyStandardWebhook(body, headers, key, { nowSeconds: 1700000000 + 301 })).toBe(false);
    expect(verifyStandardWebhook(body, headers, key, { nowSeconds: 1700000000 - 301 })).toBe(false);
    expect(verifyStandardWebhook(body + ' ', headers, key, { nowSeconds: 1700000000 })).toBe(false);
    expect(verifyStandardWebhook(body, { ...headers, 'webhook-id': 'id2' }, key, { nowSeconds: 1700000000 })).toBe(false);
    expect(verifyStandardWebhook(body, { ...headers, 'webhook-signature': undefined }, key, { nowSeconds: 1700000000 })).toBe(false);
    expect(verifyStandardWebhook(body, { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') }, key, { nowSeconds: 1700000000 })).toBe(false);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2024-05-01T12:00:00Z');
  test('delta-seconds and HTTP dates become a wait in ms; junk is ignored; past dates mean now', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Wed, 01 May 2024 13:00:00 GMT', now)).toBe(3_600_000);
    expect(parseRetryAfter('Wed, 01 May 2024 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(['60', '30'], now)).toBe(60_000);
  });
});

describe('webhookModule', () => {
  test('binds one HTTP sender per container, honouring webhookAllowPrivate, and closes it on unbindAllAsync', async () => {
    const { Container } = await import('inversify');
    const { webhookModule } = await import('../../adapters/container/webhook.module.js');
    const { TOKENS } = await import('../../adapters/container/tokens.js');
    const receiver = await startReceiver();
    try {
      for (const allowPrivate of [true, false]) {
        const container = new Container();
        container.bind(TOKENS.config).toConstantValue({ publicUrl: 'http://localhost:8080', webhookAllowPrivate: allowPrivate });
        await container.load(webhookModule());
        const sender = container.get(TOKENS.webhookSender);
        expect(sender).toBeInstanceOf(HttpWebhookSender);
        expect(container.get(TOKENS.webhookSender)).toBe(sender);
        const result = await sender.send({ url: `${receiver.url}/x`, messageId: 'm', body: '{}', signingKey: 'k', timestamp: 1, timeoutMs: 1_000 });
        expect(result.outcome).toBe(allowPrivate ? 'delivered' : 'failed');
        await container.unbindAllAsync();
        // Deactivation closed its connection pool: the sender refuses instead of leaking sockets.
        const after = await sender.send({ url: `${receiver.url}/x`, messageId: 'm', body: '{}', signingKey: 'k', timestamp: 1, timeoutMs: 1_000 });
        expect(after.outcome).toBe('failed');
      }
      expect(receiver.requests).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});
