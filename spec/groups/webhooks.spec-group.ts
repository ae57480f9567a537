import { expect } from 'vitest';
import { verifyStandardWebhook, verifyWebhookSignature } from '../../contract/signature.js';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, csvOf, personRow } from '../support/api.js';
import { startReceiver } from '../support/receiver.js';

export function defineWebhooksGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('webhook settings and delivery', () => {
    test('setting a URL pings it; bulk messages arrive signed, in order, with stable ids', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          const saved = await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/hooks` } });
          expect(saved.status, saved.text).toBe(200);
          expect(saved.body).toMatchObject({ id: api.accountId, webhookUrl: `${receiver.url}/hooks`, webhookEnabled: true });
          const key: string = saved.body.webhookKey;
          expect(key.length).toBeGreaterThanOrEqual(32);
          expect(receiver.requests).toHaveLength(1);
          expect(JSON.parse(receiver.requests[0]!.body).meta.type).toBe('ping');
          expect((await api.call('GET', '/settings')).body.webhookUrl).toBe(`${receiver.url}/hooks`);

          await api.importCsv(csvOf([personRow(1)]));
          const bulk = receiver.requests.slice(1).filter((r) => JSON.parse(r.body).meta.type === 'medical.bulk-patient-create');
          expect(bulk.map((r) => JSON.parse(r.body).bulkPatientCreate.status)).toEqual(['processing', 'completed']);
          for (const request of bulk) {
            expect(request.path).toBe('/hooks');
            expect(verifyWebhookSignature(request.body, String(request.headers['x-metriport-signature']), key)).toBe(true);
            expect(verifyStandardWebhook(request.body, request.headers, key, { nowSeconds: Math.floor(host.clock.now().getTime() / 1000) })).toBe(true);
            expect(request.headers['webhook-id']).toBe(JSON.parse(request.body).meta.messageId);
          }
          const status = await api.call('GET', '/settings/webhook');
          expect(status.body).toMatchObject({ webhookEnabled: true, processing: 0, failed: 0, messages: { pending: 0, parked: 0 } });
          expect(status.body.messages.delivered).toBeGreaterThanOrEqual(bulk.length);
        });
      } finally {
        await receiver.close();
      }
    });

    test('a receiver that fails keeps the message pending with the same messageId until it answers', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          await api.call('POST', '/settings', { body: { webhookUrl: receiver.url } });
          receiver.setDefault({ kind: 'status', status: 500 });
          await api.importCsv(csvOf([personRow(1)]));
          const failing = receiver.requests.slice(1);
          expect(failing.length).toBeGreaterThanOrEqual(1);
          const pending = (await api.call('GET', '/settings/webhook')).body.processing;
          // Two bulk messages, plus the document query's two when the sandbox network had documents for the patient.
          expect(pending).toBeGreaterThanOrEqual(2);

          receiver.setDefault({ kind: 'ok' });
          host.clock.advance(24 * 3_600_000);
          await host.settle();
          const ids = receiver.requests.slice(1).map((r) => JSON.parse(r.body).meta.messageId);
          const delivered = receiver.requests.filter((r) => r.answeredStatus === 200).slice(1);
          // Every message that was tried is delivered in the end, once, under the id it first had.
          expect(new Set(delivered.map((r) => JSON.parse(r.body).meta.messageId)).size).toBe(pending);
          expect(delivered).toHaveLength(pending);
          expect(new Set(ids).size).toBe(pending);
          expect((await api.call('GET', '/settings/webhook')).body).toMatchObject({ processing: 0, failed: 0 });
        });
      } finally {
        await receiver.close();
      }
    });

    test('messages whose every attempt failed are listed, oldest first, with their last error, until retried', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          await api.call('POST', '/settings', { body: { webhookUrl: receiver.url } });
          expect((await api.call('GET', '/settings/webhook/parked')).body).toEqual({ messages: [] });
          receiver.setDefault({ kind: 'status', status: 500 });
          await api.importCsv(csvOf([personRow(1)]));
          // Past the whole retry schedule (about 28 hours).
          for (let hour = 0; hour < 40; hour++) {
            host.clock.advance(3_600_000);
            await host.settle();
          }
          const parked = await api.call('GET', '/settings/webhook/parked');
          expect(parked.status, parked.text).toBe(200);
          const messages = parked.body.messages as { messageId: string; type: string; createdAt: string; attempts: number; lastError: string }[];
          const status = (await api.call('GET', '/settings/webhook')).body;
          expect(messages.length).toBe(status.failed);
          expect(status.messages).toMatchObject({ delivered: 0, parked: messages.length });
          expect(messages.length).toBeGreaterThanOrEqual(1);
          expect(messages[0]!.type).toBe('medical.bulk-patient-create');
          for (const message of messages) expect(message).toMatchObject({ attempts: expect.any(Number), lastError: 'the receiver answered HTTP 500' });
          expect(messages.map((m) => m.createdAt)).toEqual([...messages.map((m) => m.createdAt)].sort());
          const one = await api.call('GET', '/settings/webhook/parked', { query: { limit: '1' } });
          expect(one.body.messages).toEqual(messages.slice(0, 1));
          expect((await api.call('GET', '/settings/webhook/parked', { query: { limit: '0' } })).status).toBe(400);

          receiver.setDefault({ kind: 'ok' });
          expect((await api.call('POST', '/settings/webhook/retry')).status).toBe(200);
          await host.settle();
          expect((await api.call('GET', '/settings/webhook/parked')).body).toEqual({ messages: [] });
        });
      } finally {
        await receiver.close();
      }
    });

    test('a URL that does not answer the ping is saved but not enabled; bad URLs are 400', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          receiver.setDefault({ kind: 'status', status: 404 });
          const saved = await api.call('POST', '/settings', { body: { webhookUrl: receiver.url } });
          expect(saved.status).toBe(200);
          expect(saved.body.webhookEnabled).toBe(false);
          expect(saved.body.webhookStatusDetail).toMatch(/ping/i);
          for (const webhookUrl of ['ftp://example.com/x', 'not a url']) {
            const bad = await api.call('POST', '/settings', { body: { webhookUrl } });
            expect(bad.status).toBe(400);
            expect(bad.body.code).toBe('WEBHOOK_URL_INVALID');
          }
          expect((await api.call('POST', '/settings', { body: {} })).status).toBe(400);
          const retried = await api.call('POST', '/settings/webhook/retry');
          expect(retried.status).toBe(200);
        });
      } finally {
        await receiver.close();
      }
    });
  });
}
