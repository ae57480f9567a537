import fc from 'fast-check';
import { expect } from 'vitest';
import type { OutboxMessage, WebhookAttempt, WebhookEndpoint } from '../../../core/domain/types.js';
import type { OutboxLease, StoragePort } from '../../../core/ports/storage.port.js';
import { at, ACCOUNT_A, ACCOUNT_B, row, ids, sequence } from './fixtures.js';
import type { StorageContractGroup } from './suite.js';

/** Webhooks: the settings (the default endpoint), the other endpoints, the outbox and its claims, the delivery log. */
export function webhooksContract({ test, numRuns }: StorageContractGroup): void {
  /** What one claim takes now, handed back at once: while no one holds a claim, every message that may go now. */
  const claimable = async (storage: StoragePort, now: string, limit: number, accountId?: string): Promise<OutboxMessage[]> => {
    const claimed = await storage.outbox.claim(now, limit, { owner: 'probe', leaseMs: 60_000, ...(accountId === undefined ? {} : { accountId }) });
    await storage.outbox.releaseClaims('probe');
    return claimed;
  };

  // ----- webhook settings

  test('webhookSettings: missing is undefined; put inserts then replaces; scoped by account', async (storage, build) => {
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toBeUndefined();
    const first = build.webhookSettings(ACCOUNT_A);
    await storage.webhookSettings.put(first);
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual(first);
    const second = build.webhookSettings(ACCOUNT_A, { webhookUrl: null, webhookEnabled: false, webhookStatusDetail: 'timed out', updatedAt: at(9) });
    await storage.webhookSettings.put(second);
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual(second);
    expect(await storage.webhookSettings.get(ACCOUNT_B)).toBeUndefined();
  });

  // ----- webhook endpoints

  test('webhook endpoints: insert, get and list scoped to the account, oldest first (ties by id), count', async (storage, build) => {
    const later = build.webhookEndpoint(ACCOUNT_A, { createdAt: at(5), eventTypes: [] });
    const first = build.webhookEndpoint(ACCOUNT_A, { createdAt: at(1), statusDetail: 'Ping answered' });
    const sameTime = build.webhookEndpoint(ACCOUNT_A, { createdAt: at(1), enabled: false });
    const other = build.webhookEndpoint(ACCOUNT_B);
    for (const endpoint of [later, sameTime, other, first]) await storage.webhookEndpoints.insert(endpoint);
    await expect(storage.webhookEndpoints.insert(first)).rejects.toThrow();
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, first.id)).toEqual(first);
    expect(await storage.webhookEndpoints.get(ACCOUNT_B, first.id)).toBeUndefined();
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, 'missing')).toBeUndefined();
    expect(await storage.webhookEndpoints.list(ACCOUNT_A)).toEqual([first, sameTime, later]);
    expect(await storage.webhookEndpoints.list(ACCOUNT_B)).toEqual([other]);
    expect(await storage.webhookEndpoints.list('nobody')).toEqual([]);
    expect(await storage.webhookEndpoints.count(ACCOUNT_A)).toBe(3);
    expect(await storage.webhookEndpoints.count('nobody')).toBe(0);
  });

  test('webhook endpoints: update replaces (not another account\'s), remove is scoped and idempotent', async (storage, build) => {
    const endpoint = build.webhookEndpoint(ACCOUNT_A);
    await storage.webhookEndpoints.insert(endpoint);
    const changed: WebhookEndpoint = { ...endpoint, url: 'https://example.org/x', enabled: false, eventTypes: ['medical.*'], statusDetail: 'Disabled', previousSecret: 'whsec_b2xk', previousSecretUntil: at(90), updatedAt: at(9) };
    expect(await storage.webhookEndpoints.update(changed)).toEqual(changed);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual(changed);
    expect(await storage.webhookEndpoints.update({ ...changed, accountId: ACCOUNT_B, description: 'stolen' })).toBeUndefined();
    expect(await storage.webhookEndpoints.update(build.webhookEndpoint(ACCOUNT_A))).toBeUndefined();
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual(changed);
    expect(await storage.webhookEndpoints.remove(ACCOUNT_B, endpoint.id)).toBe(false);
    expect(await storage.webhookEndpoints.remove(ACCOUNT_A, endpoint.id)).toBe(true);
    expect(await storage.webhookEndpoints.remove(ACCOUNT_A, endpoint.id)).toBe(false);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toBeUndefined();
  });

  test('webhook endpoints: the failure clock is set once (the first failure kept), cleared, never written by update, and scoped', async (storage, build) => {
    const endpoint = build.webhookEndpoint(ACCOUNT_A);
    await storage.webhookEndpoints.insert(endpoint);
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, at(5))).toBe(at(5));
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, at(9))).toBe(at(5));
    expect((await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id))!.failingSince).toBe(at(5));
    // update writes everything but the clock, and answers the endpoint as stored.
    const renamed = await storage.webhookEndpoints.update({ ...endpoint, description: 'renamed', updatedAt: at(10) });
    expect(renamed).toEqual({ ...endpoint, description: 'renamed', updatedAt: at(10), failingSince: at(5) });
    await storage.webhookEndpoints.update({ ...endpoint, description: 'renamed', updatedAt: at(10), failingSince: at(1) });
    expect((await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id))!.failingSince).toBe(at(5));
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_B, endpoint.id, at(1))).toBeUndefined();
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, 'missing', null)).toBeUndefined();
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, null)).toBeNull();
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual({ ...endpoint, description: 'renamed', updatedAt: at(10) });
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, at(20))).toBe(at(20));
    // Inserted with a clock, it keeps it.
    const failing = build.webhookEndpoint(ACCOUNT_A, { failingSince: at(3) });
    await storage.webhookEndpoints.insert(failing);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, failing.id)).toEqual(failing);
  });

  test('webhook endpoints: setStatusDetail writes an enabled endpoint only; disable turns an enabled one off once, with its condition on the failure clock', async (storage, build) => {
    const endpoint = build.webhookEndpoint(ACCOUNT_A, { statusDetail: 'Ping answered' });
    await storage.webhookEndpoints.insert(endpoint);
    expect(await storage.webhookEndpoints.setStatusDetail(ACCOUNT_A, endpoint.id, 'Unhealthy: parked', at(3))).toBe(true);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual({ ...endpoint, statusDetail: 'Unhealthy: parked', updatedAt: at(3) });
    expect(await storage.webhookEndpoints.setStatusDetail(ACCOUNT_B, endpoint.id, 'x', at(4))).toBe(false);

    // Not failing, or not failing long enough: stays on.
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: 'Disabled: failing', updatedAt: at(6), failingSinceAtMost: at(5) })).toBeUndefined();
    await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, at(5));
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: 'Disabled: failing', updatedAt: at(6), failingSinceAtMost: at(4) })).toBeUndefined();
    expect(await storage.webhookEndpoints.disable(ACCOUNT_B, endpoint.id, { statusDetail: 'Disabled: failing', updatedAt: at(6) })).toBeUndefined();
    const off = { ...endpoint, enabled: false, statusDetail: 'Disabled: failing', updatedAt: at(6), failingSince: at(5) };
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: 'Disabled: failing', updatedAt: at(6), failingSinceAtMost: at(5) })).toEqual(off);
    // Off already: neither turned off again nor given another detail by the delivery pass.
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: 'Disabled: gone', updatedAt: at(7) })).toBeUndefined();
    expect(await storage.webhookEndpoints.setStatusDetail(ACCOUNT_A, endpoint.id, null, at(8))).toBe(false);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual(off);
    // Without a condition, an enabled endpoint is turned off whatever its clock.
    const other = build.webhookEndpoint(ACCOUNT_A);
    await storage.webhookEndpoints.insert(other);
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, other.id, { statusDetail: 'Disabled: gone', updatedAt: at(9) })).toEqual({ ...other, enabled: false, statusDetail: 'Disabled: gone', updatedAt: at(9) });
  });

  test('webhook endpoints: of several disables at once, exactly one turns the endpoint off', async (storage, build) => {
    const endpoint = build.webhookEndpoint(ACCOUNT_A, { failingSince: at(1) });
    await storage.webhookEndpoints.insert(endpoint);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, index) => storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: `Disabled by ${index}`, updatedAt: at(10), failingSinceAtMost: at(5) })),
    );
    const winners = results.filter((result) => result !== undefined);
    expect(winners).toHaveLength(1);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual(winners[0]);
  });

  test('webhookSettings: put keeps the stored failure clock; the default endpoint\'s clock, status detail and disable work like an endpoint\'s', async (storage, build) => {
    expect(await storage.webhookSettings.setFailingSince(ACCOUNT_A, at(1))).toBeUndefined();
    expect(await storage.webhookSettings.setStatusDetail(ACCOUNT_A, 'x', at(1))).toBe(false);
    expect(await storage.webhookSettings.disable(ACCOUNT_A, { statusDetail: 'Disabled', updatedAt: at(1) })).toBeUndefined();
    const settings = build.webhookSettings(ACCOUNT_A);
    await storage.webhookSettings.put({ ...settings, failingSince: at(2) });
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual({ ...settings, failingSince: at(2) });
    expect(await storage.webhookSettings.setFailingSince(ACCOUNT_A, at(4))).toBe(at(2));
    await storage.webhookSettings.put({ ...settings, webhookStatusDetail: 'Ping answered', updatedAt: at(3) });
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual({ ...settings, webhookStatusDetail: 'Ping answered', updatedAt: at(3), failingSince: at(2) });
    expect(await storage.webhookSettings.setFailingSince(ACCOUNT_A, null)).toBeNull();
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual({ ...settings, webhookStatusDetail: 'Ping answered', updatedAt: at(3) });
    expect(await storage.webhookSettings.setFailingSince(ACCOUNT_A, at(6))).toBe(at(6));

    expect(await storage.webhookSettings.setStatusDetail(ACCOUNT_A, 'Unhealthy: parked', at(7))).toBe(true);
    expect(await storage.webhookSettings.disable(ACCOUNT_A, { statusDetail: 'Disabled: failing', updatedAt: at(8), failingSinceAtMost: at(5) })).toBeUndefined();
    const off = { ...settings, webhookEnabled: false, webhookStatusDetail: 'Disabled: failing', updatedAt: at(8), failingSince: at(6) };
    const results = await Promise.all([1, 2, 3].map(() => storage.webhookSettings.disable(ACCOUNT_A, { statusDetail: 'Disabled: failing', updatedAt: at(8), failingSinceAtMost: at(6) })));
    expect(results.filter((result) => result !== undefined)).toEqual([off]);
    expect(await storage.webhookSettings.setStatusDetail(ACCOUNT_A, null, at(9))).toBe(false);
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual(off);
    expect(await storage.webhookSettings.get(ACCOUNT_B)).toBeUndefined();
  });

  test('outbox: a claim may take one endpoint\'s messages only (null: the default one), and at most so many of each endpoint, the oldest', async (storage, build) => {
    const rows = [
      build.outbox(ACCOUNT_A, { createdAt: at(1), nextAttemptAt: at(1) }),
      build.outbox(ACCOUNT_A, { createdAt: at(2), nextAttemptAt: at(2), endpointId: 'e1', messageId: 'm1' }),
      build.outbox(ACCOUNT_A, { createdAt: at(3), nextAttemptAt: at(3) }),
      build.outbox(ACCOUNT_A, { createdAt: at(4), nextAttemptAt: at(4), endpointId: 'e1', messageId: 'm2' }),
      build.outbox(ACCOUNT_A, { createdAt: at(5), nextAttemptAt: at(5), endpointId: 'e2', messageId: 'm3' }),
      build.outbox(ACCOUNT_A, { createdAt: at(6), nextAttemptAt: at(6) }),
      build.outbox(ACCOUNT_B, { createdAt: at(7), nextAttemptAt: at(7) }),
      build.outbox(ACCOUNT_B, { createdAt: at(8), nextAttemptAt: at(8), endpointId: 'e1', messageId: 'm4' }),
    ];
    for (const message of rows) await storage.outbox.add(message);
    const [a1, e1a, a2, e1b, e2, a3, b1, b1e1] = rows.map((message) => message.id);
    const lease = (owner: string, extra: { accountId?: string; endpointId?: string | null; perEndpoint?: number } = {}) => ({ owner, leaseMs: 60_000, ...extra });
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w1', { accountId: ACCOUNT_A, endpointId: 'e1' })))).toEqual([e1a, e1b]);
    await storage.outbox.releaseClaims('w1');
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w1', { accountId: ACCOUNT_A, endpointId: null, perEndpoint: 2 })))).toEqual([a1, a2]);
    await storage.outbox.releaseClaims('w1');
    // One of each endpoint, the default endpoints of A and B told apart.
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w2', { perEndpoint: 1 })))).toEqual([a1, e1a, e2, b1, b1e1]);
    expect(ids(await storage.outbox.claim(at(50), 2, lease('w3', { perEndpoint: 1 })))).toEqual([a2, e1b]);
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w4', { perEndpoint: 5 })))).toEqual([a3]);
  });

  test('outbox: deliveries keep their endpoint and message id; removeEndpointDeliveries deletes one endpoint\'s only', async (storage, build) => {
    const message = build.outbox(ACCOUNT_A);
    const toE1 = build.outbox(ACCOUNT_A, { id: `${message.id}:e1`, messageId: message.id, endpointId: 'e1', streamKey: `${message.streamKey}@e1` });
    const parkedE1 = build.outbox(ACCOUNT_A, { endpointId: 'e1', messageId: 'm0', status: 'parked', attempts: 8 });
    const toE2 = build.outbox(ACCOUNT_A, { id: `${message.id}:e2`, messageId: message.id, endpointId: 'e2' });
    const otherAccount = build.outbox(ACCOUNT_B, { endpointId: 'e1', messageId: 'm9' });
    for (const row of [message, toE1, parkedE1, toE2, otherAccount]) await storage.outbox.add(row);
    expect(await storage.outbox.get(ACCOUNT_A, toE1.id)).toEqual(toE1);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(message);
    const claimed = await storage.outbox.claim(at(10), 10, { owner: 'w', leaseMs: 60_000, accountId: ACCOUNT_A });
    expect(claimed.find((m) => m.id === toE1.id)).toEqual(toE1);
    expect(await storage.outbox.removeEndpointDeliveries(ACCOUNT_B, 'e2')).toBe(0);
    expect(await storage.outbox.removeEndpointDeliveries(ACCOUNT_A, 'e1')).toBe(2);
    expect(await storage.outbox.removeEndpointDeliveries(ACCOUNT_A, 'e1')).toBe(0);
    expect((await storage.outbox.list(ACCOUNT_A)).map((m) => m.id).sort()).toEqual([message.id, toE2.id].sort());
    expect(await storage.outbox.get(ACCOUNT_B, otherAccount.id)).toEqual(otherAccount);
  });

  test('outbox: countsByEndpoint counts each endpoint\'s messages by state, failing = pending after a failed attempt', async (storage, build) => {
    for (const row of [
      build.outbox(ACCOUNT_A),
      build.outbox(ACCOUNT_A, { attempts: 2 }),
      build.outbox(ACCOUNT_A, { status: 'delivered', attempts: 1, deliveredAt: at(1) }),
      build.outbox(ACCOUNT_A, { endpointId: 'e1', messageId: 'm1', status: 'parked', attempts: 8 }),
      build.outbox(ACCOUNT_A, { endpointId: 'e1', messageId: 'm2', attempts: 1 }),
      build.outbox(ACCOUNT_B, { endpointId: 'e1', messageId: 'm3' }),
    ]) {
      await storage.outbox.add(row);
    }
    const counts = (await storage.outbox.countsByEndpoint(ACCOUNT_A)).sort((a, b) => String(a.endpointId).localeCompare(String(b.endpointId)));
    expect(counts).toEqual([
      { endpointId: 'e1', pending: 1, failing: 1, delivered: 0, parked: 1 },
      { endpointId: null, pending: 2, failing: 1, delivered: 1, parked: 0 },
    ]);
    expect(await storage.outbox.countsByEndpoint('nobody')).toEqual([]);
  });

  test('outbox: listForEndpoint gives one endpoint\'s deliveries (null: the default), by status and creation window, oldest first, limited', async (storage, build) => {
    const d1 = build.outbox(ACCOUNT_A, { createdAt: at(1), status: 'delivered', attempts: 1, deliveredAt: at(2) });
    const d2 = build.outbox(ACCOUNT_A, { createdAt: at(3), status: 'parked', attempts: 8 });
    const e1 = build.outbox(ACCOUNT_A, { createdAt: at(2), endpointId: 'e1', messageId: 'm1', status: 'parked', attempts: 8 });
    const e2 = build.outbox(ACCOUNT_A, { createdAt: at(1), endpointId: 'e1', messageId: 'm2' });
    const e3 = build.outbox(ACCOUNT_A, { createdAt: at(5), endpointId: 'e1', messageId: 'm3', status: 'parked', attempts: 8 });
    const other = build.outbox(ACCOUNT_B, { createdAt: at(1), endpointId: 'e1', messageId: 'm4' });
    for (const row of [e3, d1, e1, other, d2, e2]) await storage.outbox.add(row);
    const ids = (rows: OutboxMessage[]) => rows.map((row) => row.id);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, null, {}, 10))).toEqual([d1.id, d2.id]);
    expect(await storage.outbox.listForEndpoint(ACCOUNT_A, 'e1', {}, 10)).toEqual([e2, e1, e3]);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, 'e1', {}, 2))).toEqual([e2.id, e1.id]);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, 'e1', { status: 'parked' }, 10))).toEqual([e1.id, e3.id]);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, 'e1', { since: at(2), until: at(5) }, 10))).toEqual([e1.id]);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, null, { status: 'parked', since: at(3) }, 10))).toEqual([d2.id]);
    expect(await storage.outbox.listForEndpoint(ACCOUNT_B, null, {}, 10)).toEqual([]);
  });

  // ----- webhook delivery log

  const attempt = (id: string, accountId: string, overrides: Partial<WebhookAttempt> = {}): WebhookAttempt => ({
    id,
    accountId,
    deliveryId: 'd1',
    messageId: 'm1',
    type: 'medical.document-conversion',
    attemptedAt: at(0),
    outcome: 'failed',
    statusCode: 503,
    latencyMs: 12,
    error: 'the receiver answered HTTP 503',
    ...overrides,
  });

  test('webhook attempts: list newest first (ties by id descending), filtered, paged after a given attempt, scoped by account', async (storage) => {
    const rows = [
      attempt('a1', ACCOUNT_A, { attemptedAt: at(1), patientId: 'p1' }),
      attempt('a2', ACCOUNT_A, { attemptedAt: at(2), endpointId: 'e1', outcome: 'delivered', statusCode: 200, error: undefined }),
      attempt('a3', ACCOUNT_A, { attemptedAt: at(2), type: 'network-query.lab', patientId: 'p2' }),
      attempt('a4', ACCOUNT_A, { attemptedAt: at(3), endpointId: 'e1', statusCode: undefined, error: 'no answer within 4000 ms', latencyMs: 4000, test: true }),
      attempt('b1', ACCOUNT_B, { attemptedAt: at(2) }),
    ];
    for (const row of rows) if (row.error === undefined) delete row.error;
    for (const row of rows) if (row.statusCode === undefined) delete row.statusCode;
    await storage.webhookAttempts.addMany(rows.slice(0, 2));
    await storage.webhookAttempts.addMany(rows.slice(2));
    await storage.webhookAttempts.addMany([]);
    await expect(storage.webhookAttempts.addMany([rows[0]!])).rejects.toThrow();
    const ids = (list: WebhookAttempt[]) => list.map((row) => row.id);
    expect(await storage.webhookAttempts.list(ACCOUNT_A, {}, 10)).toEqual([rows[3], rows[2], rows[1], rows[0]]);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, {}, 2))).toEqual(['a4', 'a3']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, {}, 2, { attemptedAt: at(2), id: 'a3' }))).toEqual(['a2', 'a1']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, {}, 10, { attemptedAt: at(1), id: 'a1' }))).toEqual([]);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { endpointId: 'e1' }, 10))).toEqual(['a4', 'a2']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { endpointId: null }, 10))).toEqual(['a3', 'a1']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { type: 'network-query.lab' }, 10))).toEqual(['a3']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { patientId: 'p1' }, 10))).toEqual(['a1']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { outcome: 'delivered' }, 10))).toEqual(['a2']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { since: at(2), until: at(3) }, 10))).toEqual(['a3', 'a2']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { endpointId: 'e1', outcome: 'failed', since: at(3) }, 10))).toEqual(['a4']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_B, {}, 10))).toEqual(['b1']);
    expect(await storage.webhookAttempts.list('nobody', {}, 10)).toEqual([]);
  });

  test('webhook attempts: prune deletes attempts before the instant, oldest first, at most limit, of every account', async (storage) => {
    await storage.webhookAttempts.addMany([
      attempt('a1', ACCOUNT_A, { attemptedAt: at(1) }),
      attempt('a2', ACCOUNT_A, { attemptedAt: at(3) }),
      attempt('b1', ACCOUNT_B, { attemptedAt: at(2) }),
      attempt('a3', ACCOUNT_A, { attemptedAt: at(10) }),
    ]);
    expect(await storage.webhookAttempts.prune(at(5), 2)).toBe(2);
    expect((await storage.webhookAttempts.list(ACCOUNT_A, {}, 10)).map((row) => row.id)).toEqual(['a3', 'a2']);
    expect(await storage.webhookAttempts.list(ACCOUNT_B, {}, 10)).toEqual([]);
    expect(await storage.webhookAttempts.prune(at(5), 2)).toBe(1);
    expect(await storage.webhookAttempts.prune(at(5), 2)).toBe(0);
    expect((await storage.webhookAttempts.list(ACCOUNT_A, {}, 10)).map((row) => row.id)).toEqual(['a3']);
  });

  // ----- outbox

  test('outbox: add, get (scoped), update replaces the delivery fields', async (storage, build) => {
    const message = build.outbox(ACCOUNT_A);
    await storage.outbox.add(message);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(message);
    expect(await storage.outbox.get(ACCOUNT_B, message.id)).toBeUndefined();
    await expect(storage.outbox.add(message)).rejects.toThrow();
    const retried: OutboxMessage = { ...message, attempts: 1, nextAttemptAt: at(30), lastError: 'HTTP 503' };
    await storage.outbox.update(retried);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(retried);
    const { lastError: _e, ...rest } = retried;
    const delivered: OutboxMessage = { ...rest, status: 'delivered', attempts: 2, deliveredAt: at(31) };
    await storage.outbox.update(delivered);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(delivered);
    await storage.outbox.update({ ...delivered, accountId: ACCOUNT_B, status: 'parked' });
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(delivered);
  });

  test('outbox: a claim takes pending messages due by now, oldest first (ties by id), limited, optionally one account', async (storage, build) => {
    const old = build.outbox(ACCOUNT_A, { createdAt: at(1), nextAttemptAt: at(50) });
    const sameTimeB = build.outbox(ACCOUNT_B, { createdAt: at(2), nextAttemptAt: at(10) });
    const sameTimeA = build.outbox(ACCOUNT_A, { createdAt: at(2), nextAttemptAt: at(100) });
    const notYet = build.outbox(ACCOUNT_A, { createdAt: at(0), nextAttemptAt: at(101) });
    const delivered = build.outbox(ACCOUNT_A, { createdAt: at(0), status: 'delivered', deliveredAt: at(1) });
    const parked = build.outbox(ACCOUNT_A, { createdAt: at(0), status: 'parked', attempts: 10 });
    // Insert in an order that is neither creation nor id order.
    for (const message of [sameTimeB, notYet, delivered, sameTimeA, parked, old]) await storage.outbox.add(message);
    const [low, high] = [sameTimeA, sameTimeB].sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(ids(await claimable(storage, at(100), 10))).toEqual([old.id, low!.id, high!.id]);
    expect(ids(await claimable(storage, at(100), 2))).toEqual([old.id, low!.id]);
    expect(ids(await claimable(storage, at(100), 10, ACCOUNT_A))).toEqual([old.id, sameTimeA.id]);
    expect(ids(await claimable(storage, at(49), 10))).toEqual([sameTimeB.id]);
    expect(await claimable(storage, at(9), 10)).toEqual([]);
  });

  test('outbox: a claim takes due messages not behind a waiting older message of their stream, oldest first, limited', async (storage, build) => {
    // Stream s1: a failing head waiting for its retry holds back the later, due messages of s1 only.
    const s1Head = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(1), nextAttemptAt: at(60) });
    const s1Next = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(2), nextAttemptAt: at(2) });
    // Stream s2: two due messages go together, in creation order; a parked older one holds nothing back.
    const s2Parked = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(0), status: 'parked', attempts: 8 });
    const s2First = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(3), nextAttemptAt: at(3) });
    const s2Second = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(4), nextAttemptAt: at(4) });
    // Stream s3: a due head before a waiting message: the head goes, the waiting one holds back only what follows it.
    const s3Head = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(5), nextAttemptAt: at(5) });
    const s3Waiting = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(6), nextAttemptAt: at(90) });
    const s3Tail = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(7), nextAttemptAt: at(7) });
    // The same stream key in another account is another stream.
    const otherAccount = build.outbox(ACCOUNT_B, { streamKey: 's1', createdAt: at(8), nextAttemptAt: at(8) });
    for (const message of [s3Tail, otherAccount, s1Next, s2Second, s3Waiting, s2Parked, s1Head, s3Head, s2First]) await storage.outbox.add(message);

    expect(ids(await claimable(storage, at(50), 10))).toEqual([s2First.id, s2Second.id, s3Head.id, otherAccount.id]);
    expect(ids(await claimable(storage, at(50), 2))).toEqual([s2First.id, s2Second.id]);
    expect(ids(await claimable(storage, at(50), 10, ACCOUNT_B))).toEqual([otherAccount.id]);
    // Once the head is due, the stream goes on from it; at 100 every pending message is due.
    expect(ids(await claimable(storage, at(60), 10, ACCOUNT_A))).toEqual([s1Head.id, s1Next.id, s2First.id, s2Second.id, s3Head.id]);
    expect(ids(await claimable(storage, at(100), 10, ACCOUNT_A))).toEqual([
      s1Head.id, s1Next.id, s2First.id, s2Second.id, s3Head.id, s3Waiting.id, s3Tail.id,
    ]);
    // Delivered: no longer holds anything back.
    await storage.outbox.update({ ...s1Head, status: 'delivered', attempts: 1, deliveredAt: at(61) });
    expect(ids(await claimable(storage, at(50), 10, ACCOUNT_A))).toEqual([s1Next.id, s2First.id, s2Second.id, s3Head.id]);
    expect((await storage.outbox.get(ACCOUNT_A, s3Tail.id))!.streamKey).toBe('s3');
  });

  test('outbox: claim takes the messages that may go now for a lease; no other claim gets them or their stream until it ends', async (storage, build) => {
    const s1Head = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(1), nextAttemptAt: at(1) });
    const s1Next = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(2), nextAttemptAt: at(2) });
    const s2Head = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(3), nextAttemptAt: at(3) });
    const s3Waiting = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(4), nextAttemptAt: at(90) });
    const s3Tail = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(5), nextAttemptAt: at(5) });
    const other = build.outbox(ACCOUNT_B, { streamKey: 's1', createdAt: at(6), nextAttemptAt: at(6) });
    for (const message of [other, s3Tail, s2Head, s1Next, s3Waiting, s1Head]) await storage.outbox.add(message);
    const lease = (owner: string, accountId?: string) => ({ owner, leaseMs: 60_000, ...(accountId === undefined ? {} : { accountId }) });

    // The limit cuts stream s1 after its head: its next message stays behind the claimed head.
    expect(ids(await storage.outbox.claim(at(50), 1, lease('w1')))).toEqual([s1Head.id]);
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w2')))).toEqual([s2Head.id, other.id]);
    expect(await storage.outbox.claim(at(50), 10, lease('w3'))).toEqual([]);
    // Writing a message ends its claim: its stream is free again.
    await storage.outbox.update({ ...s1Head, status: 'delivered', attempts: 1, deliveredAt: at(51) });
    expect(ids(await storage.outbox.claim(at(52), 10, lease('w3', ACCOUNT_A)))).toEqual([s1Next.id]);
    // A lease that ran out (its worker died) is claimed again; the claimed message comes back unchanged.
    const retaken = await storage.outbox.claim(at(50 + 61), 10, lease('w4', ACCOUNT_B));
    expect(retaken).toEqual([other]);
    expect(ids(await storage.outbox.claim(at(100), 10, lease('w5')))).toEqual([s3Waiting.id, s3Tail.id]);
    // A worker hands back what it claimed and did not send; another worker's claims stay.
    await storage.outbox.releaseClaims('w5');
    await storage.outbox.releaseClaims('nobody');
    expect(ids(await storage.outbox.claim(at(100), 10, lease('w6')))).toEqual([s3Waiting.id, s3Tail.id]);
  });

  test('outbox: releaseClaims with ids ends those claims of the owner only; exceptEndpoints leaves endpoints out of a claim', async (storage, build) => {
    const a1 = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(1), nextAttemptAt: at(1) });
    const a2 = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(2), nextAttemptAt: at(2) });
    const e1 = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(3), nextAttemptAt: at(3), endpointId: 'e1', messageId: 'm1' });
    const e2 = build.outbox(ACCOUNT_A, { streamKey: 's4', createdAt: at(4), nextAttemptAt: at(4), endpointId: 'e2', messageId: 'm2' });
    const b1 = build.outbox(ACCOUNT_B, { streamKey: 's1', createdAt: at(5), nextAttemptAt: at(5) });
    for (const message of [a1, a2, e1, e2, b1]) await storage.outbox.add(message);
    const lease = (owner: string, exceptEndpoints?: { accountId: string; endpointId: string | null }[]) => ({ owner, leaseMs: 60_000, ...(exceptEndpoints ? { exceptEndpoints } : {}) });

    // A's default endpoint and its e2 left out: B's default endpoint is another endpoint, taken.
    const except = [{ accountId: ACCOUNT_A, endpointId: null }, { accountId: ACCOUNT_A, endpointId: 'e2' }];
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w1', except)))).toEqual([e1.id, b1.id]);
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w2', [])))).toEqual([a1.id, a2.id, e2.id]);
    // Only the named claims of that owner end: another owner's naming them changes nothing.
    await storage.outbox.releaseClaims('w2', [e1.id, a1.id]);
    await storage.outbox.releaseClaims('w1', [e1.id, a2.id]);
    await storage.outbox.releaseClaims('w1', []);
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w3')))).toEqual([a1.id, e1.id]);
  });

  test('outbox: two workers claiming at once never both get a message', async (storage, build) => {
    const messages = Array.from({ length: 40 }, (_, index) =>
      build.outbox(index % 2 === 0 ? ACCOUNT_A : ACCOUNT_B, { streamKey: `s${index % 7}`, createdAt: at(index), nextAttemptAt: at(index) }),
    );
    for (const message of messages) await storage.outbox.add(message);
    const claimed: string[] = [];
    await Promise.all(
      ['w1', 'w2', 'w3'].map(async (owner) => {
        for (let round = 0; round < 6; round += 1) {
          for (const message of await storage.outbox.claim(at(100), 5, { owner, leaseMs: 60_000 })) {
            claimed.push(message.id);
            await storage.outbox.update({ ...message, status: 'delivered', attempts: 1, deliveredAt: at(100) });
          }
        }
      }),
    );
    expect(new Set(claimed).size).toBe(claimed.length);
  });

  test('property: over a busy outbox, claims give what the contract says, whatever the scope, the cap, the endpoints left out and the claims held', async (storage) => {
    const nextId = sequence();
    await fc.assert(
      fc.asyncProperty(fc.array(outboxRowArb, { minLength: 1, maxLength: 30 }), fc.array(outboxOpArb, { minLength: 1, maxLength: 20 }), async (rows, ops) => {
        // Accounts of this run only; what a run leaves pending is delivered at its end, so global claims of
        // the next run see its own messages alone.
        const run = nextId();
        const accounts = [`claims-${run}-a`, `claims-${run}-b`];
        const messages: OutboxMessage[] = rows.map((r) => {
          const id = nextId();
          const endpointId = r.endpoint === 0 ? undefined : `e${r.endpoint}`;
          return {
            id,
            accountId: accounts[r.account]!,
            type: 'medical.bulk-patient-create',
            body: '{"meta":{"type":"medical.bulk-patient-create"}}',
            // A stream is the account's and the key's, whatever endpoint its messages go to.
            streamKey: `s${r.stream}`,
            status: r.status,
            attempts: r.status === 'pending' ? 0 : 1,
            nextAttemptAt: at(r.due),
            createdAt: at(r.created),
            ...(r.status === 'delivered' ? { deliveredAt: at(r.created) } : {}),
            ...(endpointId === undefined ? {} : { endpointId, messageId: `m-${id}` }),
          };
        });
        const model = new Map(messages.map((message) => [message.id, message]));
        const leases = new Map<string, { owner: string; until: string }>();
        const oldestFirst = (a: OutboxMessage, b: OutboxMessage) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
        const endpointOf = (message: { accountId: string; endpointId?: string | null }) => `${message.accountId}/${message.endpointId ?? ''}`;
        /** The contract of `claim`, written plainly over every message. */
        const expected = (now: string, limit: number, lease: Omit<OutboxLease, 'owner' | 'leaseMs'> | undefined, accountId?: string): OutboxMessage[] => {
          const pending = [...model.values()].filter((m) => m.status === 'pending');
          const held = (m: OutboxMessage) =>
            pending.some(
              (w) =>
                w.accountId === m.accountId &&
                w.streamKey === m.streamKey &&
                ((w.nextAttemptAt > now && oldestFirst(w, m) < 0) || (lease !== undefined && (leases.get(w.id)?.until ?? '') > now)),
            );
          const except = new Set((lease?.exceptEndpoints ?? []).map(endpointOf));
          const scopeAccount = lease ? lease.accountId : accountId;
          const taken = new Map<string, number>();
          return pending
            .filter(
              (m) =>
                m.nextAttemptAt <= now &&
                (scopeAccount === undefined || m.accountId === scopeAccount) &&
                (lease?.accountId === undefined || lease.endpointId === undefined || (m.endpointId ?? null) === lease.endpointId) &&
                !except.has(endpointOf(m)) &&
                !held(m),
            )
            .sort(oldestFirst)
            .filter((m) => {
              if (lease?.perEndpoint === undefined) return true;
              const count = taken.get(endpointOf(m)) ?? 0;
              taken.set(endpointOf(m), count + 1);
              return count < lease.perEndpoint;
            })
            .slice(0, limit);
        };
        try {
          // Stored in reverse: neither creation nor id order.
          for (const message of [...messages].reverse()) await storage.outbox.add(message);
          for (const op of ops) {
            const now = at(op.now);
            if (op.kind === 'claim') {
              const scope: Omit<OutboxLease, 'owner' | 'leaseMs'> = {
                ...(op.account === undefined ? {} : { accountId: accounts[op.account]! }),
                ...(op.account === undefined || op.endpoint === undefined ? {} : { endpointId: op.endpoint === 0 ? null : `e${op.endpoint}` }),
                ...(op.perEndpoint === undefined ? {} : { perEndpoint: op.perEndpoint }),
                exceptEndpoints: op.except.map(([account, endpoint]) => ({ accountId: accounts[account]!, endpointId: endpoint === 0 ? null : `e${endpoint}` })),
              };
              const want = expected(now, op.limit, scope);
              const owner = `w${op.owner}`;
              expect(await storage.outbox.claim(now, op.limit, { owner, leaseMs: op.leaseSeconds * 1000, ...scope })).toEqual(want);
              for (const message of want) leases.set(message.id, { owner, until: at(op.now + op.leaseSeconds) });
            } else if (op.kind === 'write') {
              const message = messages[op.pick % messages.length]!;
              const current = model.get(message.id)!;
              const written: OutboxMessage =
                op.outcome === 'delivered'
                  ? { ...current, status: 'delivered', attempts: current.attempts + 1, deliveredAt: now }
                  : op.outcome === 'parked'
                    ? { ...current, status: 'parked', attempts: current.attempts + 1, lastError: 'the receiver answered HTTP 500' }
                    : { ...current, attempts: current.attempts + 1, nextAttemptAt: at(op.retryAt), lastError: 'the receiver answered HTTP 500' };
              await storage.outbox.update(written);
              model.set(written.id, written);
              leases.delete(written.id);
            } else {
              const owner = `w${op.owner}`;
              const named = op.picks === undefined ? undefined : op.picks.map((pick) => messages[pick % messages.length]!.id);
              await storage.outbox.releaseClaims(owner, named);
              for (const [id, lease] of leases) if (lease.owner === owner && (named === undefined || named.includes(id))) leases.delete(id);
            }
          }
        } finally {
          const left = [...model.values()].filter((m) => m.status === 'pending');
          await storage.outbox.updateMany(left.map((m) => ({ ...m, status: 'delivered', deliveredAt: at(0) })));
        }
      }),
      { numRuns },
    );
  });

  test('outbox: updateMany replaces many messages at once, ends their claims, and skips missing or foreign ones', async (storage, build) => {
    const first = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(1), nextAttemptAt: at(1) });
    const second = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(2), nextAttemptAt: at(2) });
    const foreign = build.outbox(ACCOUNT_B, { streamKey: 's3', createdAt: at(3), nextAttemptAt: at(3) });
    for (const message of [first, second, foreign]) await storage.outbox.add(message);
    expect(ids(await storage.outbox.claim(at(10), 10, { owner: 'w1', leaseMs: 60_000 }))).toEqual([first.id, second.id, foreign.id]);
    const delivered = { ...first, status: 'delivered' as const, attempts: 1, deliveredAt: at(11) };
    const retried = { ...second, attempts: 1, nextAttemptAt: at(20), lastError: 'the receiver answered HTTP 500' };
    await storage.outbox.updateMany([delivered, retried, { ...foreign, accountId: ACCOUNT_A, status: 'delivered', deliveredAt: at(11) }, build.outbox(ACCOUNT_A)]);
    await storage.outbox.updateMany([]);
    expect(await storage.outbox.get(ACCOUNT_A, first.id)).toEqual(delivered);
    expect(await storage.outbox.get(ACCOUNT_A, second.id)).toEqual(retried);
    expect(await storage.outbox.get(ACCOUNT_B, foreign.id)).toEqual(foreign);
    // The rewritten message is free again (its claim ended); the foreign one is still claimed.
    expect(ids(await storage.outbox.claim(at(21), 10, { owner: 'w2', leaseMs: 60_000 }))).toEqual([second.id]);
  });

  test('outbox: pruneDelivered deletes delivered messages older than the cut, oldest first, in batches; never pending or parked', async (storage, build) => {
    const old1 = build.outbox(ACCOUNT_A, { createdAt: at(1), status: 'delivered', attempts: 1, deliveredAt: at(10) });
    const old2 = build.outbox(ACCOUNT_B, { createdAt: at(2), status: 'delivered', attempts: 1, deliveredAt: at(11) });
    const recent = build.outbox(ACCOUNT_A, { createdAt: at(3), status: 'delivered', attempts: 1, deliveredAt: at(90) });
    const parked = build.outbox(ACCOUNT_A, { createdAt: at(0), status: 'parked', attempts: 8 });
    const pending = build.outbox(ACCOUNT_A, { createdAt: at(0), nextAttemptAt: at(0) });
    for (const message of [recent, old2, parked, old1, pending]) await storage.outbox.add(message);

    expect(await storage.outbox.pruneDelivered(at(50), 1)).toBe(1);
    expect(await storage.outbox.get(ACCOUNT_A, old1.id)).toBeUndefined();
    expect(await storage.outbox.pruneDelivered(at(50), 10)).toBe(1);
    expect(await storage.outbox.pruneDelivered(at(50), 10)).toBe(0);
    expect(await storage.outbox.get(ACCOUNT_B, old2.id)).toBeUndefined();
    expect(await storage.outbox.counts(ACCOUNT_A)).toEqual({ pending: 1, delivered: 1, parked: 1 });
  });

  test('outbox: list oldest first, optionally by status; counts per status; scoped', async (storage, build) => {
    expect(await storage.outbox.counts(ACCOUNT_A)).toEqual({ pending: 0, delivered: 0, parked: 0 });
    const pending = build.outbox(ACCOUNT_A, { createdAt: at(3) });
    const delivered = build.outbox(ACCOUNT_A, { createdAt: at(1), status: 'delivered', deliveredAt: at(2) });
    const pending2 = build.outbox(ACCOUNT_A, { createdAt: at(2) });
    const foreign = build.outbox(ACCOUNT_B);
    for (const message of [pending, delivered, pending2, foreign]) await storage.outbox.add(message);
    expect(ids(await storage.outbox.list(ACCOUNT_A))).toEqual([delivered.id, pending2.id, pending.id]);
    expect(ids(await storage.outbox.list(ACCOUNT_A, 'pending'))).toEqual([pending2.id, pending.id]);
    expect(await storage.outbox.list(ACCOUNT_A, 'parked')).toEqual([]);
    // A limit keeps the oldest.
    expect(ids(await storage.outbox.list(ACCOUNT_A, undefined, 2))).toEqual([delivered.id, pending2.id]);
    expect(ids(await storage.outbox.list(ACCOUNT_A, 'pending', 1))).toEqual([pending2.id]);
    expect(await storage.outbox.counts(ACCOUNT_A)).toEqual({ pending: 2, delivered: 1, parked: 0 });
    expect(await storage.outbox.counts(ACCOUNT_B)).toEqual({ pending: 1, delivered: 0, parked: 0 });
  });
}

