import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  bulkPatientCreateMessage,
  consolidatedDataMessage,
  documentBulkDownloadUrlsMessage,
  documentConversionMessage,
  documentDownloadMessage,
  endpointDisabledMessage,
  networkQueryMessage,
  pingMessage,
} from '../core/webhooks/envelope.js';
import {
  CarebridgeWebhookError,
  isWebhookMessageOfType,
  parseWebhook,
  verifyStandardWebhook,
  verifyWebhookSignature,
  WEBHOOK_MESSAGE_TYPES,
  webhookSigningSecret,
  type WebhookMessage,
} from './index.js';

const when = new Date('2026-11-22T09:00:00.000Z');
const meta = (n: number) => ({ messageId: `m${n}`, requestId: `r${n}`, when, data: { source: 'test' } });
const document = { id: 'd1', fileName: 'ccd.xml', description: 'CCD', status: 'current', indexed: when.toISOString(), mimeType: 'application/xml', size: '120', type: { text: 'Summary' } };

/** One message of every type, as the service builds them. */
const messages: WebhookMessage[] = [
  pingMessage({ messageId: 'm0', when }, 'ping-token'),
  documentDownloadMessage(meta(1), [{ patientId: 'p1', externalId: 'e1', type: 'document-download', status: 'completed', documents: [document] }]),
  documentConversionMessage(meta(2), [{ patientId: 'p1', type: 'document-conversion', status: 'failed' }]),
  documentBulkDownloadUrlsMessage(meta(3), [{ patientId: 'p1', status: 'completed', documents: [{ ...document, size: 120, url: 'https://x/d1', organizationIdentifiers: [] }] }]),
  consolidatedDataMessage(meta(4), [{ patientId: 'p1', status: 'completed', filters: { resources: 'Condition' }, bundle: { resourceType: 'Bundle', type: 'collection', total: 0, entry: [] } }]),
  bulkPatientCreateMessage(meta(5), { requestId: 'r5', status: 'failed', reason: 'not a CSV file' }),
  ...(['hie', 'pharmacy', 'lab'] as const).map((type, i) =>
    networkQueryMessage(meta(6 + i), `network-query.${type}`, {
      patientId: 'p1',
      consolidatedDataUrl: 'https://x/consolidated',
      source: { type, status: 'completed', completedAt: when.toISOString() },
    }),
  ),
  endpointDisabledMessage({ messageId: 'm9', when }, {
    endpointId: 'e1',
    url: 'https://hooks.example.com/x',
    description: 'EHR bridge',
    reason: 'failing',
    failingSince: '2026-11-17T09:00:00.000Z',
    disabledAt: when.toISOString(),
    statusDetail: 'Disabled: no attempt succeeded for 5 days',
  }),
];

