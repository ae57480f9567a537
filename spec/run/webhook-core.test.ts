import { BlockList, isIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { CoreError, isCoreError } from '../../core/errors.js';
import {
  bulkPatientCreateMessage,
  consolidatedDataMessage,
  documentBulkDownloadUrlsMessage,
  documentConversionMessage,
  documentDownloadMessage,
  isWebhookMessageOfType,
  parseWebhookMessage,
  pingMessage,
  toWebhookBulkDocument,
  toWebhookDocument,
  webhookMessageSchema,
} from '../../core/webhooks/envelope.js';
import { validateMetadata, webhookMetadataSchema } from '../../contract/metadata.js';
import { createRetrySchedule, DEFAULT_RETRY_DELAYS_MS, nextAttemptAt } from '../../core/webhooks/retry-schedule.js';
import { isNonPublicAddress, validateWebhookUrl } from '../../core/webhooks/url.js';
import type { DocumentRecord } from '../../core/domain/types.js';

function caught(fn: () => unknown): CoreError {
  try {
    fn();
  } catch (error) {
    if (isCoreError(error)) return error;
    throw error;
  }
  throw new Error('expected a CoreError');
}

const WHEN = new Date('2024-05-01T12:00:00.000Z');

const document: DocumentRecord = {
  id: 'doc-1',
  accountId: 'acct',
  patientId: 'pat-1',
  queryId: 'q-1',
  source: 'hie',
  fileName: 'acct/pat-1/doc-1.xml',
  description: 'Continuity of Care Document',
  status: 'current',
  indexed: '2024-04-30T10:00:00.000Z',
  mimeType: 'application/xml',
  size: 12345,
  type: { coding: [{ system: 'http://loinc.org', code: '34133-9', display: 'Summary of episode note' }], text: 'CCD' },
  organizationIdentifiers: [{ name: 'General Hospital', identifierValues: ['2.16.840.1.113883.3.9621'] }],
  blobKey: 'acct/documents/doc-1',
  conversionStatus: 'completed',
  createdAt: '2024-04-30T10:00:00.000Z',
};

describe('validateMetadata (50 pairs, key <= 40, value <= 500, strings)', () => {
  test('absent metadata is undefined; valid metadata comes back as a copy', () => {
    expect(validateMetadata(undefined)).toBeUndefined();
    expect(validateMetadata(null)).toBeUndefined();
    const input = { youCanPutAnything: 'here', ['k'.repeat(40)]: 'v'.repeat(500) };
    const out = validateMetadata(input);
    expect(out).toEqual(input);
    expect(out).not.toBe(input);
  });

  test('exactly 50 pairs pass; 51 fail naming the first key over the limit', () => {
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`key${i}`, 'v']));
    expect(Object.keys(validateMetadata(fifty)!)).toHaveLength(50);
    const error = caught(() => validateMetadata({ ...fifty, extra: 'v' }));
    expect(error.code).toBe('METADATA_INVALID');
    expect(error.details).toEqual({ key: 'extra' });
    expect(error.message).toContain('"extra"');
    expect(error.message).toContain('50');
  });

  test('a key over 40 characters, an empty key, a long or non-string value fail naming the key, never echoing the value', () => {
    const longKey = 'k'.repeat(41);
    for (const [input, key] of [
      [{ ok: 'v', [longKey]: 'v' }, longKey],
      [{ '': 'v' }, ''],
      [{ note: 'x'.repeat(501) }, 'note'],
      [{ count: 3 }, 'count'],
      [{ flag: true }, 'flag'],
      [{ nested: { a: 'b' } }, 'nested'],
      [{ nothing: null }, 'nothing'],
    ] as const) {
      const error = caught(() => validateMetadata(input));
      expect(error.code).toBe('METADATA_INVALID');
      expect(error.details).toEqual({ key });
      expect(error.message).toContain(`"${key}"`);
      expect(error.message).not.toContain('x'.repeat(501));
    }
  });

  test('a non-object is refused without a key', () => {
    for (const input of ['text', 42, ['a'], true]) {
      const error = caught(() => validateMetadata(input));
      expect(error.code).toBe('METADATA_INVALID');
      expect(error.details).toBeUndefined();
    }
  });

  test('a __proto__ key stays a plain key', () => {
    const out = validateMetadata(JSON.parse('{"__proto__":"x","a":"b"}'));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out!)).toEqual(['__proto__', 'a']);
  });

  test('property: the zod schema and validateMetadata agree on any input', () => {
    const value = fc.oneof(fc.string({ maxLength: 510 }), fc.integer(), fc.constant(null));
    const key = fc.string({ maxLength: 45 });
    fc.assert(
      fc.property(fc.oneof(fc.dictionary(key, value, { maxKeys: 55 }), fc.anything()), (input) => {
        let valid = true;
        try {
          validateMetadata(input);
        } catch (error) {
          valid = false;
          expect(isCoreError(error) && error.code).toBe('METADATA_INVALID');
        }
        if (input === undefined || input === null) return;
        expect(webhookMetadataSchema.safeParse(input).success).toBe(valid);
      }),
      { numRuns: 300 },
    );
  });
});

