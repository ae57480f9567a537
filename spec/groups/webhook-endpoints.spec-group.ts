import { expect } from 'vitest';
import { verifyStandardWebhook, verifyWebhookSignature } from '../../contract/signature.js';
import { parseWebhookMessage, WEBHOOK_MESSAGE_TYPES } from '../../contract/webhooks.js';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, csvOf, personRow } from '../support/api.js';
import type { HostDriver } from '../support/driver.js';
import { startReceiver, type RecordedRequest } from '../support/receiver.js';

const typeOf = (request: RecordedRequest): string => JSON.parse(request.body).meta.type;
const idOf = (request: RecordedRequest): string => JSON.parse(request.body).meta.messageId;
const nowSeconds = (host: HostDriver) => Math.floor(host.clock.now().getTime() / 1000);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Every type an endpoint can receive (the ping is never stored, so never filtered nor sent as a test). */
const RECEIVABLE_TYPES = WEBHOOK_MESSAGE_TYPES.filter((type) => type !== 'ping');

export function defineWebhookEndpointsGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('webhook endpoints besides webhookUrl', () => {
    test('create pings the URL and answers the endpoint with its own secret; list, get, patch and delete it; unknown ids and filters are refused', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          receiver.setDefault({ kind: 'ok', pong: true });
          const created = await api.call('POST', '/settings/webhook/endpoints', {
            body: { url: `${receiver.url}/a`, description: 'EHR bridge', eventTypes: ['network-query.*', 'medical.document-conversion'] },
          });
          expect(created.status, created.text).toBe(201);
          expect(created.body).toMatchObject({
            url: `${receiver.url}/a`,
            description: 'EHR bridge',
            enabled: true,
            eventTypes: ['network-query.*', 'medical.document-conversion'],
            statusDetail: expect.stringMatching(/^Ping answered/),
          });
          expect(created.body.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
          expect(receiver.requests.map(typeOf)).toEqual(['ping']);
          expect(verifyStandardWebhook(receiver.requests[0]!.body, receiver.requests[0]!.headers, created.body.signingSecret, { nowSeconds: nowSeconds(host) })).toBe(true);
          const settings = (await api.call('GET', '/settings')).body;
          expect(created.body.signingSecret).not.toBe(settings.webhookSigningSecret);
          const endpointId: string = created.body.id;

          // Not answering the ping: saved, off, with the reason.
          receiver.setDefault({ kind: 'status', status: 500 });
          const silent = await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/b` } });
          expect(silent.status).toBe(201);
          expect(silent.body).toMatchObject({ enabled: false, eventTypes: [], description: '', statusDetail: expect.stringMatching(/^Ping failed/) });

          const listed = await api.call('GET', '/settings/webhook/endpoints');
          expect(listed.status).toBe(200);
          expect(listed.body.endpoints.map((e: { id: string }) => e.id)).toEqual([endpointId, silent.body.id]);
          expect((await api.call('GET', `/settings/webhook/endpoints/${endpointId}`)).body).toEqual(created.body);

          const patched = await api.call('PATCH', `/settings/webhook/endpoints/${endpointId}`, { body: { description: 'renamed', eventTypes: ['medical.*'] } });
          expect(patched.status, patched.text).toBe(200);
          expect(patched.body).toMatchObject({ id: endpointId, description: 'renamed', eventTypes: ['medical.*'], enabled: true, signingSecret: created.body.signingSecret });
          const off = await api.call('PATCH', `/settings/webhook/endpoints/${endpointId}`, { body: { enabled: false } });
          expect(off.body.enabled).toBe(false);

          for (const eventTypes of [['medical.document-conversoin'], ['nothing.*'], ['ping']]) {
            const bad = await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/c`, eventTypes } });
            expect(bad.status, bad.text).toBe(400);
            expect(bad.body.code).toBe('WEBHOOK_EVENT_TYPE_UNKNOWN');
          }
          const badUrl = await api.call('POST', '/settings/webhook/endpoints', { body: { url: 'ftp://example.com/x' } });
          expect(badUrl.body.code).toBe('WEBHOOK_URL_INVALID');
          expect((await api.call('POST', '/settings/webhook/endpoints', { body: {} })).status).toBe(400);

          // Another account sees none of it.
          const other = await AccountApi.create(host, 'Other Clinic');
          expect((await other.call('GET', '/settings/webhook/endpoints')).body).toEqual({ endpoints: [] });
          for (const method of ['GET', 'DELETE'] as const) {
            const foreign = await other.call(method, `/settings/webhook/endpoints/${endpointId}`);
            expect(foreign.status).toBe(404);
            expect(foreign.body.code).toBe('WEBHOOK_ENDPOINT_NOT_FOUND');
          }
          expect((await other.call('PATCH', `/settings/webhook/endpoints/${endpointId}`, { body: { enabled: true } })).status).toBe(404);

          expect((await api.call('DELETE', `/settings/webhook/endpoints/${endpointId}`)).status).toBe(204);
          expect((await api.call('GET', `/settings/webhook/endpoints/${endpointId}`)).status).toBe(404);
          expect((await api.call('DELETE', `/settings/webhook/endpoints/${endpointId}`)).status).toBe(404);
          expect((await api.call('GET', '/settings/webhook/endpoints')).body.endpoints.map((e: { id: string }) => e.id)).toEqual([silent.body.id]);
        });
      } finally {
        await receiver.close();
      }
    });

    test('each endpoint receives the messages its filter takes, under the same message id, signed with its own secret; webhookUrl still gets every one', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          const settings = (await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } })).body;
          const bulkOnly = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/bulk`, eventTypes: ['medical.bulk-patient-create'] } })).body;
          const everything = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/all` } })).body;
          await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/network`, eventTypes: ['network-query.*'] } });
          const disabled = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/off`, enabled: false } })).body;
          expect(disabled.enabled).toBe(false);

          await api.importCsv(csvOf([personRow(1)]));
          await host.settle();
          const messages = receiver.requests.filter((r) => typeOf(r) !== 'ping');
          const at = (path: string) => messages.filter((r) => r.path === path);
          const toDefault = at('/default');
          expect(toDefault.filter((r) => typeOf(r) === 'medical.bulk-patient-create')).toHaveLength(2);
          // The default endpoint and the unfiltered one get the same messages, under the same ids.
          expect(at('/all').map(idOf).sort()).toEqual(toDefault.map(idOf).sort());
          expect(at('/bulk').map(typeOf)).toEqual(['medical.bulk-patient-create', 'medical.bulk-patient-create']);
          expect(at('/bulk').map((r) => JSON.parse(r.body).bulkPatientCreate.status)).toEqual(['processing', 'completed']);
          expect(at('/bulk').map(idOf)).toEqual(toDefault.filter((r) => typeOf(r) === 'medical.bulk-patient-create').map(idOf));
          expect(at('/network')).toEqual([]);
          expect(at('/off')).toEqual([]);
          const secrets: Record<string, string> = { '/default': settings.webhookSigningSecret, '/bulk': bulkOnly.signingSecret, '/all': everything.signingSecret };
          for (const request of messages) {
            const secret = secrets[request.path]!;
            expect(request.headers['webhook-id']).toBe(idOf(request));
            expect(verifyStandardWebhook(request.body, request.headers, secret, { nowSeconds: nowSeconds(host) }), request.path).toBe(true);
            expect(verifyWebhookSignature(request.body, String(request.headers['x-metriport-signature']), secret), request.path).toBe(true);
            for (const [path, otherSecret] of Object.entries(secrets)) {
              if (path !== request.path) expect(verifyStandardWebhook(request.body, request.headers, otherSecret, { nowSeconds: nowSeconds(host) })).toBe(false);
            }
          }
        });
      } finally {
        await receiver.close();
      }
    });

    test('an endpoint that fails delays no other: the others receive everything at once while it retries on its own, and gets it all once it answers', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } });
          const failingEndpoint = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/failing` } })).body;
          await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/healthy` } });
          let failing = true;
          receiver.setDefault(({ path }) => (path === '/failing' && failing ? { kind: 'status', status: 503 } : { kind: 'ok' }));

          await api.importCsv(csvOf([personRow(1)]));
          await host.settle();
          const answered = (path: string) => receiver.requests.filter((r) => r.path === path && r.answeredStatus === 200 && typeOf(r) !== 'ping');
          const sent = answered('/default').map(idOf);
          expect(sent.length).toBeGreaterThanOrEqual(2);
          expect(answered('/healthy').map(idOf).sort()).toEqual([...sent].sort());
          expect(answered('/failing')).toEqual([]);
          // Each endpoint counts its own: the failing one's wait on its resource, the default one has none left.
          expect((await api.call('GET', `/settings/webhook/endpoints/${failingEndpoint.id}`)).body.messages.pending).toBeGreaterThanOrEqual(1);
          expect((await api.call('GET', '/settings/webhook')).body.messages.pending).toBe(0);

          failing = false;
          host.clock.advance(24 * 3_600_000);
          await host.settle();
          // Each message reached the failing endpoint once, in the end; bulk messages in their order.
          const late = answered('/failing');
          expect(late.map(idOf).sort()).toEqual([...sent].sort());
          expect(late.filter((r) => typeOf(r) === 'medical.bulk-patient-create').map((r) => JSON.parse(r.body).bulkPatientCreate.status)).toEqual(['processing', 'completed']);
          expect(answered('/healthy')).toHaveLength(sent.length);
          expect((await api.call('GET', '/settings/webhook')).body.messages).toMatchObject({ pending: 0, parked: 0 });
        });
      } finally {
        await receiver.close();
      }
    });

    test('an endpoint turned off keeps its messages until PATCH enabled:true sends them, in order; 410 turns off that endpoint only; deleting one drops its messages', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } });
          const bulk = { eventTypes: ['medical.bulk-patient-create'] };
          const paused = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/paused`, ...bulk } })).body;
          const gone = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/gone`, ...bulk } })).body;
          const deleted = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/deleted`, ...bulk } })).body;
          const answers: Record<string, number> = { '/paused': 500, '/gone': 410, '/deleted': 500 };
          receiver.setDefault(({ path }) => (answers[path] ? { kind: 'status', status: answers[path]! } : { kind: 'ok' }));
          await api.importCsv(csvOf([personRow(1)]));
          await host.settle();

          const goneNow = (await api.call('GET', `/settings/webhook/endpoints/${gone.id}`)).body;
          expect(goneNow).toMatchObject({ enabled: false, statusDetail: expect.stringMatching(/^Disabled: the receiver answered 410/) });
          expect((await api.call('GET', `/settings/webhook/endpoints/${paused.id}`)).body.enabled).toBe(true);
          expect((await api.call('GET', '/settings')).body.webhookEnabled).toBe(true);

          expect((await api.call('PATCH', `/settings/webhook/endpoints/${paused.id}`, { body: { enabled: false } })).body.enabled).toBe(false);
          expect((await api.call('DELETE', `/settings/webhook/endpoints/${deleted.id}`)).status).toBe(204);
          answers['/paused'] = 0;
          const before = receiver.requests.length;
          host.clock.advance(24 * 3_600_000);
          await host.settle();
          expect(receiver.requests.slice(before).filter((r) => r.path !== '/default')).toEqual([]);

          const enabled = await api.call('PATCH', `/settings/webhook/endpoints/${paused.id}`, { body: { enabled: true } });
          expect(enabled.body).toMatchObject({ enabled: true, statusDetail: expect.stringMatching(/^Enabled/) });
          await host.settle();
          const resumed = receiver.requests.slice(before).filter((r) => r.path === '/paused');
          expect(resumed.map((r) => JSON.parse(r.body).bulkPatientCreate.status)).toEqual(['processing', 'completed']);
          expect(resumed.every((r) => r.answeredStatus === 200)).toBe(true);
          // Parked: the message the 410 answered, on the endpoint it answered for; nothing of the deleted endpoint is left.
          expect((await api.call('GET', `/settings/webhook/endpoints/${gone.id}`)).body.messages.parked).toBe(1);
          expect((await api.call('GET', '/settings/webhook')).body.messages.parked).toBe(0);
        });
      } finally {
        await receiver.close();
      }
    });

    test('the delivery log has every attempt per endpoint, newest first, filtered by endpoint, type, patient, status and time, paged by cursor; endpoints count their messages', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } });
          const flaky = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/flaky` } })).body;
          expect(flaky.messages).toEqual({ pending: 0, failing: 0, delivered: 0, parked: 0 });
          let failing = true;
          receiver.setDefault(({ path }) => (path === '/flaky' && failing ? { kind: 'status', status: 503 } : { kind: 'ok' }));
          await api.importCsv(csvOf([personRow(1)]));
          await host.settle();
          const failedAt = host.clock.now().toISOString();

          const log = async (query: Record<string, string>) => {
            const page = await api.call('GET', '/settings/webhook/attempts', { query });
            expect(page.status, page.text).toBe(200);
            return page.body as { attempts: { id: string; messageId: string; endpointId: string; type: string; patientId: string | null; attemptedAt: string; status: string; statusCode: number | null; latencyMs: number; error: string | null }[]; nextCursor: string | null };
          };
          const failed = (await log({ endpointId: flaky.id, status: 'failed' })).attempts;
          expect(failed.length).toBeGreaterThanOrEqual(1);
          for (const attempt of failed) {
            expect(attempt).toMatchObject({ endpointId: flaky.id, status: 'failed', statusCode: 503, error: 'the receiver answered HTTP 503' });
            expect(attempt.latencyMs).toBeGreaterThanOrEqual(0);
          }
          const counting = (await api.call('GET', `/settings/webhook/endpoints/${flaky.id}`)).body.messages;
          expect(counting.failing).toBe(failed.length);
          expect(counting.pending).toBeGreaterThanOrEqual(counting.failing);
          const toDefault = (await log({ endpointId: 'default' })).attempts;
          expect(toDefault.every((a) => a.endpointId === 'default' && a.status === 'delivered' && a.statusCode === 200 && a.error === null)).toBe(true);

          failing = false;
          host.clock.advance(24 * 3_600_000);
          await host.settle();
          const all = (await log({ limit: '100' })).attempts;
          const delivered = all.filter((a) => a.endpointId === flaky.id && a.status === 'delivered');
          expect(new Set(delivered.map((a) => a.messageId))).toEqual(new Set(toDefault.map((a) => a.messageId)));
          expect((await api.call('GET', `/settings/webhook/endpoints/${flaky.id}`)).body.messages).toEqual({ pending: 0, failing: 0, delivered: delivered.length, parked: 0 });
          // Newest first; one page at a time gives the same attempts.
          expect(all.map((a) => a.attemptedAt)).toEqual([...all.map((a) => a.attemptedAt)].sort().reverse());
          const paged: string[] = [];
          let cursor: string | null = null;
          do {
            const page: Awaited<ReturnType<typeof log>> = await log({ limit: '2', ...(cursor ? { cursor } : {}) });
            expect(page.attempts.length).toBeLessThanOrEqual(2);
            paged.push(...page.attempts.map((a) => a.id));
            cursor = page.nextCursor;
          } while (cursor);
          expect(paged).toEqual(all.map((a) => a.id));

          expect((await log({ since: failedAt })).attempts.map((a) => a.id)).toEqual(all.filter((a) => a.attemptedAt >= failedAt).map((a) => a.id));
          expect((await log({ until: failedAt })).attempts.map((a) => a.id)).toEqual(all.filter((a) => a.attemptedAt < failedAt).map((a) => a.id));
          expect((await log({ type: 'medical.bulk-patient-create' })).attempts.map((a) => a.id)).toEqual(all.filter((a) => a.type === 'medical.bulk-patient-create').map((a) => a.id));
          expect(all.filter((a) => a.type === 'medical.bulk-patient-create').every((a) => a.patientId === null)).toBe(true);
          const aboutPatient = all.find((a) => a.patientId !== null);
          if (aboutPatient) {
            expect((await log({ patientId: aboutPatient.patientId! })).attempts.map((a) => a.id)).toEqual(all.filter((a) => a.patientId === aboutPatient.patientId).map((a) => a.id));
          }
          const unknownPatient = await api.call('GET', '/settings/webhook/attempts', { query: { patientId: 'no-such-patient' } });
          expect(unknownPatient.status).toBe(404);
          expect(unknownPatient.body.code).toBe('PATIENT_NOT_FOUND');

          for (const query of [{ limit: '101' }, { cursor: 'not-a-cursor' }, { status: 'parked' }, { since: 'yesterday' }, { type: 'ping' }]) {
            expect((await api.call('GET', '/settings/webhook/attempts', { query })).status, JSON.stringify(query)).toBe(400);
          }
          const other = await AccountApi.create(host, 'Other Clinic');
          expect((await other.call('GET', '/settings/webhook/attempts')).body).toEqual({ attempts: [], nextCursor: null });
        });
      } finally {
        await receiver.close();
      }
    });

    test('replay sends again to one endpoint under the same message ids, in stream order: one message, every parked one, a time window; others get nothing', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } });
          const bulk = { eventTypes: ['medical.bulk-patient-create'] };
          const target = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/target`, ...bulk } })).body;
          await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/bystander`, ...bulk } });
          const start = host.clock.now().toISOString();
          await api.importCsv(csvOf([personRow(1)]));
          await host.settle();
          const firstRound = receiver.requests.filter((r) => r.path === '/target' && typeOf(r) !== 'ping');
          expect(firstRound.map((r) => JSON.parse(r.body).bulkPatientCreate.status)).toEqual(['processing', 'completed']);
          const [processingId, completedId] = firstRound.map(idOf);
          const replay = (endpoint: string, body: unknown) => api.call('POST', `/settings/webhook/endpoints/${endpoint}/replay`, { body });
          const sentSince = (count: number) => receiver.requests.slice(count);

          // One message, to one endpoint.
          let before = receiver.requests.length;
          expect((await replay(target.id, { messageId: completedId })).body).toEqual({ replayed: 1, more: false });
          await host.settle();
          expect(sentSince(before).map((r) => [r.path, idOf(r)])).toEqual([['/target', completedId]]);
          expect(verifyStandardWebhook(sentSince(before)[0]!.body, sentSince(before)[0]!.headers, target.signingSecret, { nowSeconds: nowSeconds(host) })).toBe(true);

          // A time window, to the default endpoint: the stream comes again in its order.
          host.clock.advance(1_000);
          before = receiver.requests.length;
          const window = { since: start, until: host.clock.now().toISOString() };
          const replayed = (await replay('default', window)).body;
          expect(replayed.replayed).toBeGreaterThanOrEqual(2);
          await host.settle();
          const again = sentSince(before);
          expect(again.every((r) => r.path === '/default')).toBe(true);
          expect(again.filter((r) => typeOf(r) === 'medical.bulk-patient-create').map(idOf)).toEqual([processingId, completedId]);

          // Every parked message: the target fails past its whole schedule, then answers.
          const second = await api.createFacility('Second Clinic');
          receiver.setDefault(({ path }) => (path === '/target' ? { kind: 'status', status: 500 } : { kind: 'ok' }));
          await api.importCsv(csvOf([personRow(2)]), { facilityId: second.id });
          // Past the retry schedule (about 28 hours, +10% jitter) twice: the stream's second message starts when the first parks.
          for (let hour = 0; hour < 80; hour++) {
            host.clock.advance(3_600_000);
            await host.settle();
          }
          const parked = (await api.call('GET', `/settings/webhook/endpoints/${target.id}`)).body.messages.parked;
          expect(parked).toBe(2);
          receiver.setDefault({ kind: 'ok' });
          before = receiver.requests.length;
          expect((await replay(target.id, { parked: true })).body).toEqual({ replayed: 2, more: false });
          await host.settle();
          const unparked = sentSince(before);
          expect(unparked.every((r) => r.path === '/target' && r.answeredStatus === 200)).toBe(true);
          expect(unparked.map((r) => JSON.parse(r.body).bulkPatientCreate.status)).toEqual(['processing', 'completed']);
          expect((await api.call('GET', `/settings/webhook/endpoints/${target.id}`)).body.messages).toMatchObject({ parked: 0, pending: 0 });

          // A message that never went to an endpoint (its filter did not take it) can be replayed to it.
          const everyType = (await api.call('GET', '/settings/webhook/attempts', { query: { endpointId: 'default', limit: '100' } })).body.attempts as { messageId: string; type: string }[];
          const notBulk = everyType.find((a) => a.type !== 'medical.bulk-patient-create');
          if (notBulk) {
            before = receiver.requests.length;
            expect((await replay(target.id, { messageId: notBulk.messageId })).body.replayed).toBe(1);
            await host.settle();
            expect(sentSince(before).map((r) => [r.path, idOf(r)])).toEqual([['/target', notBulk.messageId]]);
          }

          const missing = await replay(target.id, { messageId: 'no-such-message' });
          expect(missing.status).toBe(404);
          expect(missing.body.code).toBe('WEBHOOK_MESSAGE_NOT_FOUND');
          expect((await replay('no-such-endpoint', { parked: true })).body.code).toBe('WEBHOOK_ENDPOINT_NOT_FOUND');
          for (const body of [{}, { parked: true, messageId: processingId }, { since: start }, { parked: false }]) {
            expect((await replay(target.id, body)).status, JSON.stringify(body)).toBe(400);
          }
          const other = await AccountApi.create(host, 'Other Clinic');
          expect((await other.call('POST', `/settings/webhook/endpoints/default/replay`, { body: { messageId: processingId } })).status).toBe(404);
        });
      } finally {
        await receiver.close();
      }
    });

    test('rotating an endpoint secret signs with the new and the old secret during the grace period, then with the new one only', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          const endpoint = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/rotating`, eventTypes: ['medical.bulk-patient-create'] } })).body;
          expect(endpoint.previousSecretExpiresAt).toBeNull();
          const rotated = await api.call('POST', `/settings/webhook/endpoints/${endpoint.id}/rotate-secret`, { body: { graceSeconds: 3_600 } });
          expect(rotated.status, rotated.text).toBe(200);
          const oldSecret: string = endpoint.signingSecret;
          const newSecret: string = rotated.body.signingSecret;
          expect(newSecret).toMatch(/^whsec_/);
          expect(newSecret).not.toBe(oldSecret);
          expect(rotated.body.previousSecretExpiresAt).toBe(new Date(host.clock.now().getTime() + 3_600_000).toISOString());

          const verifies = (request: RecordedRequest, secret: string) => verifyStandardWebhook(request.body, request.headers, secret, { nowSeconds: nowSeconds(host) });
          await api.importCsv(csvOf([personRow(1)]));
          await host.settle();
          const during = receiver.requests.filter((r) => r.path === '/rotating' && typeOf(r) !== 'ping');
          expect(during).toHaveLength(2);
          for (const request of during) {
            expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
            expect(verifies(request, newSecret)).toBe(true);
            expect(verifies(request, oldSecret)).toBe(true);
            expect(verifyWebhookSignature(request.body, String(request.headers['x-metriport-signature']), newSecret)).toBe(true);
          }

          host.clock.advance(3_600_000);
          const second = await api.createFacility('Second Clinic');
          await api.importCsv(csvOf([personRow(2)]), { facilityId: second.id });
          await host.settle();
          const after = receiver.requests.filter((r) => r.path === '/rotating' && typeOf(r) !== 'ping').slice(2);
          expect(after).toHaveLength(2);
          for (const request of after) {
            expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(1);
            expect(verifies(request, newSecret)).toBe(true);
            expect(verifies(request, oldSecret)).toBe(false);
          }
          const current = (await api.call('GET', `/settings/webhook/endpoints/${endpoint.id}`)).body;
          expect(current.signingSecret).toBe(newSecret);
          const defaultGrace = (await api.call('POST', `/settings/webhook/endpoints/${endpoint.id}/rotate-secret`)).body;
          expect(defaultGrace.previousSecretExpiresAt).toBe(new Date(host.clock.now().getTime() + 24 * 3_600_000).toISOString());
          expect((await api.call('POST', `/settings/webhook/endpoints/${endpoint.id}/rotate-secret`, { body: { graceSeconds: 8 * 24 * 3600 } })).status).toBe(400);
          expect((await api.call('POST', '/settings/webhook/endpoints/no-such-endpoint/rotate-secret')).status).toBe(404);
        });
      } finally {
        await receiver.close();
      }
    });

    test('an endpoint that fails every attempt for 5 days is disabled once, says why, and the account is told on its other endpoints; a success in between restarts the clock; PATCH enabled:true re-enables it', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } });
          const bulk = { eventTypes: ['medical.bulk-patient-create'] };
          const create = async (path: string, extra: Record<string, unknown> = {}) =>
            (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}${path}`, ...extra } })).body as { id: string; health: string; failingSince: string | null };
          const dying = await create('/dying', { description: 'EHR bridge', ...bulk });
          const flaky = await create('/flaky', bulk);
          const healthy = await create('/healthy');
          await create('/notices', { eventTypes: ['webhook.*'] });
          expect(dying).toMatchObject({ health: 'healthy', failingSince: null });
          let flakyAnswersOnce = false;
          let dyingFails = true;
          receiver.setDefault(({ path }) => {
            if (path === '/dying' && dyingFails) return { kind: 'status', status: 500 };
            if (path === '/flaky') {
              if (!flakyAnswersOnce) return { kind: 'status', status: 503 };
              flakyAnswersOnce = false;
            }
            return { kind: 'ok' };
          });
          const endpoint = async (id: string) => (await api.call('GET', `/settings/webhook/endpoints/${id}`)).body;
          const notices = () => receiver.requests.filter((r) => typeOf(r) === 'webhook.endpoint-disabled');

          const start = host.clock.now();
          await api.importCsv(csvOf([personRow(1)]));
          expect(await endpoint(dying.id)).toMatchObject({ enabled: true, health: 'failing', failingSince: start.toISOString() });
          expect(await endpoint(healthy.id)).toMatchObject({ health: 'healthy', failingSince: null });

          // Day 3: the flaky endpoint takes one message, then fails again: its clock starts over.
          host.clock.advance(3 * DAY);
          flakyAnswersOnce = true;
          await host.settle();
          const restarted = host.clock.now().toISOString();
          expect(await endpoint(flaky.id)).toMatchObject({ enabled: true, health: 'failing', failingSince: restarted });

          // Just short of 5 days of failure: still on.
          host.clock.advance(2 * DAY - HOUR);
          await host.settle();
          expect(await endpoint(dying.id)).toMatchObject({ enabled: true, health: 'failing' });
          expect(notices()).toEqual([]);

          // 5 days: the next failed attempt turns it off.
          host.clock.advance(HOUR);
          await host.settle();
          const disabled = await endpoint(dying.id);
          expect(disabled).toMatchObject({ enabled: false, health: 'disabled', failingSince: start.toISOString() });
          expect(disabled.statusDetail).toMatch(/^Disabled: no attempt succeeded for 5 days \(failing since /);
          expect(disabled.statusDetail).toContain('PATCH the endpoint with enabled: true');
          // The flaky one failed for 2 days only since its success; the healthy one never.
          expect(await endpoint(flaky.id)).toMatchObject({ enabled: true, health: 'failing', failingSince: restarted });
          expect(await endpoint(healthy.id)).toMatchObject({ enabled: true, health: 'healthy' });

          // One notice per endpoint that takes it: the default one, the unfiltered and the webhook.* ones; not the
          // disabled endpoint, not the ones filtered to bulk messages.
          expect(notices().map((r) => r.path).sort()).toEqual(['/default', '/healthy', '/notices']);
          const notice = parseWebhookMessage(JSON.parse(notices()[0]!.body));
          expect(notice).toMatchObject({
            meta: { type: 'webhook.endpoint-disabled' },
            endpoint: { endpointId: dying.id, url: `${receiver.url}/dying`, description: 'EHR bridge', reason: 'failing', failingSince: start.toISOString(), statusDetail: disabled.statusDetail },
          });
          expect(new Set(notices().map(idOf)).size).toBe(1);
          expect(notices().every((r) => r.answeredStatus === 200)).toBe(true);

          // Nothing more goes to it, and it is not disabled (nor announced) twice.
          const before = receiver.requests.length;
          host.clock.advance(DAY);
          await host.settle();
          expect(receiver.requests.slice(before).filter((r) => r.path === '/dying')).toEqual([]);
          expect(notices()).toHaveLength(3);

          // Turned on again by the account: a fresh clock, and what waited for it is sent.
          dyingFails = false;
          const enabled = await api.call('PATCH', `/settings/webhook/endpoints/${dying.id}`, { body: { enabled: true } });
          expect(enabled.body).toMatchObject({ enabled: true, health: 'healthy', failingSince: null });
          await host.settle();
          const resumed = receiver.requests.slice(before).filter((r) => r.path === '/dying' && r.answeredStatus === 200);
          expect(resumed.map((r) => JSON.parse(r.body).bulkPatientCreate.status)).toEqual(['processing', 'completed']);
          expect(await endpoint(dying.id)).toMatchObject({ enabled: true, health: 'healthy', failingSince: null });
        });
      } finally {
        await receiver.close();
      }
    });

    test('the default endpoint too: failing for 5 days turns webhookUrl off with the reason in /settings/webhook, other endpoints are told, setting the URL again re-enables it', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } });
          await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/watcher`, eventTypes: ['webhook.endpoint-disabled'] } });
          let failing = true;
          receiver.setDefault(({ path }) => (path === '/default' && failing ? { kind: 'status', status: 500 } : { kind: 'ok', pong: true }));
          const start = host.clock.now().toISOString();
          await api.importCsv(csvOf([personRow(1)]));
          expect((await api.call('GET', '/settings/webhook')).body).toMatchObject({ webhookEnabled: true, health: 'failing', failingSince: start });

          host.clock.advance(5 * DAY);
          await host.settle();
          const status = (await api.call('GET', '/settings/webhook')).body;
          expect(status).toMatchObject({ webhookEnabled: false, health: 'disabled', failingSince: start });
          expect(status.webhookStatusDetail).toMatch(/^Disabled: no attempt succeeded for 5 days .*set the webhook URL again to re-enable$/);
          const notices = receiver.requests.filter((r) => typeOf(r) === 'webhook.endpoint-disabled');
          expect(notices.map((r) => r.path)).toEqual(['/watcher']);
          expect(JSON.parse(notices[0]!.body).endpoint).toMatchObject({ endpointId: 'default', url: `${receiver.url}/default`, reason: 'failing', failingSince: start });

          failing = false;
          const again = await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } });
          expect(again.body.webhookEnabled).toBe(true);
          await host.settle();
          expect((await api.call('GET', '/settings/webhook')).body).toMatchObject({ webhookEnabled: true, health: 'healthy', failingSince: null, messages: { pending: 0 } });
        });
      } finally {
        await receiver.close();
      }
    });

    test('a test event of every type reaches one endpoint at once: a valid sample with meta.test, signed, in the delivery log; the answer says what the receiver did', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          receiver.setDefault({ kind: 'ok', pong: true });
          const noUrl = await api.call('POST', '/settings/webhook/endpoints/default/test', { body: { type: 'medical.document-conversion' } });
          expect(noUrl.status).toBe(409);
          expect(noUrl.body.code).toBe('WEBHOOK_URL_NOT_SET');
          const settings = (await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } })).body;
          // Filtered to one type: a test event of any type goes to it all the same.
          const endpoint = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/endpoint`, eventTypes: ['network-query.lab'] } })).body;
          const before = receiver.requests.length;

          for (const type of RECEIVABLE_TYPES) {
            const sent = await api.call('POST', `/settings/webhook/endpoints/${endpoint.id}/test`, { body: { type } });
            expect(sent.status, sent.text).toBe(200);
            expect(sent.body).toMatchObject({ type, endpointId: endpoint.id, status: 'delivered', statusCode: 200, error: null });
            expect(sent.body.latencyMs).toBeGreaterThanOrEqual(0);
            const request = receiver.requests.at(-1)!;
            expect(request.path).toBe('/endpoint');
            expect(request.headers['webhook-id']).toBe(sent.body.messageId);
            expect(verifyStandardWebhook(request.body, request.headers, endpoint.signingSecret, { nowSeconds: nowSeconds(host) })).toBe(true);
            const message = parseWebhookMessage(JSON.parse(request.body));
            expect(message.meta).toMatchObject({ type, messageId: sent.body.messageId, test: true });
          }
          expect(receiver.requests.slice(before)).toHaveLength(RECEIVABLE_TYPES.length);
          expect(new Set(receiver.requests.slice(before).map(idOf)).size).toBe(RECEIVABLE_TYPES.length);

          const toDefault = await api.call('POST', '/settings/webhook/endpoints/default/test', { body: { type: 'medical.bulk-patient-create' } });
          expect(toDefault.body).toMatchObject({ endpointId: 'default', status: 'delivered' });
          const last = receiver.requests.at(-1)!;
          expect(last.path).toBe('/default');
          expect(verifyWebhookSignature(last.body, String(last.headers['x-metriport-signature']), settings.webhookKey)).toBe(true);

          // A receiver that fails: the answer says so; the endpoint's health does not move.
          receiver.setDefault({ kind: 'status', status: 500 });
          const failed = await api.call('POST', `/settings/webhook/endpoints/${endpoint.id}/test`, { body: { type: 'network-query.hie' } });
          expect(failed.body).toMatchObject({ status: 'failed', statusCode: 500, error: 'the receiver answered HTTP 500' });
          expect((await api.call('GET', `/settings/webhook/endpoints/${endpoint.id}`)).body).toMatchObject({ health: 'healthy', failingSince: null });

          // In the delivery log, marked as tests; nothing was stored in the outbox.
          const log = (await api.call('GET', '/settings/webhook/attempts', { query: { endpointId: endpoint.id, limit: '100' } })).body.attempts as { test: boolean; status: string; messageId: string }[];
          expect(log).toHaveLength(RECEIVABLE_TYPES.length + 1);
          expect(log.every((attempt) => attempt.test)).toBe(true);
          expect(log[0]).toMatchObject({ status: 'failed', messageId: failed.body.messageId });
          expect((await api.call('GET', `/settings/webhook/endpoints/${endpoint.id}`)).body.messages).toEqual({ pending: 0, failing: 0, delivered: 0, parked: 0 });

          for (const body of [{ type: 'ping' }, { type: 'medical.unknown' }, {}]) {
            const refused = await api.call('POST', `/settings/webhook/endpoints/${endpoint.id}/test`, { body });
            expect(refused.status, JSON.stringify(body)).toBe(400);
          }
          expect((await api.call('POST', '/settings/webhook/endpoints/no-such-endpoint/test', { body: { type: 'network-query.lab' } })).body.code).toBe('WEBHOOK_ENDPOINT_NOT_FOUND');
          const other = await AccountApi.create(host, 'Other Clinic');
          expect((await other.call('POST', `/settings/webhook/endpoints/${endpoint.id}/test`, { body: { type: 'network-query.lab' } })).status).toBe(404);
        });
      } finally {
        await receiver.close();
      }
    });

    test('/settings/webhook counts, lists and retries the default endpoint\'s messages only; the other endpoints count theirs on their own', async () => {
      const receiver = await startReceiver();
      try {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          receiver.setDefault({ kind: 'ok', pong: true });
          await api.call('POST', '/settings', { body: { webhookUrl: `${receiver.url}/default` } });
          const bulk = { eventTypes: ['medical.bulk-patient-create'] };
          const gone = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/gone`, ...bulk } })).body;
          const pending = (await api.call('POST', '/settings/webhook/endpoints', { body: { url: `${receiver.url}/pending`, ...bulk } })).body;
          receiver.setDefault(({ path }) => (path === '/gone' ? { kind: 'status', status: 410 } : path === '/pending' ? { kind: 'status', status: 503 } : { kind: 'ok' }));
          await api.importCsv(csvOf([personRow(1)]));

          const status = (await api.call('GET', '/settings/webhook')).body;
          expect(status).toMatchObject({ processing: 0, failed: 0, messages: { pending: 0, parked: 0 } });
          const delivered = receiver.requests.filter((r) => r.path === '/default' && r.answeredStatus === 200 && typeOf(r) !== 'ping').length;
          expect(status.messages.delivered).toBe(delivered);
          expect((await api.call('GET', `/settings/webhook/endpoints/${gone.id}`)).body.messages).toMatchObject({ parked: 1, pending: 1 });
          expect((await api.call('GET', `/settings/webhook/endpoints/${pending.id}`)).body.messages).toMatchObject({ pending: 2, failing: 1, parked: 0 });
          expect((await api.call('GET', '/settings/webhook/parked')).body).toEqual({ messages: [] });
          expect((await api.call('POST', '/settings/webhook/retry')).body).toEqual({ retried: 0 });
          expect((await api.call('GET', `/settings/webhook/endpoints/${gone.id}`)).body.messages.parked).toBe(1);

          // The default endpoint's own parked message is its to retry.
          receiver.setDefault(({ path }) => (path === '/default' ? { kind: 'status', status: 410 } : path === '/pending' ? { kind: 'status', status: 503 } : { kind: 'ok' }));
          const second = await api.createFacility('Second Clinic');
          await api.importCsv(csvOf([personRow(2)]), { facilityId: second.id });
          // Every message in flight when the 410 came is parked (requests go out side by side).
          const parked = (await api.call('GET', '/settings/webhook/parked')).body.messages as { messageId: string; type: string }[];
          expect(parked.length).toBeGreaterThanOrEqual(1);
          expect((await api.call('GET', '/settings/webhook')).body).toMatchObject({ webhookEnabled: false, failed: parked.length, messages: { parked: parked.length } });
          expect((await api.call('POST', '/settings/webhook/retry')).body).toEqual({ retried: parked.length });
          expect((await api.call('GET', `/settings/webhook/endpoints/${gone.id}`)).body.messages.parked).toBe(1);
          expect((await api.call('GET', '/settings/webhook')).body).toMatchObject({ failed: 0, messages: { parked: 0 } });
        });
      } finally {
        await receiver.close();
      }
    });
  });
}
