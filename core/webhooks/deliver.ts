import type { CoreDeps } from '../deps.js';
import type { OutboxMessage, WebhookAttempt, WebhookSettings } from '../domain/types.js';
import type { StoragePort } from '../ports/storage.port.js';
import type { WebhookDeliveryResult } from '../ports/webhook-sender.port.js';
import { patientIdOf, streamKeyOf, type PingMessage, type WebhookMessage } from './envelope.js';
import { deliveryFor, eventTypesTake, messageIdOf } from './endpoints.js';
import { describeFailure } from './ping.js';
import { defaultRetrySchedule, type RetrySchedule } from './retry-schedule.js';

/** The receiver must answer within 4 seconds. */
export const DEFAULT_DELIVERY_TIMEOUT_MS = 4_000;
/** See `DeliveryDeps.endpointConcurrency`. */
export const DEFAULT_ENDPOINT_CONCURRENCY = 16;
/** Deliveries recorded per storage transaction. */
const DELIVERED_PER_COMMIT = 50;
/** See `DeliveryDeps.leaseMs`. */
export const DEFAULT_DELIVERY_LEASE_MS = 5 * 60_000;
/** See `DeliveryDeps.holdMs`. */
export const DEFAULT_HOLD_MS = 15 * 60_000;

/** Prefixes of the status details this module writes, so it only ever clears its own. */
export const UNHEALTHY_DETAIL_PREFIX = 'Unhealthy:';
export const DISABLED_DETAIL_PREFIX = 'Disabled:';

/**
 * Endpoints that asked to be left alone (429 or 503 with Retry-After): endpoint key (`endpointKeyOf`) -> epoch ms until which
 * nothing is sent to it. The host keeps one across passes so the pause also covers messages created later.
 */
export type EndpointPauses = Map<string, number>;

/**
 * A per-endpoint throttle (messages per second), a token bucket per endpoint (`endpointKeyOf`) holding up to one second's
 * worth. The host keeps the buckets across passes. Messages over the budget are not attempted: they stay
 * pending and due, and a later pass takes them once the bucket has refilled.
 */
export interface EndpointRateLimit {
  perSecond: number;
  buckets: Map<string, { tokens: number; atMs: number }>;
}

export interface DeliveryDeps extends Pick<CoreDeps, 'storage' | 'webhookSender' | 'clock' | 'ids'> {
  /** Uniform in [0, 1): jitter of the retry schedule. The core has no randomness of its own. */
  random: () => number;
  /** Abort an attempt after this long. Default 4 s. */
  timeoutMs?: number;
  schedule?: RetrySchedule;
  /** How long messages of an account without a usable endpoint are set aside before being looked at again. */
  holdMs?: number;
  /** Requests in flight at once per endpoint (one stream never has more than one). Default 16. */
  endpointConcurrency?: number;
  /** Pauses asked for by endpoints; without it a pause lasts for the pass only (and the messages in hand). */
  endpointPauses?: EndpointPauses;
  /** At most this many messages a second to each endpoint; unlimited when absent. */
  rateLimit?: EndpointRateLimit;
  /**
   * Who claims the messages of a pass: unique per process when several instances share one database.
   * Default `delivery`, enough for one worker.
   */
  workerId?: string;
  /**
   * How long a pass's claims live. A pass takes at most about (limit / endpointConcurrency) x timeoutMs;
   * keep this above it, or another worker may take over messages still in flight. Default 5 minutes.
   */
  leaseMs?: number;
}

export interface DeliveryOptions {
  /** Most messages taken in this pass. */
  limit: number;
  /** Only this account's messages. */
  accountId?: string;
}

export interface DeliveryReport {
  /** Acknowledged with a 2xx. */
  delivered: number;
  /** Failed attempts that were rescheduled. */
  failed: number;
  /** Failed for the last time (schedule spent, or 410): parked until `retryParked`. */
  parked: number;
  /** Not attempted: set aside because the account has no enabled endpoint or its endpoint asked for a pause. */
  deferred: number;
}