describe('webhook envelopes: the envelope, every event, and the ping', () => {
  const meta = { messageId: 'msg-1', requestId: 'req-1', when: WHEN, data: { ref: 'abc' } };

  test('bulk patient create: meta first, UTC when, data echoed, payload under bulkPatientCreate', () => {
    const message = bulkPatientCreateMessage(meta, { requestId: 'req-1', status: 'completed', result: 'https://x/result.csv' });
    expect(message).toEqual({
      meta: { messageId: 'msg-1', requestId: 'req-1', when: '2024-05-01T12:00:00.000Z', type: 'medical.bulk-patient-create', data: { ref: 'abc' } },
      bulkPatientCreate: { requestId: 'req-1', status: 'completed', result: 'https://x/result.csv' },
    });
    expect(Object.keys(JSON.parse(JSON.stringify(message)) as object)[0]).toBe('meta');
  });

  test('bulk patient create: reason only with failed, result only with completed', () => {
    expect(bulkPatientCreateMessage(meta, { requestId: 'r', status: 'failed', reason: 'not a CSV' }).bulkPatientCreate.reason).toBe('not a CSV');
    expect(caught(() => bulkPatientCreateMessage(meta, { requestId: 'r', status: 'processing', reason: 'x' })).code).toBe('INTERNAL');
    expect(caught(() => bulkPatientCreateMessage(meta, { requestId: 'r', status: 'failed', result: 'u' })).code).toBe('INTERNAL');
  });

  test('meta.data is validated by the builders too, and left out when empty or absent', () => {
    expect(caught(() => bulkPatientCreateMessage({ ...meta, data: { ['k'.repeat(41)]: 'v' } }, { requestId: 'r', status: 'processing' })).code).toBe(
      'METADATA_INVALID',
    );
    expect('data' in bulkPatientCreateMessage({ messageId: 'm', when: WHEN }, { requestId: 'r', status: 'processing' }).meta).toBe(false);
    expect('data' in bulkPatientCreateMessage({ messageId: 'm', when: WHEN, data: {} }, { requestId: 'r', status: 'processing' }).meta).toBe(false);
  });

  test('document download: patients with type, status and documents (size as a string)', () => {
    const message = documentDownloadMessage(meta, [
      { patientId: 'pat-1', externalId: 'ext-1', additionalIds: { athena: ['A1'] }, type: 'document-download', status: 'completed', documents: [toWebhookDocument(document)] },
    ]);
    expect(message.meta.type).toBe('medical.document-download');
    expect(message.patients[0]!.documents[0]).toEqual({
      id: 'doc-1',
      fileName: 'acct/pat-1/doc-1.xml',
      description: 'Continuity of Care Document',
      status: 'current',
      indexed: '2024-04-30T10:00:00.000Z',
      mimeType: 'application/xml',
      size: '12345',
      type: document.type,
    });
  });

  test('document conversion and bulk download urls (size a number, url and organization identifiers)', () => {
    const conversion = documentConversionMessage(meta, [{ patientId: 'pat-1', type: 'document-conversion', status: 'failed' }]);
    expect(conversion.patients).toEqual([{ patientId: 'pat-1', type: 'document-conversion', status: 'failed' }]);
    const bulk = documentBulkDownloadUrlsMessage(meta, [{ patientId: 'pat-1', status: 'completed', documents: [toWebhookBulkDocument(document, 'https://x/d?sig=1')] }]);
    expect(bulk.patients[0]!.documents[0]).toMatchObject({ size: 12345, url: 'https://x/d?sig=1', organizationIdentifiers: document.organizationIdentifiers });
  });

  test('consolidated data: filters and a FHIR collection bundle', () => {
    const bundle = {
      resourceType: 'Bundle' as const,
      type: 'collection',
      total: 1,
      entry: [{ resource: { resourceType: 'DocumentReference', subject: { reference: 'Patient/pat-1' }, content: [{ attachment: { contentType: 'application/json', url: 'https://x/b' } }] } }],
    };
    const message = consolidatedDataMessage(meta, [{ patientId: 'pat-1', status: 'completed', filters: { resources: 'Condition,Observation', dateFrom: '2020-01-01' }, bundle }]);
    expect(message.patients[0]!.bundle).toEqual(bundle);
    expect(caught(() => consolidatedDataMessage(meta, [{ patientId: 'p', status: 'completed', filters: { dateFrom: '2020-13-01' }, bundle }])).code).toBe('INTERNAL');
  });

  test('ping: only messageId, when and type in meta', () => {
    expect(pingMessage({ messageId: 'm', when: WHEN }, 'tok')).toEqual({ ping: 'tok', meta: { messageId: 'm', when: '2024-05-01T12:00:00.000Z', type: 'ping' } });
  });

  test('parseWebhookMessage round-trips every builder through JSON and names what is wrong', () => {
    const messages = [
      pingMessage({ messageId: 'm', when: WHEN }, 'tok'),
      bulkPatientCreateMessage(meta, { requestId: 'r', status: 'processing' }),
      documentConversionMessage(meta, [{ patientId: 'p', type: 'document-conversion', status: 'completed' }]),
    ];
    for (const message of messages) {
      const parsed = parseWebhookMessage(JSON.parse(JSON.stringify(message)));
      expect(parsed).toEqual(message);
      expect(webhookMessageSchema.safeParse(message).success).toBe(true);
      expect(isWebhookMessageOfType(parsed, message.meta.type)).toBe(true);
    }
    expect(caught(() => parseWebhookMessage({ meta: { type: 'medical.nope' } })).message).toContain('medical.nope');
    const bad = caught(() => parseWebhookMessage({ meta: { messageId: 'm', when: 'yesterday', type: 'ping' }, ping: 'x' }));
    expect(bad.code).toBe('VALIDATION_FAILED');
    expect(bad.message).toContain('meta.when');
  });
});

