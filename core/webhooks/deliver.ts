import type { CoreDeps } from '../deps.js';
import type { OutboxMessage, WebhookAttempt } from '../domain/types.js';
import type { StoragePort } from '../ports/storage.port.js';
import type { WebhookDeliveryResult } from '../ports/webhook-sender.port.js';
import { endpointDisabledMessage, patientIdOf, streamKeyOf, type PingMessage, type WebhookMessage } from './envelope.js';
import { deliveryFor, eventTypesTake, messageIdOf } from './endpoints.js';
import { DEFAULT_DISABLE_AFTER_MS, describeDuration, healthOf } from './health.js';
import { countsOf, DEFAULT_ENDPOINT_ID } from './log.js';
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
  /**
   * An endpoint whose every attempt failed for this long is disabled at its next failed attempt, and the
   * account told (`webhook.endpoint-disabled`). Default 5 days; 0 never disables (the clock still runs).
   */
  disableAfterMs?: number;
}

export interface DeliveryOptions {
  /**
   * Most messages the pass's first claim takes. Lanes claim more of their own endpoint while another lane
   * is still on its first claim, each claim at most this many (see `deliverDueMessages`).
   */
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

/** Messages of one endpoint a claim takes at most, as a multiple of the endpoint's concurrency. */
const CLAIM_ROUNDS_PER_ENDPOINT = 4;
/**
 * How long into a pass a lane may still claim more of its own endpoint to fill the pass up to its limit
 * (an endpoint alone in its pass goes on at its own pace, in a few claims rather than many).
 */
const FILL_WINDOW_MS = 1_000;

/** What the lanes of one pass share. */
interface PassState {
  owner: string;
  leaseMs: number;
  limit: number;
  /** Messages the pass has claimed so far, its first claim and the lanes' refills. */
  taken: number;
  /** Messages of one endpoint per claim (first claim and refills). */
  perEndpoint: number;
  /** Lanes still working through the streams the pass's first claim gave them. */
  lanesOnFirstClaim: number;
}

/** One lane's part in `PassState.lanesOnFirstClaim`: on its first claim until each of its streams is done. */
class FirstClaim {
  private on = true;

  constructor(
    private readonly pass: PassState,
    private left: number,
  ) {}

  get running(): boolean {
    return this.on;
  }

  /** One of the first claim's streams is done. */
  streamDone(): void {
    if (--this.left <= 0) this.done();
  }