/**
 * One delivery pass: takes up to `limit` deliverable messages of the outbox (due, and not behind an older
 * waiting message of their stream) and POSTs each to its endpoint (the account's default one, or the extra
 * endpoint the delivery is for). 2xx: delivered. Failure: rescheduled on the retry schedule (Retry-After
 * honoured), parked when the schedule is spent (the endpoint is then marked unhealthy). 410: the endpoint
 * is disabled and the message parked. An endpoint without a URL, or disabled, keeps its messages pending
 * (set aside for `holdMs`), never drops them. Everything here is per endpoint: no endpoint waits for another.
 *
 * Order is kept within a stream only (see `streamKeyOf`): a stream's messages go one after the other,
 * oldest first, and a failed one stops its stream, whose later messages then wait for its retry (the
 * storage no longer offers them while it waits). Other streams are not held up by it: receivers must be
 * idempotent and cannot rely on order across streams anyway, as with every webhook provider.
 *
 * Concurrency: every endpoint of the pass at once, and up to `endpointConcurrency` streams of one endpoint
 * in flight. A 429 or 503 with Retry-After pauses that endpoint only: its other lanes start nothing new and
 * the messages still in hand are set aside until the pause ends.
 *
 * Several workers (service instances on one database) may run passes at once: each claims its messages
 * (and so their streams) for `leaseMs` before sending, so no two send one message or one stream at once,
 * and a crashed worker's claims run out and are taken over. One worker runs one pass at a time.
 */
export async function deliverDueMessages(deps: DeliveryDeps, options: DeliveryOptions): Promise<DeliveryReport> {
  const report: DeliveryReport = { delivered: 0, failed: 0, parked: 0, deferred: 0 };
  if (options.limit <= 0) return report;
  const passStart = deps.clock.now();
  const owner = deps.workerId ?? 'delivery';
  const batch = await deps.storage.outbox.claim(passStart.toISOString(), options.limit, {
    owner,
    leaseMs: deps.leaseMs ?? DEFAULT_DELIVERY_LEASE_MS,
    ...(options.accountId === undefined ? {} : { accountId: options.accountId }),
  });
  if (batch.length === 0) return report;

  // endpoint -> stream -> messages, oldest first (the storage returns them in creation order).
  const byEndpoint = new Map<string, { accountId: string; endpointId: string | undefined; streams: Map<string, OutboxMessage[]> }>();
  for (const message of batch) {
    const lane = endpointKeyOf(message.accountId, message.endpointId);
    let entry = byEndpoint.get(lane);
    if (!entry) byEndpoint.set(lane, (entry = { accountId: message.accountId, endpointId: message.endpointId, streams: new Map() }));
    const stream = entry.streams.get(message.streamKey);
    if (stream) stream.push(message);
    else entry.streams.set(message.streamKey, [message]);
  }
  const pauses = deps.endpointPauses ?? new Map<string, number>();
  try {
    await Promise.all(
      [...byEndpoint.entries()].map(([key, { accountId, endpointId, streams }]) =>
        deliverToEndpoint(deps, { key, accountId, endpointId }, [...streams.values()], passStart, pauses, report),
      ),
    );
  } finally {
    // What a stream did not get to (behind a failure) goes back at once, not when the lease runs out.
    await deps.storage.outbox.releaseClaims(owner);
  }
  return report;
}

/**
 * The key of an endpoint's pause and rate-limit bucket: the account id for the default endpoint (as before
 * there were others), the endpoint id prefixed for an extra one.
 */
export function endpointKeyOf(accountId: string, endpointId: string | undefined): string {
  return endpointId === undefined ? accountId : `endpoint:${endpointId}`;
}

async function runPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  });
  await Promise.all(lanes);
}

/** One endpoint as a pass sends to it: the default endpoint (the account's settings) or an extra one. */
interface Target {
  url: string;
  signingKey: string;
  /** Keys of a rotation's grace period, signing beside `signingKey`. */
  previousSigningKeys: string[];
  statusDetail(): string | null;
  /** Records the endpoint's state in words, and turns it off when `disable`. Saves reach the storage in the order made. */
  save(detail: string | null, disable: boolean, nowIso: string): Promise<void>;
  /** Resolves when every save made has reached the storage. */
  settled(): Promise<void>;
}

