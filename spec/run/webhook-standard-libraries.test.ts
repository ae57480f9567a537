import { MetriportMedicalApi } from '@metriport/api-sdk';
import { Webhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { CarebridgeClient, verifyStandardWebhook, verifyWebhookSignature, WEBHOOK_SIGNATURE_HEADER } from '../../client/index.js';
import { inProcessFetch, MemoryHost } from '../../hosts/memory/index.js';
import { startReceiver, type Receiver, type RecordedRequest } from '../support/receiver.js';

/*
 * Real deliveries (the memory host's HTTP sender to a receiver on 127.0.0.1), checked by stock verifiers
 * with the settings exactly as the API hands them out: a receiver copies `webhookSigningSecret` into
 * `new Webhook(secret)` and `webhookKey` into the Metriport SDK, and wraps nothing by hand. The host runs
 * on the system clock because the stock verifiers compare the timestamp with theirs; sequential ids make
 * the sandbox network's documents, and so the document query messages, the same on every run.
 */

const CSV = [
  'externalId,firstName,lastName,dob,gender,addressLine1-1,city-1,state-1,zip-1',
  'std-1,Rowan,Stockfield,1980-01-01,M,1 Oak St,Springfield,IL,62701',
  'std-2,Avery,Stockfield,1981-02-02,F,2 Oak St,Springfield,IL,62701',
  'std-3,Jordan,Stockfield,1982-03-03,M,3 Oak St,Springfield,IL,62701',
].join('\n');

let host: MemoryHost;
let receiver: Receiver;

beforeAll(async () => {
  [host, receiver] = await Promise.all([MemoryHost.create({ webhookAllowPrivate: true, ids: new SequentialIds() }), startReceiver()]);
  receiver.setDefault({ kind: 'ok', pong: true });
});
afterAll(async () => {
  await Promise.all([host?.close(), receiver?.close()]);
});

/** The three Standard Webhooks headers as the stock libraries take them (plain strings). */
function standardHeaders(request: RecordedRequest): Record<string, string> {
  return Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(request.headers[name])]));
}

describe('webhook deliveries verify with stock libraries, given the settings as handed out', () => {
  test('every delivery of an import (ping, bulk, document queries) verifies with standardwebhooks, svix and the Metriport SDK', async () => {
    const { apiKey } = await host.createAccount('Stock verifiers');
    const client = new CarebridgeClient({ apiKey, baseUrl: host.deps.config.publicUrl, fetch: inProcessFetch(host.handler) });
    const path = '/stock-verifiers';
    await client.updateSettings({ webhookUrl: `${receiver.url}${path}` });
    const facility = await client.createFacility({ name: 'Main Clinic', npi: '1234567893', address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' } });
    await client.createPatientsFromCsv(CSV, { facilityId: facility.id });
    await host.settle();

    const settings = await client.getSettings();
    expect(settings.webhookSigningSecret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    const received = receiver.requests.filter((request) => request.path === path);
    const types = received.map((request) => (JSON.parse(request.body) as { meta: { type: string } }).meta.type);
    expect(types).toEqual(expect.arrayContaining(['ping', 'medical.bulk-patient-create', 'medical.document-download', 'medical.document-conversion']));

    const standard = new Webhook(settings.webhookSigningSecret);
    const svix = new SvixWebhook(settings.webhookSigningSecret);
    const rejected = { standardwebhooks: 0, svix: 0, metriport: 0, clientStandard: 0, clientStandardWithKey: 0, clientMetriport: 0 };
    for (const request of received) {
      const headers = standardHeaders(request);
      const signature = String(request.headers[WEBHOOK_SIGNATURE_HEADER]);
      if (!attempt(() => standard.verify(request.body, headers))) rejected.standardwebhooks += 1;
      if (!attempt(() => svix.verify(request.body, headers))) rejected.svix += 1;
      if (!MetriportMedicalApi.verifyWebhookSignature(settings.webhookKey, request.body, signature)) rejected.metriport += 1;
      // The client's helpers take either form of the key.
      if (!verifyStandardWebhook(request.body, request.headers, settings.webhookSigningSecret)) rejected.clientStandard += 1;
      if (!verifyStandardWebhook(request.body, request.headers, settings.webhookKey)) rejected.clientStandardWithKey += 1;
      if (!verifyWebhookSignature(request.body, signature, settings.webhookKey)) rejected.clientMetriport += 1;
    }
    expect(rejected).toEqual({ standardwebhooks: 0, svix: 0, metriport: 0, clientStandard: 0, clientStandardWithKey: 0, clientMetriport: 0 });

    // The verifiers do check: one changed byte is refused, and so is `webhookKey` given where the secret belongs.
    const first = received[0]!;
    expect(attempt(() => standard.verify(`${first.body} `, standardHeaders(first)))).toBe(false);
    expect(attempt(() => new Webhook(settings.webhookKey).verify(first.body, standardHeaders(first)))).toBe(false);
  });
});

describe('an endpoint secret rotation, verified by standardwebhooks on a stepped clock', () => {
  test('during the grace period the old and the new secret both verify; after it the old one is refused', async () => {
    // The stock verifier compares webhook-timestamp with Date.now(): only Date follows the stepped clock, no timer is faked.
    const clock = new SteppedClock(new Date().toISOString());
    vi.useFakeTimers({ toFake: ['Date'] });
    const rotating = await MemoryHost.create({ webhookAllowPrivate: true, ids: new SequentialIds(), clock });
    try {
      const { apiKey } = await rotating.createAccount('Rotation');
      const client = new CarebridgeClient({ apiKey, baseUrl: rotating.deps.config.publicUrl, fetch: inProcessFetch(rotating.handler) });
      const path = '/rotation';
      const facility = await client.createFacility({ name: 'Main Clinic', npi: '1234567893', address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' } });
      const endpoint = await client.createWebhookEndpoint({ url: `${receiver.url}${path}`, eventTypes: ['medical.bulk-patient-create'] });
      const rotated = await client.rotateWebhookEndpointSecret(endpoint.id, { graceSeconds: 2 * 3600 });
      const [oldKey, newKey] = [new Webhook(endpoint.signingSecret), new Webhook(rotated.signingSecret)];
      const sent = () => receiver.requests.filter((request) => request.path === path && JSON.parse(request.body).meta.type !== 'ping');

      await client.createPatientsFromCsv(CSV, { facilityId: facility.id });
      await rotating.settle();
      vi.setSystemTime(clock.now());
      const during = sent();
      expect(during).toHaveLength(2);
      for (const request of during) {
        expect(attempt(() => newKey.verify(request.body, standardHeaders(request)))).toBe(true);
        expect(attempt(() => oldKey.verify(request.body, standardHeaders(request)))).toBe(true);
      }

      clock.advance(2 * 3_600_000);
      await client.createPatientsFromCsv(CSV.replaceAll('Stockfield', 'Rotated'), { facilityId: facility.id });
      await rotating.settle();
      vi.setSystemTime(clock.now());
      const after = sent().slice(2);
      expect(after).toHaveLength(2);
      for (const request of after) {
        expect(attempt(() => newKey.verify(request.body, standardHeaders(request)))).toBe(true);
        expect(attempt(() => oldKey.verify(request.body, standardHeaders(request)))).toBe(false);
      }
    } finally {
      vi.useRealTimers();
      await rotating.close();
    }
  });
});

function attempt(verify: () => unknown): boolean {
  try {
    verify();
    return true;
  } catch {
    return false;
  }
}
