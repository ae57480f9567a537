import { describe, expect, test } from 'vitest';
import { HmacUrlSigner } from '../../adapters/crypto/hmac.url-signer.js';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { WEBHOOK_MESSAGE_TYPES, webhookMessageSchemas } from '../../contract/webhooks.js';
import { FILTERABLE_EVENT_TYPES } from './endpoints.js';
import { describeDuration, healthOf } from './health.js';
import { sampleMessage } from './test-event.js';

const deps = {
  urlSigner: new HmacUrlSigner('test-event-secret'),
  clock: new SteppedClock('2026-11-22T09:00:00.000Z'),
  config: { publicUrl: 'https://carebridge.example.com', webhookAllowPrivate: false },
};

describe('test events', () => {
  test('a test event may be of every message type but the ping', () => {
    expect([...FILTERABLE_EVENT_TYPES].sort()).toEqual(WEBHOOK_MESSAGE_TYPES.filter((type) => type !== 'ping').sort());
  });

  test.each([...FILTERABLE_EVENT_TYPES])('the sample of %s is valid against its schema, marked meta.test, with the given id and time', (type) => {
    const when = new Date('2026-11-22T09:00:00.000Z');
    const message = sampleMessage(deps, 'acct-1', type, { messageId: 'm-1', when });
    const parsed = webhookMessageSchemas[type].safeParse(JSON.parse(JSON.stringify(message)));
    expect(parsed.success, parsed.success ? '' : parsed.error.message).toBe(true);
    expect(message.meta).toMatchObject({ type, messageId: 'm-1', when: when.toISOString(), test: true });
    // URLs are the service's own, signed for the account.
    for (const url of JSON.stringify(message).match(/https:\/\/[^"]+/g) ?? []) {
      if (url.startsWith('https://carebridge.example.com')) expect(url).toMatch(/[?&]acct=acct-1&/);
    }
  });
});

describe('endpoint health', () => {
  test('disabled when off whatever its clock, failing while the clock runs, else healthy', () => {
    expect(healthOf(true, undefined)).toBe('healthy');
    expect(healthOf(true, '2026-11-22T09:00:00.000Z')).toBe('failing');
    expect(healthOf(false, undefined)).toBe('disabled');
    expect(healthOf(false, '2026-11-22T09:00:00.000Z')).toBe('disabled');
  });

  test('durations in words', () => {
    expect(describeDuration(60_000)).toBe('1 minute');
    expect(describeDuration(90 * 60_000)).toBe('90 minutes');
    expect(describeDuration(36 * 3_600_000)).toBe('36 hours');
    expect(describeDuration(5 * 24 * 3_600_000)).toBe('5 days');
  });
});