/** The endpoint's target, or `undefined` when it cannot be sent to now (no URL, disabled, deleted). */
async function loadTarget(storage: StoragePort, accountId: string, endpointId: string | undefined, passStart: Date): Promise<Target | undefined> {
  let saving: Promise<void> = Promise.resolve();
  if (endpointId === undefined) {
    const initial = await storage.webhookSettings.get(accountId);
    if (!initial || !initial.webhookUrl || !initial.webhookEnabled) return undefined;
    // Lanes share the endpoint's settings; saves are chained so they reach the storage in the order made.
    let settings: WebhookSettings = initial;
    return {
      url: initial.webhookUrl,
      signingKey: initial.webhookKey,
      previousSigningKeys: [],
      statusDetail: () => settings.webhookStatusDetail,
      save(detail, disable, nowIso) {
        settings = { ...settings, webhookStatusDetail: detail, webhookEnabled: disable ? false : settings.webhookEnabled, updatedAt: nowIso };
        const next = settings;
        saving = saving.then(() => storage.webhookSettings.put(next));
        return saving;
      },
      settled: () => saving,
    };
  }
  const endpoint = await storage.webhookEndpoints.get(accountId, endpointId);
  if (!endpoint || !endpoint.enabled) return undefined;
  let statusDetail = endpoint.statusDetail;
  const inGrace = endpoint.previousSecret !== undefined && endpoint.previousSecretUntil !== undefined && endpoint.previousSecretUntil > passStart.toISOString();
  return {
    url: endpoint.url,
    signingKey: endpoint.secret,
    previousSigningKeys: inGrace ? [endpoint.previousSecret!] : [],
    statusDetail: () => statusDetail,
    save(detail, disable, nowIso) {
      statusDetail = detail;
      // Read again at the save: the account may have changed the endpoint meanwhile (description, filter).
      saving = saving.then(async () => {
        const current = await storage.webhookEndpoints.get(accountId, endpointId);
        if (current) await storage.webhookEndpoints.update({ ...current, statusDetail: detail, enabled: disable ? false : current.enabled, updatedAt: nowIso });
      });
      return saving;
    },
    settled: () => saving,
  };
}