/** A message of the busy-outbox property: of two accounts, the default endpoint (0) or e1, e2; few streams and times, so ties and shared streams are common. */
const outboxRowArb = fc.record({
  account: fc.integer({ min: 0, max: 1 }),
  endpoint: fc.integer({ min: 0, max: 2 }),
  stream: fc.integer({ min: 0, max: 3 }),
  created: fc.integer({ min: 0, max: 12 }),
  due: fc.integer({ min: 0, max: 30 }),
  status: fc.constantFrom<OutboxMessage['status'][]>('pending', 'pending', 'pending', 'pending', 'parked', 'delivered'),
});

const endpointArb = fc.integer({ min: 0, max: 2 });
const outboxOpArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        kind: fc.constant('claim' as const),
        now: fc.integer({ min: 0, max: 40 }),
        limit: fc.integer({ min: 1, max: 12 }),
        account: fc.integer({ min: 0, max: 1 }),
        endpoint: endpointArb,
        perEndpoint: fc.integer({ min: 1, max: 4 }),
        except: fc.array(fc.tuple(fc.integer({ min: 0, max: 1 }), endpointArb), { maxLength: 3 }),
        owner: fc.integer({ min: 0, max: 2 }),
        leaseSeconds: fc.integer({ min: 1, max: 30 }),
      },
      { requiredKeys: ['kind', 'now', 'limit', 'except', 'owner', 'leaseSeconds'] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('write' as const),
      now: fc.integer({ min: 0, max: 40 }),
      pick: fc.nat(),
      outcome: fc.constantFrom('delivered', 'retry', 'parked'),
      retryAt: fc.integer({ min: 0, max: 40 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record(
      { kind: fc.constant('release' as const), now: fc.constant(0), owner: fc.integer({ min: 0, max: 2 }), picks: fc.array(fc.nat(), { maxLength: 4 }) },
      { requiredKeys: ['kind', 'now', 'owner'] },
    ),
  },
);