  /** The lane is done with it (every stream, or it stopped early). Idempotent. */
  done(): void {
    if (!this.on) return;
    this.on = false;
    this.pass.lanesOnFirstClaim -= 1;
  }
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
 * Fairness between endpoints: a claim takes at most 4 x `endpointConcurrency` messages of any one endpoint,
 * so one endpoint's backlog never fills a pass; and a pass lasts as long as its slowest endpoint takes for
 * what the first claim gave it, so meanwhile an endpoint that is done claims more of its own (a refill, of
 * twice the size each time, up to `limit`). A slow endpoint (2 s an answer) therefore holds back no other:
 * the others keep receiving at their own pace until it is done. In the pass's first second a lane also
 * refills while the pass has taken fewer than `limit` messages, so an endpoint alone goes on at its pace.
 *
 * Health: every failed attempt starts the endpoint's failure clock (unless it runs), every delivered one
 * stops it; an endpoint failing for `disableAfterMs` is disabled at its next failed attempt (see health.ts).
 *
 * Several workers (service instances on one database) may run passes at once: each claims its messages
 * (and so their streams) for `leaseMs` before sending, so no two send one message or one stream at once,
 * and a crashed worker's claims run out and are taken over. One worker runs one pass at a time.
 */
export async function deliverDueMessages(deps: DeliveryDeps, options: DeliveryOptions): Promise<DeliveryReport> {
  const report: DeliveryReport = { delivered: 0, failed: 0, parked: 0, deferred: 0 };
  if (options.limit <= 0) return report;
  const passStart = deps.clock.now();
  const pass: PassState = {
    owner: deps.workerId ?? 'delivery',
    leaseMs: deps.leaseMs ?? DEFAULT_DELIVERY_LEASE_MS,
    limit: options.limit,
    taken: 0,
    perEndpoint: CLAIM_ROUNDS_PER_ENDPOINT * (deps.endpointConcurrency ?? DEFAULT_ENDPOINT_CONCURRENCY),
    lanesOnFirstClaim: 0,
  };
  const batch = await deps.storage.outbox.claim(passStart.toISOString(), options.limit, {
    owner: pass.owner,
    leaseMs: pass.leaseMs,
    perEndpoint: pass.perEndpoint,
    ...(options.accountId === undefined ? {} : { accountId: options.accountId }),
  });
  if (batch.length === 0) return report;
  pass.taken = batch.length;

  // endpoint -> stream -> messages, oldest first (the storage returns them in creation order).
  const byEndpoint = new Map<string, { accountId: string; endpointId: string | undefined; streams: OutboxMessage[][] }>();
  for (const message of batch) {
    const lane = endpointKeyOf(message.accountId, message.endpointId);
    let entry = byEndpoint.get(lane);
    if (!entry) byEndpoint.set(lane, (entry = { accountId: message.accountId, endpointId: message.endpointId, streams: [] }));
    entry.streams.push([message]);
  }
  for (const entry of byEndpoint.values()) entry.streams = streamsOf(entry.streams.flat());
  pass.lanesOnFirstClaim = byEndpoint.size;
  const pauses = deps.endpointPauses ?? new Map<string, number>();
  try {
    await Promise.all(
      [...byEndpoint.entries()].map(([key, { accountId, endpointId, streams }]) => {
        const first = new FirstClaim(pass, streams.length);
        return deliverToEndpoint(deps, { key, accountId, endpointId }, streams, passStart, pauses, report, pass, first).finally(() => first.done());
      }),
    );
  } finally {
    // What a stream did not get to (behind a failure) goes back at once, not when the lease runs out.
    await deps.storage.outbox.releaseClaims(pass.owner);
  }
  return report;
}

/** Messages (oldest first) grouped by stream, streams in the order of their oldest message. */
function streamsOf(messages: readonly OutboxMessage[]): OutboxMessage[][] {
  const streams = new Map<string, OutboxMessage[]>();
  for (const message of messages) {
    const stream = streams.get(message.streamKey);
    if (stream) stream.push(message);
    else streams.set(message.streamKey, [message]);
  }
  return [...streams.values()];
}

/**
 * The key of an endpoint's pause and rate-limit bucket: the account id for the default endpoint (as before
 * there were others), the endpoint id prefixed for an extra one.
 */
export function endpointKeyOf(accountId: string, endpointId: string | undefined): string {
  return endpointId === undefined ? accountId : `endpoint:${endpointId}`;
}

/**
 * Runs `work` on the items `next` hands out, `concurrency` at a time. `next` may wait (for a refill); a
 * worker stops when it answers nothing, which it must go on answering from then on.
 */
async function runPool<T>(concurrency: number, next: () => Promise<T | undefined>, work: (item: T) => Promise<void>): Promise<void> {
  const workers = Array.from({ length: Math.max(1, concurrency) }, async () => {
    for (let item = await next(); item !== undefined; item = await next()) await work(item);
  });
  await Promise.all(workers);
}

/** One endpoint as a pass sends to it: the default endpoint (the account's settings) or an extra one. */
interface Target {
  url: string;
  signingKey: string;
  /** Keys of a rotation's grace period, signing beside `signingKey`. */
  previousSigningKeys: string[];
  statusDetail(): string | null;
  /**
   * Notes the state of a working endpoint in words (`Unhealthy: ...`, or null once it works again); never
   * written over why an endpoint is off. Writes reach the storage in the order made.
   */
  note(detail: string | null, nowIso: string): Promise<void>;
  /**
   * Moves the failure clock: a delivered attempt stops it, a failed one starts it unless it runs. Returns
   * when it started (null: not failing). Kept for the pass, so it costs a write only when it changes.
   */
  clock(outcome: 'delivered' | 'failed', atIso: string): Promise<string | null>;
  /**
   * Turns the endpoint off with `detail`, and in the same transaction stores a `webhook.endpoint-disabled`
   * message for the account's other endpoints. With `failingSinceAtMost`, only when its clock started then
   * or earlier. False when it was off already (another lane or instance did it) or not failing so long.
   */
  disable(reason: 'failing' | 'gone', detail: string, nowIso: string, failingSinceAtMost?: string): Promise<boolean>;
  /** Resolves when every write made has reached the storage. */
  settled(): Promise<void>;
}

/** The endpoint's target, or `undefined` when it cannot be sent to now (no URL, disabled, deleted). */
async function loadTarget(deps: DeliveryDeps, accountId: string, endpointId: string | undefined, passStart: Date): Promise<Target | undefined> {
  const { storage } = deps;
  let described: { url: string; description: string; signingKey: string; previousSigningKeys: string[]; statusDetail: string | null; failingSince: string | null };
  if (endpointId === undefined) {
    const settings = await storage.webhookSettings.get(accountId);
    if (!settings || !settings.webhookUrl || !settings.webhookEnabled) return undefined;
    described = {
      url: settings.webhookUrl,
      description: '',
      signingKey: settings.webhookKey,
      previousSigningKeys: [],
      statusDetail: settings.webhookStatusDetail,
      failingSince: settings.failingSince ?? null,
    };
  } else {
    const endpoint = await storage.webhookEndpoints.get(accountId, endpointId);
    if (!endpoint || !endpoint.enabled) return undefined;
    const inGrace = endpoint.previousSecret !== undefined && endpoint.previousSecretUntil !== undefined && endpoint.previousSecretUntil > passStart.toISOString();
    described = {
      url: endpoint.url,
      description: endpoint.description,
      signingKey: endpoint.secret,
      previousSigningKeys: inGrace ? [endpoint.previousSecret!] : [],
      statusDetail: endpoint.statusDetail,
      failingSince: endpoint.failingSince ?? null,
    };
  }
  // Lanes share the target; its writes are chained so they reach the storage in the order made.
  let saving: Promise<unknown> = Promise.resolve();
  const chain = <T>(write: () => Promise<T>): Promise<T> => {
    const done = saving.then(write);
    saving = done;
    return done;
  };
  let { statusDetail, failingSince } = described;
  return {
    url: described.url,
    signingKey: described.signingKey,
    previousSigningKeys: described.previousSigningKeys,
    statusDetail: () => statusDetail,
    note(detail, nowIso) {
      statusDetail = detail;
      return chain(async () => {
        if (endpointId === undefined) await storage.webhookSettings.setStatusDetail(accountId, detail, nowIso);
        else await storage.webhookEndpoints.setStatusDetail(accountId, endpointId, detail, nowIso);
      });
    },
    async clock(outcome, atIso) {
      const wanted = outcome === 'delivered' ? null : atIso;
      if ((wanted === null) === (failingSince === null)) return failingSince;
      failingSince = wanted;
      const stored = await chain(() =>
        endpointId === undefined ? storage.webhookSettings.setFailingSince(accountId, wanted) : storage.webhookEndpoints.setFailingSince(accountId, endpointId, wanted),
      );
      // Another instance's earlier failure is kept; a deleted endpoint has no clock.
      if (stored !== undefined) failingSince = stored;
      return failingSince;
    },
    disable(reason, detail, nowIso, failingSinceAtMost) {
      statusDetail = detail;
      const change = { statusDetail: detail, updatedAt: nowIso, ...(failingSinceAtMost === undefined ? {} : { failingSinceAtMost }) };
      return chain(() =>
        storage.transaction(async (tx) => {
          const off = endpointId === undefined ? await tx.webhookSettings.disable(accountId, change) : await tx.webhookEndpoints.disable(accountId, endpointId, change);
          if (!off) return false;
          const notice = endpointDisabledMessage(
            { messageId: deps.ids.next(), when: deps.clock.now() },
            {
              endpointId: endpointId ?? DEFAULT_ENDPOINT_ID,
              url: described.url,
              description: described.description,
              reason,
              failingSince: off.failingSince ?? failingSince ?? nowIso,
              disabledAt: nowIso,
              statusDetail: detail,
            },
          );
          await enqueueMessage(tx, accountId, notice, { except: endpointId ?? null });
          return true;
        }),
      );
    },
    settled: () => saving.then(() => undefined),
  };
}

/** Why an endpoint failing for `disableAfterMs` was turned off, and how to turn it on again. */
function failingDetail(endpointId: string | undefined, failingSince: string, now: Date, lastError: string): string {
  const again = endpointId === undefined ? 'set the webhook URL again' : 'PATCH the endpoint with enabled: true';
  return `${DISABLED_DETAIL_PREFIX} no attempt succeeded for ${describeDuration(now.getTime() - Date.parse(failingSince))} (failing since ${failingSince}; the last: ${lastError}); ${again} to re-enable`;
}

async function deliverToEndpoint(
  deps: DeliveryDeps,
  lane: { key: string; accountId: string; endpointId: string | undefined },
  firstStreams: OutboxMessage[][],
  passStart: Date,
  pauses: EndpointPauses,
  report: DeliveryReport,
  pass: PassState,
  first: FirstClaim,
): Promise<void> {
  const { storage } = deps;
  const schedule = deps.schedule ?? defaultRetrySchedule;
  const holdMs = deps.holdMs ?? DEFAULT_HOLD_MS;
  const timeoutMs = deps.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  const disableAfterMs = deps.disableAfterMs ?? DEFAULT_DISABLE_AFTER_MS;

  const setAside = async (rest: readonly OutboxMessage[], until: string): Promise<void> => {
    if (rest.length === 0) return;
    await storage.outbox.updateMany(rest.map((message) => ({ ...message, nextAttemptAt: until })));
    report.deferred += rest.length;
  };

  const target = await loadTarget(deps, lane.accountId, lane.endpointId, passStart);
  if (!target) {
    await setAside(firstStreams.flat(), new Date(passStart.getTime() + holdMs).toISOString());
    return;
  }
  const pausedUntil = pauses.get(lane.key);
  if (pausedUntil !== undefined) {
    if (pausedUntil > passStart.getTime()) {
      await setAside(firstStreams.flat(), new Date(pausedUntil).toISOString());
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
  /** Set when the endpoint must get nothing more in this pass: disabled (410, failing too long), or paused until then. */
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

  // The streams to work through: the first claim's, then refills. A lane done with its own claims more of
  // its endpoint while another lane is still on its first claim (the pass lasts that long anyway), or,
  // in the pass's first second, while the pass has taken fewer than `limit` messages; never once it is
  // stopped or out of budget. Each refill is twice the last, so a fast endpoint needs few claims.
  const queue: { stream: OutboxMessage[]; fromFirstClaim: boolean }[] = firstStreams.map((stream) => ({ stream, fromFirstClaim: true }));
  let refilling: Promise<boolean> | undefined;
  let exhausted = false;
  let refills = 0;
  const othersOnFirstClaim = () => pass.lanesOnFirstClaim - (first.running ? 1 : 0) > 0;
  const refill = async (): Promise<boolean> => {
    if (exhausted || stop || budget <= 0) return false;
    const now = deps.clock.now();
    const room = pass.limit - pass.taken;
    const waiting = othersOnFirstClaim();
    if (!waiting && !(room > 0 && now.getTime() - passStart.getTime() < FILL_WINDOW_MS)) return false;
    const size = Math.min(pass.perEndpoint * 2 ** refills, pass.limit, waiting ? pass.limit : room);
    refills += 1;
    const claimed = await storage.outbox.claim(now.toISOString(), size, {
      owner: pass.owner,
      leaseMs: pass.leaseMs,
      accountId: lane.accountId,
      endpointId: lane.endpointId ?? null,
    });
    pass.taken += claimed.length;
    if (claimed.length === 0) exhausted = true;
    for (const stream of streamsOf(claimed)) queue.push({ stream, fromFirstClaim: false });
    return claimed.length > 0;
  };
  const next = async (): Promise<{ stream: OutboxMessage[]; fromFirstClaim: boolean } | undefined> => {
    for (;;) {
      const item = queue.shift();
      if (item) return item;
      if (!refilling) refilling = refill().finally(() => (refilling = undefined));
      if (!(await refilling)) return queue.shift();
    }
  };

  const send = async (stream: OutboxMessage[]): Promise<void> => {
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
        await target.clock('delivered', attemptedAt);
        if (target.statusDetail()?.startsWith(UNHEALTHY_DETAIL_PREFIX)) {
          // The endpoint evidently works again; the parked messages still show in the `failed` count.
          await target.note(null, nowIso);
        }
        continue;
      }

      const attempts = message.attempts + 1;
      const lastError = describeFailure(result, timeoutMs);
      log(message, result, attemptedAt, lastError);
      const failingSince = await target.clock('failed', attemptedAt);
      if (result.gone) {
        await storage.outbox.update({ ...message, status: 'parked', attempts, lastError });
        report.parked += 1;
        stop = { until: new Date(now.getTime() + holdMs).toISOString() };
        const again = lane.endpointId === undefined ? 'set the webhook URL again' : 'PATCH the endpoint with enabled: true';
        await target.disable('gone', `${DISABLED_DETAIL_PREFIX} the receiver answered 410 Gone at ${nowIso} (message ${messageIdOf(message)}); ${again} to re-enable`, nowIso);
        await setAside(stream.slice(index + 1), stop.until);
        return;
      }

      const nextAt = schedule.nextAttemptAt(attempts, now, deps.random(), result.retryAfterMs);
      if (!nextAt) {
        // Given up: a parked message holds its stream back no longer, so the stream goes on.
        await storage.outbox.update({ ...message, status: 'parked', attempts, lastError });
        report.parked += 1;
        await target.note(`${UNHEALTHY_DETAIL_PREFIX} message ${messageIdOf(message)} was parked after ${attempts} failed attempts (last: ${lastError})`, nowIso);
      } else {
        await storage.outbox.update({ ...message, attempts, nextAttemptAt: nextAt.toISOString(), lastError });
        report.failed += 1;
      }

      if (disableAfterMs > 0 && failingSince !== null && now.getTime() - Date.parse(failingSince) >= disableAfterMs) {
        // Failing for too long: off, once (of several lanes or instances deciding at once, one does it).
        const cutoff = new Date(now.getTime() - disableAfterMs).toISOString();
        if (await target.disable('failing', failingDetail(lane.endpointId, failingSince, now, lastError), nowIso, cutoff)) {
          stop = { until: new Date(now.getTime() + holdMs).toISOString() };
        }
      }
      if (!nextAt) continue;

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
  };

  await runPool(deps.endpointConcurrency ?? DEFAULT_ENDPOINT_CONCURRENCY, next, async ({ stream, fromFirstClaim }) => {
    try {
      await send(stream);
    } finally {
      if (fromFirstClaim) first.streamDone();
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
 * derived from the message (`streamKeyOf`). `except` leaves one endpoint out (an extra endpoint's id, or
 * null for the default one): a notice about an endpoint never goes to it. Without the default endpoint's
 * record the message cannot be replayed to an endpoint it did not go to. Returns the default endpoint's
 * record (not stored when `except` is null).
 */
export async function enqueueMessage(
  tx: StoragePort,
  accountId: string,
  message: Exclude<WebhookMessage, PingMessage>,
  options: { except?: string | null } = {},
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
  if (options.except !== null) await tx.outbox.add(record);
  for (const endpoint of await tx.webhookEndpoints.list(accountId)) {
    if (endpoint.id === options.except) continue;
    if (endpoint.enabled && eventTypesTake(endpoint.eventTypes, record.type)) await tx.outbox.add(deliveryFor(record, endpoint.id));
  }
  return record;
}

/** Parked messages put back per storage round by `retryParked`. */
const RETRY_PAGE = 500;

/**
 * Puts every parked message of the account's default endpoint (`webhookUrl`) back to pending, due now,
 * with a fresh attempt budget: same messageId, same body bytes (`POST /settings/webhook/retry`). Returns
 * how many. The other endpoints' parked messages are theirs to replay (`replayMessages` with `parked`).
 * A disabled endpoint stays disabled: the messages then wait, pending, until the URL is set again.
 */
export async function retryParked(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string): Promise<{ retried: number }> {
  const now = deps.clock.now().toISOString();
  let retried = 0;
  for (;;) {
    // Each round's messages are parked no longer, so the next round finds the next ones.
    const parked = await deps.storage.outbox.listForEndpoint(accountId, null, { status: 'parked' }, RETRY_PAGE);
    await deps.storage.outbox.updateMany(parked.map((message) => ({ ...message, status: 'pending', attempts: 0, nextAttemptAt: now })));
    retried += parked.length;
    if (parked.length < RETRY_PAGE) return { retried };
  }
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
  /** `disabled` when off, `failing` while every attempt since `failingSince` failed, else `healthy`. */
  health: ReturnType<typeof healthOf>;
  /** The first failed attempt since the last successful delivery; null when healthy. */
  failingSince: string | null;
  /** Messages of the default endpoint still pending (being delivered or waiting for a retry). */
  processing: number;
  /** Messages of the default endpoint parked after their last failed attempt, until `retryParked`. */
  failed: number;
  /**
   * The default endpoint's messages by state: pending (in flight or waiting for a retry), delivered (kept
   * for the retention, then pruned), parked (every attempt failed). Extra endpoints count theirs on their own.
   */
  messages: Record<OutboxMessage['status'], number>;
}

/**
 * `GET /settings/webhook`: the default endpoint (`webhookUrl`), its health and its messages. An account
 * without settings reports a disabled endpoint.
 */
export async function webhookStatus(deps: Pick<CoreDeps, 'storage'>, accountId: string): Promise<WebhookStatus> {
  const [settings, all] = await Promise.all([deps.storage.webhookSettings.get(accountId), deps.storage.outbox.countsByEndpoint(accountId)]);
  const counts = countsOf(all, null);
  const enabled = Boolean(settings?.webhookEnabled && settings.webhookUrl);
  return {
    webhookEnabled: enabled,
    webhookStatusDetail: settings?.webhookStatusDetail ?? null,
    health: healthOf(enabled, settings?.failingSince),
    failingSince: settings?.failingSince ?? null,
    processing: counts.pending,
    failed: counts.parked,
    messages: { pending: counts.pending, delivered: counts.delivered, parked: counts.parked },
  };
}