async function deliverToEndpoint(
  deps: DeliveryDeps,
  lane: { key: string; accountId: string; endpointId: string | undefined },
  streams: OutboxMessage[][],
  passStart: Date,
  pauses: EndpointPauses,
  report: DeliveryReport,
): Promise<void> {
  const { storage } = deps;
  const schedule = deps.schedule ?? defaultRetrySchedule;
  const holdMs = deps.holdMs ?? DEFAULT_HOLD_MS;
  const timeoutMs = deps.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;

  const setAside = async (rest: readonly OutboxMessage[], until: string): Promise<void> => {
    if (rest.length === 0) return;
    await storage.outbox.updateMany(rest.map((message) => ({ ...message, nextAttemptAt: until })));
    report.deferred += rest.length;
  };

  const target = await loadTarget(storage, lane.accountId, lane.endpointId, passStart);
  if (!target) {
    await setAside(streams.flat(), new Date(passStart.getTime() + holdMs).toISOString());
    return;
  }
  const pausedUntil = pauses.get(lane.key);
  if (pausedUntil !== undefined) {
    if (pausedUntil > passStart.getTime()) {
      await setAside(streams.flat(), new Date(pausedUntil).toISOString());
      return;
    }
    pauses.delete(lane.key);
  }

  // Deliveries are recorded a few dozen per transaction: one commit per message was most of a pass's time on
  // SQLite. A crash before the commit only means those messages are sent again, which receivers must bear anyway.
  // The delivery log's rows go with them, and with each failure's update.
  let delivered: OutboxMessage[] = [];
  let logged: WebhookAttempt[] = [];
  const flushDelivered = async (): Promise<void> => {
    if (delivered.length === 0 && logged.length === 0) return;
    const batch = delivered;
    const attempts = logged;
    delivered = [];
    logged = [];
    await storage.transaction(async (tx) => {
      await tx.outbox.updateMany(batch);
      await tx.webhookAttempts.addMany(attempts);
    });
  };
  const recordDelivered = async (message: OutboxMessage): Promise<void> => {
    delivered.push(message);
    if (delivered.length >= DELIVERED_PER_COMMIT) await flushDelivered();
  };
  const log = (message: OutboxMessage, result: WebhookDeliveryResult, at: string, error?: string): void => {
    const attempt: WebhookAttempt = {
      id: deps.ids.next(),
      accountId: message.accountId,
      deliveryId: message.id,
      messageId: messageIdOf(message),
      type: message.type,
      attemptedAt: at,
      outcome: result.outcome,
      latencyMs: Math.max(0, Math.round(result.durationMs)),
    };
    if (message.endpointId !== undefined) attempt.endpointId = message.endpointId;
    if (message.patientId !== undefined) attempt.patientId = message.patientId;
    if (result.status !== undefined) attempt.statusCode = result.status;
    if (error !== undefined) attempt.error = error;
    logged.push(attempt);
  };
  /** Set when the endpoint must get nothing more in this pass: disabled (410), or paused until then. */
  let stop: { until: string } | undefined;
  // The throttle's budget for this pass; what is left over goes back into the bucket at the end.
  const limit = deps.rateLimit;
  let budget = Number.POSITIVE_INFINITY;
  if (limit) {
    const bucket = limit.buckets.get(lane.key) ?? { tokens: limit.perSecond, atMs: passStart.getTime() };
    const refilled = Math.min(limit.perSecond, bucket.tokens + ((passStart.getTime() - bucket.atMs) * limit.perSecond) / 1000);
    budget = Math.floor(refilled);
    limit.buckets.set(lane.key, { tokens: refilled - budget, atMs: passStart.getTime() });
  }

  await runPool(streams, deps.endpointConcurrency ?? DEFAULT_ENDPOINT_CONCURRENCY, async (stream) => {
    for (const [index, message] of stream.entries()) {
      if (stop) {
        await setAside(stream.slice(index), stop.until);
        return;
      }
      // Over the endpoint's rate: the rest of the stream stays due and goes back with the pass's claims.
      if (budget <= 0) return;
      budget -= 1;
      const attemptedAt = deps.clock.now().toISOString();
      const result = await attempt(deps, target, message, timeoutMs);
      const now = deps.clock.now();
      const nowIso = now.toISOString();

      if (result.outcome === 'delivered') {
        log(message, result, attemptedAt);
        await recordDelivered({ ...message, status: 'delivered', attempts: message.attempts + 1, deliveredAt: nowIso });
        report.delivered += 1;
        if (target.statusDetail()?.startsWith(UNHEALTHY_DETAIL_PREFIX)) {
          // The endpoint evidently works again; the parked messages still show in the `failed` count.
          await target.save(null, false, nowIso);
        }
        continue;
      }

      const attempts = message.attempts + 1;
      const lastError = describeFailure(result, timeoutMs);
      log(message, result, attemptedAt, lastError);
      if (result.gone) {
        await storage.outbox.update({ ...message, status: 'parked', attempts, lastError });
        report.parked += 1;
        stop = { until: new Date(now.getTime() + holdMs).toISOString() };
        const again = lane.endpointId === undefined ? 'set the webhook URL again' : 'PATCH the endpoint with enabled: true';
        await target.save(`${DISABLED_DETAIL_PREFIX} the receiver answered 410 Gone at ${nowIso} (message ${messageIdOf(message)}); ${again} to re-enable`, true, nowIso);
        await setAside(stream.slice(index + 1), stop.until);
        return;
      }

      const nextAt = schedule.nextAttemptAt(attempts, now, deps.random(), result.retryAfterMs);
      if (!nextAt) {
        // Given up: a parked message holds its stream back no longer, so the stream goes on.
        await storage.outbox.update({ ...message, status: 'parked', attempts, lastError });
        report.parked += 1;
        await target.save(`${UNHEALTHY_DETAIL_PREFIX} message ${messageIdOf(message)} was parked after ${attempts} failed attempts (last: ${lastError})`, false, nowIso);
        continue;
      }

      await storage.outbox.update({ ...message, attempts, nextAttemptAt: nextAt.toISOString(), lastError });
      report.failed += 1;
      if (result.retryAfterMs !== undefined && result.retryAfterMs > 0) {
        // The receiver asked for a pause: the whole endpoint honours it, not just this stream.
        const until = now.getTime() + Math.min(result.retryAfterMs, schedule.maxRetryAfterMs);
        // Another lane may have stopped the endpoint while this attempt was in flight.
        const earlier = stop as { until: string } | undefined;
        if (!earlier || Date.parse(earlier.until) < until) stop = { until: new Date(until).toISOString() };
        pauses.set(lane.key, Math.max(pauses.get(lane.key) ?? 0, until));
      }
      // The stream's later messages stay as they are: behind a waiting message, the storage holds them back.
      return;
    }
  });
  await flushDelivered();
  await target.settled();
  if (limit && Number.isFinite(budget) && budget > 0) {
    const bucket = limit.buckets.get(lane.key)!;
    limit.buckets.set(lane.key, { ...bucket, tokens: Math.min(limit.perSecond, bucket.tokens + budget) });
  }
}