describe('retry schedule', () => {
  const now = new Date('2024-05-01T00:00:00.000Z');

  test('the default: 8 attempts (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), about 28 h, then park', () => {
    expect(DEFAULT_RETRY_DELAYS_MS).toEqual([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    const total = DEFAULT_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0);
    expect(total / 3_600_000).toBeGreaterThan(27);
    expect(total / 3_600_000).toBeLessThan(28);
    expect(nextAttemptAt(8, now, 0.5)).toBeUndefined();
    expect(nextAttemptAt(1, now, 0.5)!.getTime() - now.getTime()).toBe(5_000);
    // Jitter spreads the waits of messages that failed together.
    expect(nextAttemptAt(1, now, 0)!.getTime() - now.getTime()).toBe(4_500);
  });

  test('property: each wait is its step within the jitter, never negative, and Retry-After wins only when longer', () => {
    const schedule = createRetrySchedule();
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.option(fc.integer({ min: 0, max: 3 * 86_400_000 }), { nil: undefined }),
        (attempts, random, retryAfterMs) => {
          const at = schedule.nextAttemptAt(attempts, now, random, retryAfterMs);
          const step = DEFAULT_RETRY_DELAYS_MS[attempts];
          if (step === undefined) {
            expect(at).toBeUndefined();
            return;
          }
          const wait = at!.getTime() - now.getTime();
          const asked = Math.min(retryAfterMs ?? 0, schedule.maxRetryAfterMs);
          if (asked > step * 1.1) expect(wait).toBe(asked);
          else {
            expect(wait).toBeGreaterThanOrEqual(Math.floor(step * 0.9));
            expect(wait).toBeLessThanOrEqual(Math.ceil(Math.max(step * 1.1, asked)));
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  test('jitter follows the injected random; a custom schedule sets the budget', () => {
    const schedule = createRetrySchedule({ delaysMs: [0, 1000, 2000], jitter: 0.5 });
    expect(schedule.maxAttempts).toBe(3);
    expect(schedule.nextAttemptAt(1, now, 0)!.getTime() - now.getTime()).toBe(500);
    expect(schedule.nextAttemptAt(2, now, 0.75)!.getTime() - now.getTime()).toBe(2500);
    expect(schedule.nextAttemptAt(3, now, 0.75)).toBeUndefined();
    expect(() => schedule.nextAttemptAt(1, now, 1)).toThrow(RangeError);
    expect(() => createRetrySchedule({ delaysMs: [] })).toThrow(RangeError);
  });
});

describe('webhook URL validation and the address guard', () => {
  const allow = { allowPrivate: true };
  const deny = { allowPrivate: false };

  test('http(s) only, absolute, normalised', () => {
    expect(validateWebhookUrl('https://hooks.example.com/carebridge?x=1', deny)).toBe('https://hooks.example.com/carebridge?x=1');
    expect(validateWebhookUrl('HTTP://Hooks.Example.COM', deny)).toBe('http://hooks.example.com/');
    for (const bad of ['ftp://example.com/', 'javascript:alert(1)', 'file:///etc/passwd', '/relative', 'not a url', '', 42, undefined, `https://x.com/${'a'.repeat(2100)}`]) {
      expect(caught(() => validateWebhookUrl(bad, allow)).code, String(bad).slice(0, 30)).toBe('WEBHOOK_URL_INVALID');
    }
  });

  test('loopback, private, link-local, unspecified and localhost are refused unless allowed', () => {
    const refused = [
      'http://127.0.0.1:8080/',
      'http://127.9.9.9/',
      'http://10.1.2.3/',
      'http://172.16.0.1/',
      'http://172.31.255.255/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data',
      'http://0.0.0.0/',
      'http://[::1]/',
      'http://[::]/',
      'http://[fc00::1]/',
      'http://[fd12:3456::1]/',
      'http://[fe80::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:10.0.0.1]/',
      'http://localhost/',
      'http://LOCALHOST.:3000/',
      'http://api.localhost/',
      'http://2130706433/', // 127.0.0.1 as one number
      'http://0x7f.1/',
      'http://127.1/',
    ];
    for (const url of refused) {
      expect(caught(() => validateWebhookUrl(url, deny)).code, url).toBe('WEBHOOK_URL_INVALID');
      expect(validateWebhookUrl(url, allow), url).toBeTypeOf('string');
    }
    for (const url of ['http://172.32.0.1/', 'http://11.0.0.1/', 'http://[2001:db8::1]/', 'https://169.253.1.1/', 'http://localhost.example.com/']) {
      expect(validateWebhookUrl(url, deny), url).toBeTypeOf('string');
    }
  });

  test('property: isNonPublicAddress agrees with a Node BlockList of the same ranges, in every IPv6 spelling', () => {
    const blocked = new BlockList();
    for (const [net, prefix] of [
      ['0.0.0.0', 8],
      ['10.0.0.0', 8],
      ['100.64.0.0', 10],
      ['127.0.0.0', 8],
      ['169.254.0.0', 16],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
      ['224.0.0.0', 3],
    ] as const) {
      blocked.addSubnet(net, prefix, 'ipv4');
    }
    const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
    const interesting = fc.constantFrom('10.0.0.1', '127.0.0.1', '172.16.5.4', '172.32.0.1', '192.168.0.1', '169.254.1.1', '100.64.0.1', '8.8.8.8', '0.0.0.0');
    fc.assert(
      fc.property(fc.oneof(v4, interesting), (address) => {
        const expected = blocked.check(address, 'ipv4');
        expect(isNonPublicAddress(address), address).toBe(expected);
        // The same address mapped into IPv6, in the dotted and the hex spelling.
        const [a, b, c, d] = address.split('.').map(Number) as [number, number, number, number];
        const hex = `::ffff:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
        expect(isNonPublicAddress(`::ffff:${address}`), address).toBe(expected);
        expect(isNonPublicAddress(hex), hex).toBe(expected);
        expect(isNonPublicAddress(`[0:0:0:0:0:ffff:${address}]`)).toBe(expected);
      }),
      { numRuns: 500 },
    );
    const v6blocked = new BlockList();
    v6blocked.addSubnet('fc00::', 7, 'ipv6');
    v6blocked.addSubnet('fe80::', 10, 'ipv6');
    v6blocked.addSubnet('fec0::', 10, 'ipv6');
    v6blocked.addSubnet('ff00::', 8, 'ipv6');
    const group = fc.nat(0xffff).map((n) => n.toString(16));
    const v6 = fc.tuple(fc.constantFrom(0x2001, 0xfc00, 0xfd00, 0xfe80, 0xfebf, 0xfec0, 0xff02, 0x2a00, 0xfbff), fc.array(group, { minLength: 7, maxLength: 7 }))
      .map(([first, rest]) => [first.toString(16), ...rest].join(':'));
    fc.assert(
      fc.property(v6, (address) => {
        expect(isIP(address)).toBe(6);
        expect(isNonPublicAddress(address), address).toBe(v6blocked.check(address, 'ipv6'));
        // The "::" shorthand for a zero run must parse to the same verdict.
        const compressed = new URL(`http://[${address}]/`).hostname;
        expect(isNonPublicAddress(compressed), compressed).toBe(v6blocked.check(address, 'ipv6'));
      }),
      { numRuns: 300 },
    );
    expect(isNonPublicAddress('::1')).toBe(true);
    expect(isNonPublicAddress('::')).toBe(true);
    expect(isNonPublicAddress('64:ff9b::10.0.0.1')).toBe(true);
    expect(isNonPublicAddress('64:ff9b::8.8.8.8')).toBe(false);
    expect(isNonPublicAddress('hooks.example.com')).toBeUndefined();
    expect(isNonPublicAddress('1:2:3:4:5:6:7:8:9')).toBeUndefined();
    expect(isNonPublicAddress('1::2::3')).toBeUndefined();
    expect(isNonPublicAddress('256.1.1.1')).toBeUndefined();
  });
});