describe('parseWebhook', () => {
  test('every message type parses from its raw text, its bytes or the parsed object, unchanged', () => {
    expect(messages.map((message) => message.meta.type).sort()).toEqual([...WEBHOOK_MESSAGE_TYPES].sort());
    for (const message of messages) {
      const text = JSON.stringify(message);
      expect(parseWebhook(text)).toEqual(message);
      expect(parseWebhook(new TextEncoder().encode(text))).toEqual(message);
      expect(parseWebhook(JSON.parse(text))).toEqual(message);
    }
  });

  test('the union narrows by meta.type', () => {
    const parsed = parseWebhook(JSON.stringify(messages[5]));
    if (!isWebhookMessageOfType(parsed, 'medical.bulk-patient-create')) throw new Error('expected a bulk message');
    expect(parsed.bulkPatientCreate.reason).toBe('not a CSV file');
  });

  test('an invalid message is a CarebridgeWebhookError naming the type and the field', () => {
    const broken = JSON.parse(JSON.stringify(messages[1])) as { patients: { status: string }[] };
    broken.patients[0]!.status = 'done';
    const error = (() => {
      try {
        parseWebhook(broken);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(CarebridgeWebhookError);
    expect(error).toMatchObject({ code: 'WEBHOOK_INVALID', message: expect.stringMatching(/medical\.document-download.*patients\.0\.status/) });
    expect(() => parseWebhook({ meta: { type: 'medical.unknown' } })).toThrow(/unknown meta\.type/);
    expect(() => parseWebhook({ ...messages[5], bulkPatientCreate: { requestId: 'r', status: 'completed', reason: 'x' } })).toThrow(CarebridgeWebhookError);
    // The counts of created and updated rows come with the completed message only.
    const completed = parseWebhook({ ...messages[5], bulkPatientCreate: { requestId: 'r', status: 'completed', result: 'https://x', created: 2, updated: 1 } });
    expect(isWebhookMessageOfType(completed, 'medical.bulk-patient-create') && completed.bulkPatientCreate).toMatchObject({ created: 2, updated: 1 });
    expect(() => parseWebhook({ ...messages[5], bulkPatientCreate: { requestId: 'r', status: 'processing', created: 2 } })).toThrow(CarebridgeWebhookError);
  });

  test('a body that is not JSON is refused without quoting it', () => {
    const secret = '{"patients":[{"firstName":"Jane Secretname"';
    expect(() => parseWebhook(secret)).toThrow(CarebridgeWebhookError);
    expect(() => parseWebhook(secret)).not.toThrow(/Secretname/);
  });
});

describe('verifyWebhookSignature', () => {
  const sign = (body: string, key: string) => createHmac('sha256', key).update(body).digest('hex');

  test('accepts the hex HMAC-SHA256 of the raw body and nothing else', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.string({ minLength: 1, maxLength: 64 }), fc.string({ minLength: 1, maxLength: 5 }), (body, key, extra) => {
        const signature = sign(body, key);
        expect(verifyWebhookSignature(body, signature, key)).toBe(true);
        expect(verifyWebhookSignature(Buffer.from(body, 'utf8'), signature.toUpperCase(), key)).toBe(true);
        expect(verifyWebhookSignature(body + extra, signature, key)).toBe(false);
        expect(verifyWebhookSignature(body, signature, key + extra)).toBe(false);
        expect(verifyWebhookSignature(body, signature.slice(0, -1), key)).toBe(false);
      }),
      { numRuns: 100 },
    );
  });
});

describe('either form of the key: webhookKey or webhookSigningSecret', () => {
  const standardSign = (id: string, timestamp: number, body: string, keyBytes: Buffer) =>
    `v1,${createHmac('sha256', keyBytes).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
  // The service's own keys: base64url text, never written whsec_.
  const serviceKey = fc.stringMatching(/^[A-Za-z0-9_-]{16,64}$/);

  test('both verifiers accept the key and its signing secret, and refuse another key', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), serviceKey, serviceKey, (body, key, other) => {
        fc.pre(key !== other);
        const signature = createHmac('sha256', key).update(body).digest('hex');
        const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', 'webhook-signature': standardSign('msg_1', 1700000000, body, Buffer.from(key, 'utf8')) };
        const options = { nowSeconds: 1700000000 };
        for (const given of [key, webhookSigningSecret(key)]) {
          expect(verifyWebhookSignature(body, signature, given)).toBe(true);
          expect(verifyStandardWebhook(body, headers, given, options)).toBe(true);
        }
        for (const given of [other, webhookSigningSecret(other)]) {
          expect(verifyWebhookSignature(body, signature, given)).toBe(false);
          expect(verifyStandardWebhook(body, headers, given, options)).toBe(false);
        }
      }),
      { numRuns: 100 },
    );
  });

  test('a key written whsec_ keeps its meaning: the Metriport header with its text, the Standard headers with its decoded bytes', () => {
    const key = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"meta":{"type":"ping"}}';
    const signature = createHmac('sha256', key).update(body).digest('hex');
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', 'webhook-signature': standardSign('msg_1', 1700000000, body, Buffer.from(key.slice(6), 'base64')) };
    expect(webhookSigningSecret(key)).toBe(key);
    expect(verifyWebhookSignature(body, signature, key)).toBe(true);
    expect(verifyStandardWebhook(body, headers, key, { nowSeconds: 1700000000 })).toBe(true);
    expect(verifyStandardWebhook(body, { ...headers, 'webhook-signature': standardSign('msg_1', 1700000000, body, Buffer.from(key, 'utf8')) }, key, { nowSeconds: 1700000000 })).toBe(false);
  });
});