async function attempt(deps: DeliveryDeps, target: Target, message: OutboxMessage, timeoutMs: number): Promise<WebhookDeliveryResult> {
  const started = deps.clock.now();
  try {
    return await deps.webhookSender.send({
      url: target.url,
      messageId: messageIdOf(message),
      body: message.body,
      signingKey: target.signingKey,
      ...(target.previousSigningKeys.length > 0 ? { previousSigningKeys: target.previousSigningKeys } : {}),
      timestamp: Math.floor(started.getTime() / 1000),
      timeoutMs,
    });
  } catch (error) {
    // The port promises not to throw for receiver behaviour; anything else must still not strand the message.
    return { outcome: 'failed', gone: false, error: `sender error: ${error instanceof Error ? error.message : String(error)}`, durationMs: 0 };
  }
}

/**
 * Stores a message in the outbox (pending, due at once): once for the default endpoint, and once more for
 * each enabled extra endpoint whose filter takes its type (see endpoints.ts). Call it with the `tx` of the
 * transaction that makes the change the message reports, so both commit or neither does. `meta.when` is the creation time: order
 * and `when` then stay the same on every retry. The body is serialised here, once; the stream key is
 * derived from the message (`streamKeyOf`).
 */
export async function enqueueMessage(
  tx: StoragePort,
  accountId: string,
  message: Exclude<WebhookMessage, PingMessage>,
): Promise<OutboxMessage> {
  const record: OutboxMessage = {
    id: message.meta.messageId,
    accountId,
    type: message.meta.type,
    body: JSON.stringify(message),
    streamKey: streamKeyOf(message),
    status: 'pending',
    attempts: 0,
    nextAttemptAt: message.meta.when,
    createdAt: message.meta.when,
  };
  const patientId = patientIdOf(message);
  if (patientId !== undefined) record.patientId = patientId;
  await tx.outbox.add(record);
  for (const endpoint of await tx.webhookEndpoints.list(accountId)) {
    if (endpoint.enabled && eventTypesTake(endpoint.eventTypes, record.type)) await tx.outbox.add(deliveryFor(record, endpoint.id));
  }
  return record;
}

/**
 * Puts every parked message of the account back to pending, due now, with a fresh attempt budget: same
 * messageId, same body bytes (`POST /settings/webhook/retry`). Returns how many.
 * A disabled endpoint stays disabled: the messages then wait, pending, until the URL is set again.
 */
export async function retryParked(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string): Promise<{ retried: number }> {
  const now = deps.clock.now().toISOString();
  const parked = await deps.storage.outbox.list(accountId, 'parked');
  for (const message of parked) {
    await deps.storage.outbox.update({ ...message, status: 'pending', attempts: 0, nextAttemptAt: now });
  }
  return { retried: parked.length };
}

/**
 * Makes every pending message of the account's default endpoint due now. Call it when the webhook URL is set or re-enabled:
 * messages set aside while there was no usable endpoint (and those waiting on a backoff) get an immediate
 * try at the new one. Attempts are kept. Returns how many were moved.
 */
export async function resumePendingMessages(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string): Promise<{ resumed: number }> {
  const now = deps.clock.now().toISOString();
  let resumed = 0;
  for (const message of await deps.storage.outbox.list(accountId, 'pending')) {
    // The other endpoints' deliveries keep their own schedule.
    if (message.endpointId === undefined && message.nextAttemptAt > now) {
      await deps.storage.outbox.update({ ...message, nextAttemptAt: now });
      resumed += 1;
    }
  }
  return { resumed };
}

export interface WebhookStatus {
  webhookEnabled: boolean;
  webhookStatusDetail: string | null;
  /** Messages still pending (being delivered or waiting for a retry). */
  processing: number;
  /** Messages parked after their last failed attempt, until `retryParked`. */
  failed: number;
  /**
   * The account's messages by state: pending (in flight or waiting for a retry), delivered (kept for the
   * retention, then pruned), parked (every attempt failed).
   */
  messages: Record<OutboxMessage['status'], number>;
}

/** `GET /settings/webhook`. An account without settings reports a disabled endpoint. */
export async function webhookStatus(deps: Pick<CoreDeps, 'storage'>, accountId: string): Promise<WebhookStatus> {
  const [settings, counts] = await Promise.all([deps.storage.webhookSettings.get(accountId), deps.storage.outbox.counts(accountId)]);
  return {
    webhookEnabled: Boolean(settings?.webhookEnabled && settings.webhookUrl),
    webhookStatusDetail: settings?.webhookStatusDetail ?? null,
    processing: counts.pending ?? 0,
    failed: counts.parked ?? 0,
    messages: { pending: counts.pending ?? 0, delivered: counts.delivered ?? 0, parked: counts.parked ?? 0 },
  };
}
