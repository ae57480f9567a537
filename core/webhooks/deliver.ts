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
/** How long a failing endpoint rests when the retry schedule has no second step. */
const DEFAULT_REST_MS = 5_000;
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
 * nothing is sent to it. The host keeps one across dispatchers so the pause also covers messages created later.
 */
export type EndpointPauses = Map<string, number>;

/**
 * A per-endpoint throttle (messages per second), a token bucket per endpoint (`endpointKeyOf`) holding up to one second's
 * worth, taken one token per attempt. The host keeps the buckets across dispatchers. Messages over the budget
 * are not attempted: they stay pending and due, and a later poll takes them once the bucket has refilled.
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
  /** Pauses asked for by endpoints; without it a pause lasts for the lane only (and the messages in hand). */
  endpointPauses?: EndpointPauses;
  /** At most this many messages a second to each endpoint; unlimited when absent. */
  rateLimit?: EndpointRateLimit;
  /**
   * Who claims the messages: unique per process (per dispatcher) when several instances share one
   * database. Default `delivery`, enough for one worker.
   */
  workerId?: string;
  /**
   * How long a claim lives. A lane sends what one claim took in at most about (limit / endpointConcurrency)
   * x timeoutMs; keep this above it, or another worker may take over messages still in flight. Default 5 minutes.
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
   * Most messages one claim takes: a poll's, at most 4 x `endpointConcurrency` of any one endpoint, and a
   * lane's refill of its own endpoint (from 4 x `endpointConcurrency`, twice as many each time, up to this).
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

/** Messages of one endpoint a poll takes at most, as a multiple of the endpoint's concurrency. */
const CLAIM_ROUNDS_PER_ENDPOINT = 4;
/**
 * Failed attempts in a row after which an endpoint rests: nothing more is tried for the schedule's first
 * retry delay (5 s by default), its other messages waiting, due. A delivered attempt starts the count again.
 */
export const FAILURES_BEFORE_REST = 20;
/** Endpoints whose failures in a row a dispatcher counts at most; past it, the longest-known is forgotten. */
const FAILING_ENDPOINTS_KEPT = 10_000;

const noReport = (): DeliveryReport => ({ delivered: 0, failed: 0, parked: 0, deferred: 0 });

/** An endpoint of an account: an extra endpoint's id, or undefined for the account's default one; `key` as `endpointKeyOf`. */
interface EndpointRef {
  key: string;
  accountId: string;
  endpointId: string | undefined;
}

/**
 * Webhook delivery in one process. A poll claims deliverable messages of the outbox (due, and not behind an
 * older waiting message of their stream) for the endpoints this dispatcher is not sending to already, and
 * starts a lane for each endpoint it got messages of; a lane sends its endpoint's messages and claims more
 * of its own endpoint as its requests finish, until its endpoint has nothing deliverable left. So lanes
 * never wait for one another: a slow or failing endpoint holds its own lane only, and the next poll starts
 * lanes for the others whatever it still has in flight.
 *
 * What a lane does with each message: POSTs it to its endpoint (the account's default one, or the extra
 * endpoint the delivery is for). 2xx: delivered. Failure: rescheduled on the retry schedule (Retry-After
 * honoured), parked when the schedule is spent (the endpoint is then marked unhealthy). 410: the endpoint is
 * disabled and the message parked. An endpoint without a URL, or disabled, keeps its messages pending (set
 * aside for `holdMs`), never drops them.
 *
 * Order is kept within a stream only (see `streamKeyOf`): a stream's messages go one after the other,
 * oldest first, and a failed one stops its stream, whose later messages then wait for its retry (the
 * storage no longer offers them while it waits). Other streams are not held up by it: receivers must be
 * idempotent and cannot rely on order across streams anyway, as with every webhook provider.
 *
 * Concurrency: up to `endpointConcurrency` streams of one endpoint in flight, one request per stream. A 429
 * or 503 with Retry-After pauses that endpoint only: its lane starts nothing new and the messages it holds
 * are set aside until the pause ends. With a rate limit, an endpoint out of its budget hands back what it
 * holds and is left out of polls until its bucket is full again. An endpoint whose last
 * `FAILURES_BEFORE_REST` attempts all failed rests likewise for the first retry delay, so one that fails
 * everything costs a few attempts every few seconds rather than one per message it has.
 *
 * Health: every failed attempt starts the endpoint's failure clock (unless it runs), every delivered one
 * stops it; an endpoint failing for `disableAfterMs` is disabled at its next failed attempt (see health.ts).
 *
 * Several workers (service instances on one database) may deliver at once: each claims its messages (and
 * so their streams) for `leaseMs` before sending, so no two send one message or one stream at once, and a
 * crashed worker's claims run out and are taken over. One dispatcher per worker: its lanes' claims are its
 * worker's, and it has one lane per endpoint at most.
 */
export class WebhookDispatcher {
  private readonly lanes = new Map<string, { lane: EndpointLane; ended: Promise<void> }>();
  /** Endpoints out of their rate, or failing every attempt: left out of polls until then (epoch ms). */
  private readonly resting = new Map<string, { endpoint: EndpointRef; untilMs: number }>();
  /** Failed attempts since the last delivered one, of endpoints whose last attempt failed (the oldest dropped past a bound). */
  private readonly failedInARow = new Map<string, number>();
  private readonly totals = noReport();
  /** Lanes that stopped on an error, and the last such error. */
  private failures = 0;
  private lastError: unknown;
  private polling: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly deps: DeliveryDeps,
    private readonly options: DeliveryOptions & {
      /** A lane ended: its endpoint may have had more messages since its last claim, for a poll to take. */
      onLaneEnd?: () => void;
      /** A lane stopped on an error (of the storage): what it held went back, for a later poll. */
      onError?: (error: unknown) => void;
    },
  ) {}

  /** What the lanes did since the dispatcher was made. */
  get report(): DeliveryReport {
    return { ...this.totals };
  }

  /**
   * Claims what is deliverable for endpoints without a lane (and not resting) and starts their lanes; does
   * not wait for them. Returns how many messages it claimed. Polls run one at a time.
   */
  poll(): Promise<number> {
    const polled = this.polling.then(() => this.startLanes());
    this.polling = polled.catch(() => undefined);
    return polled;
  }

  /** Resolves once no lane runs (lanes started meanwhile included). */
  async idle(): Promise<void> {
    while (this.lanes.size > 0) await Promise.all([...this.lanes.values()].map(({ ended }) => ended));
  }

  /**
   * One pass: a poll, then every lane until it ends. Returns what the lanes did meanwhile; rejects with the
   * error a lane stopped on, if one did.
   */
  async pass(): Promise<DeliveryReport> {
    const before = this.report;
    const failures = this.failures;
    await this.poll();
    await this.idle();
    if (this.failures > failures) throw this.lastError;
    const after = this.report;
    return {
      delivered: after.delivered - before.delivered,
      failed: after.failed - before.failed,
      parked: after.parked - before.parked,
      deferred: after.deferred - before.deferred,
    };
  }

  /** Lanes take nothing more: they hand back the messages they hold and end once their requests in flight have. */
  async drain(): Promise<void> {
    await this.polling;
    for (const { lane } of this.lanes.values()) lane.close();
    await this.idle();
  }

  private async startLanes(): Promise<number> {
    const { deps, options } = this;
    if (options.limit <= 0) return 0;
    const now = deps.clock.now();
    for (const [key, { untilMs }] of this.resting) if (untilMs <= now.getTime()) this.resting.delete(key);
    const busy = [...[...this.lanes.values()].map(({ lane }) => lane.endpoint), ...[...this.resting.values()].map(({ endpoint }) => endpoint)];
    const concurrency = deps.endpointConcurrency ?? DEFAULT_ENDPOINT_CONCURRENCY;
    const claimed = await deps.storage.outbox.claim(now.toISOString(), options.limit, {
      owner: deps.workerId ?? 'delivery',
      leaseMs: deps.leaseMs ?? DEFAULT_DELIVERY_LEASE_MS,
      perEndpoint: CLAIM_ROUNDS_PER_ENDPOINT * concurrency,
      exceptEndpoints: busy.map(({ accountId, endpointId }) => ({ accountId, endpointId: endpointId ?? null })),
      ...(options.accountId === undefined ? {} : { accountId: options.accountId }),
    });
    const byEndpoint = new Map<string, { endpoint: EndpointRef; messages: OutboxMessage[] }>();
    for (const message of claimed) {
      const key = endpointKeyOf(message.accountId, message.endpointId);
      let entry = byEndpoint.get(key);
      if (!entry) byEndpoint.set(key, (entry = { endpoint: { key, accountId: message.accountId, endpointId: message.endpointId }, messages: [] }));
      entry.messages.push(message);
    }
    for (const [key, { endpoint, messages }] of byEndpoint) {
      const lane = new EndpointLane(deps, endpoint, streamsOf(messages), this.totals, options.limit, this.failedInARow.get(key) ?? 0);
      const ended = lane.run().then(
        () => {
          this.laneEnded(lane);
          options.onLaneEnd?.();
        },
        (error: unknown) => {
          this.laneEnded(lane);
          this.failures += 1;
          this.lastError = error;
          options.onError?.(error);
        },
      );
      this.lanes.set(key, { lane, ended });
    }
    return claimed.length;
  }

  private laneEnded(lane: EndpointLane): void {
    const { key } = lane.endpoint;
    this.lanes.delete(key);
    if (lane.restUntilMs !== undefined) this.resting.set(key, { endpoint: lane.endpoint, untilMs: lane.restUntilMs });
    this.failedInARow.delete(key);
    if (lane.failedInARow === 0) return;
    this.failedInARow.set(key, lane.failedInARow);
    if (this.failedInARow.size > FAILING_ENDPOINTS_KEPT) this.failedInARow.delete(this.failedInARow.keys().next().value!);
  }
}

/**
 * One delivery pass with a dispatcher of its own: claims up to `options.limit` deliverable messages and
 * sends them, each endpoint's lane claiming more of its own endpoint until it has nothing deliverable left.
 * Resolves when every lane has ended. A service keeps one `WebhookDispatcher` instead, whose polls do not
 * wait for the lanes they start.
 */
export function deliverDueMessages(deps: DeliveryDeps, options: DeliveryOptions): Promise<DeliveryReport> {
  return new WebhookDispatcher(deps, options).pass();
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
 * worker stops when it answers nothing, which it must go on answering from then on, or on an error. Resolves
 * once every worker has stopped; rejects with the first error then.
 */
async function runPool<T>(concurrency: number, next: () => Promise<T | undefined>, work: (item: T) => Promise<void>): Promise<void> {
  const workers = Array.from({ length: Math.max(1, concurrency) }, async () => {
    for (let item = await next(); item !== undefined; item = await next()) await work(item);
  });
  const failed = (await Promise.allSettled(workers)).find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Runs a storage write after the ones chained before it. */
type Chain = <T>(write: () => Promise<T>) => Promise<T>;

/** One endpoint as a lane sends to it: the default endpoint (the account's settings) or an extra one. */
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
}

/**
 * The endpoint's target, or `undefined` when it cannot be sent to now (no URL, disabled, deleted). Its
 * writes go through `chain`, the lane's, so they reach the storage in the order made.
 */
async function loadTarget(deps: DeliveryDeps, accountId: string, endpointId: string | undefined, now: Date, chain: Chain): Promise<Target | undefined> {
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
    const inGrace = endpoint.previousSecret !== undefined && endpoint.previousSecretUntil !== undefined && endpoint.previousSecretUntil > now.toISOString();
    described = {
      url: endpoint.url,
      description: endpoint.description,
      signingKey: endpoint.secret,
      previousSigningKeys: inGrace ? [endpoint.previousSecret!] : [],
      statusDetail: endpoint.statusDetail,
      failingSince: endpoint.failingSince ?? null,
    };
  }
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
  };
}

/** Why an endpoint failing for `disableAfterMs` was turned off, and how to turn it on again. */
function failingDetail(endpointId: string | undefined, failingSince: string, now: Date, lastError: string): string {
  const again = endpointId === undefined ? 'set the webhook URL again' : 'PATCH the endpoint with enabled: true';
  return `${DISABLED_DETAIL_PREFIX} no attempt succeeded for ${describeDuration(now.getTime() - Date.parse(failingSince))} (failing since ${failingSince}; the last: ${lastError}); ${again} to re-enable`;
}

/**
 * One endpoint's messages as a dispatcher sends them: up to `endpointConcurrency` streams in flight, and
 * more of the endpoint claimed as they finish, until it has nothing deliverable left, is stopped (disabled,
 * paused), out of its rate, or closed. Each claim reloads the endpoint (URL, secrets, on or off), so a
 * long-running lane sends with what the account set last.
 */
class EndpointLane {
  private readonly queue: OutboxMessage[][];
  private target: Target | undefined;
  /** Set when the endpoint must get nothing more: disabled (410, failing too long), or paused until then. */
  private stop: { until: string } | undefined;
  private closing = false;
  /** Its claim came back empty: nothing more is claimed. */
  private exhausted = false;
  private refills = 0;
  private refilling: Promise<boolean> | undefined;
  /**
   * Set when the endpoint must rest, out of its rate or failing every attempt: the lane takes nothing more,
   * and polls leave the endpoint out until then (epoch ms).
   */
  restUntilMs: number | undefined;

  /** The endpoint's writes (health, notes), in the order made. */
  private saving: Promise<unknown> = Promise.resolve();
  private readonly chain: Chain = (write) => {
    const done = this.saving.then(write);
    this.saving = done;
    return done;
  };
  // Deliveries are recorded a few dozen per transaction: one commit per message was most of the time on
  // SQLite. A crash before the commit only means those messages are sent again, which receivers must bear
  // anyway. The delivery log's rows go with them, and with each failure's update.
  private delivered: OutboxMessage[] = [];
  private logged: WebhookAttempt[] = [];
  /** Ids of the messages the lane has claimed and not yet written back nor handed back. */
  private readonly held = new Map<string, OutboxMessage>();

  constructor(
    private readonly deps: DeliveryDeps,
    readonly endpoint: EndpointRef,
    streams: OutboxMessage[][],
    private readonly report: DeliveryReport,
    private readonly limit: number,
    /** Attempts that failed since the last delivered one, this lane's included. */
    public failedInARow: number,
  ) {
    this.queue = streams;
    for (const message of streams.flat()) this.held.set(message.id, message);
  }

  /** Takes nothing more: what the lane holds goes back, the requests in flight finish. */
  close(): void {
    this.closing = true;
  }

  async run(): Promise<void> {
    try {
      await this.deliver();
    } catch (error) {
      // Stopped on an error (of the storage): what it holds goes back now rather than when the claims run out.
      await this.release([...this.held.values()]).catch(() => undefined);
      throw error;
    }
  }

  private async deliver(): Promise<void> {
    const { deps, endpoint } = this;
    const now = deps.clock.now();
    const holdMs = deps.holdMs ?? DEFAULT_HOLD_MS;
    this.target = await loadTarget(deps, endpoint.accountId, endpoint.endpointId, now, this.chain);
    if (!this.target) {
      await this.setAside(this.queue.splice(0).flat(), new Date(now.getTime() + holdMs).toISOString());
      return;
    }
    const pauses = deps.endpointPauses;
    const pausedUntil = pauses?.get(endpoint.key);
    if (pausedUntil !== undefined) {
      if (pausedUntil > now.getTime()) {
        await this.setAside(this.queue.splice(0).flat(), new Date(pausedUntil).toISOString());
        return;
      }
      pauses!.delete(endpoint.key);
    }
    await runPool(
      deps.endpointConcurrency ?? DEFAULT_ENDPOINT_CONCURRENCY,
      () => this.next(),
      (stream) => this.send(stream),
    );
    await this.flushDelivered();
    await this.saving;
  }

  /** The next stream to send; claims more of the endpoint when none is left in hand. */
  private async next(): Promise<OutboxMessage[] | undefined> {
    for (;;) {
      if (this.stop) {
        await this.setAside(this.queue.splice(0).flat(), this.stop.until);
        return undefined;
      }
      if (this.closing || this.restUntilMs !== undefined) {
        await this.release(this.queue.splice(0).flat());
        return undefined;
      }
      const stream = this.queue.shift();
      if (stream) return stream;
      this.refilling ??= this.refill().finally(() => (this.refilling = undefined));
      if (!(await this.refilling)) return this.queue.shift();
    }
  }

  /** Claims more of the endpoint, twice as many as the last time (up to the limit). False when it got none. */
  private async refill(): Promise<boolean> {
    if (this.exhausted || this.stop || this.closing || this.restUntilMs !== undefined) return false;
    const { deps, endpoint } = this;
    // The endpoint's own writes land before it is read again.
    await this.saving;
    const now = deps.clock.now();
    const target = await loadTarget(deps, endpoint.accountId, endpoint.endpointId, now, this.chain);
    // Turned off or deleted meanwhile: what was sent stands, and nothing more is taken.
    if (!target) this.exhausted = true;
    else {
      this.target = target;
      const concurrency = deps.endpointConcurrency ?? DEFAULT_ENDPOINT_CONCURRENCY;
      const size = Math.min(CLAIM_ROUNDS_PER_ENDPOINT * concurrency * 2 ** this.refills, this.limit);
      this.refills += 1;
      const claimed = await deps.storage.outbox.claim(now.toISOString(), size, {
        owner: deps.workerId ?? 'delivery',
        leaseMs: deps.leaseMs ?? DEFAULT_DELIVERY_LEASE_MS,
        accountId: endpoint.accountId,
        endpointId: endpoint.endpointId ?? null,
      });
      if (claimed.length === 0) this.exhausted = true;
      for (const message of claimed) this.held.set(message.id, message);
      this.queue.push(...streamsOf(claimed));
    }
    return !this.exhausted;
  }

  private rest(untilMs: number): void {
    this.restUntilMs = Math.max(this.restUntilMs ?? 0, untilMs);
  }

  /** Takes one message's worth of the endpoint's rate; false (and the lane rests until its bucket is full) when none is left. */
  private takeToken(nowMs: number): boolean {
    const limit = this.deps.rateLimit;
    if (!limit) return true;
    const bucket = limit.buckets.get(this.endpoint.key) ?? { tokens: limit.perSecond, atMs: nowMs };
    const tokens = Math.min(limit.perSecond, bucket.tokens + ((nowMs - bucket.atMs) * limit.perSecond) / 1000);
    if (tokens >= 1) {
      limit.buckets.set(this.endpoint.key, { tokens: tokens - 1, atMs: nowMs });
      return true;
    }
    limit.buckets.set(this.endpoint.key, { tokens, atMs: nowMs });
    // The bucket holds a second's worth at most: waiting until it is full loses nothing.
    this.rest(nowMs + Math.ceil(((limit.perSecond - tokens) * 1000) / limit.perSecond));
    return false;
  }

  private async send(stream: OutboxMessage[]): Promise<void> {
    const { deps, endpoint } = this;
    const schedule = deps.schedule ?? defaultRetrySchedule;
    const holdMs = deps.holdMs ?? DEFAULT_HOLD_MS;
    const timeoutMs = deps.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
    const disableAfterMs = deps.disableAfterMs ?? DEFAULT_DISABLE_AFTER_MS;
    const target = this.target!;
    for (const [index, message] of stream.entries()) {
      if (this.stop) {
        await this.setAside(stream.slice(index), this.stop.until);
        return;
      }
      // Closing, resting, or over the endpoint's rate: the rest of the stream goes back, due as it was.
      if (this.closing || this.restUntilMs !== undefined || !this.takeToken(deps.clock.now().getTime())) {
        await this.release(stream.slice(index));
        return;
      }
      const attemptedAt = deps.clock.now().toISOString();
      const result = await attempt(deps, target, message, timeoutMs);
      const now = deps.clock.now();
      const nowIso = now.toISOString();

      if (result.outcome === 'delivered') {
        this.log(message, result, attemptedAt);
        await this.recordDelivered({ ...message, status: 'delivered', attempts: message.attempts + 1, deliveredAt: nowIso });
        this.report.delivered += 1;
        this.failedInARow = 0;
        await target.clock('delivered', attemptedAt);
        if (target.statusDetail()?.startsWith(UNHEALTHY_DETAIL_PREFIX)) {
          // The endpoint evidently works again; the parked messages still show in the `failed` count.
          await target.note(null, nowIso);
        }
        continue;
      }

      const attempts = message.attempts + 1;
      const lastError = describeFailure(result, timeoutMs);
      this.log(message, result, attemptedAt, lastError);
      if (++this.failedInARow >= FAILURES_BEFORE_REST) this.rest(now.getTime() + (schedule.delaysMs[1] ?? DEFAULT_REST_MS));
      const failingSince = await target.clock('failed', attemptedAt);
      if (result.gone) {
        await this.write({ ...message, status: 'parked', attempts, lastError });
        this.report.parked += 1;
        this.stop = { until: new Date(now.getTime() + holdMs).toISOString() };
        const again = endpoint.endpointId === undefined ? 'set the webhook URL again' : 'PATCH the endpoint with enabled: true';
        await target.disable('gone', `${DISABLED_DETAIL_PREFIX} the receiver answered 410 Gone at ${nowIso} (message ${messageIdOf(message)}); ${again} to re-enable`, nowIso);
        await this.setAside(stream.slice(index + 1), this.stop.until);
        return;
      }

      const nextAt = schedule.nextAttemptAt(attempts, now, deps.random(), result.retryAfterMs);
      if (!nextAt) {
        // Given up: a parked message holds its stream back no longer, so the stream goes on.
        await this.write({ ...message, status: 'parked', attempts, lastError });
        this.report.parked += 1;
        await target.note(`${UNHEALTHY_DETAIL_PREFIX} message ${messageIdOf(message)} was parked after ${attempts} failed attempts (last: ${lastError})`, nowIso);
      } else {
        await this.write({ ...message, attempts, nextAttemptAt: nextAt.toISOString(), lastError });
        this.report.failed += 1;
      }

      if (disableAfterMs > 0 && failingSince !== null && now.getTime() - Date.parse(failingSince) >= disableAfterMs) {
        // Failing for too long: off, once (of several lanes or instances deciding at once, one does it).
        const cutoff = new Date(now.getTime() - disableAfterMs).toISOString();
        if (await target.disable('failing', failingDetail(endpoint.endpointId, failingSince, now, lastError), nowIso, cutoff)) {
          this.stop = { until: new Date(now.getTime() + holdMs).toISOString() };
        }
      }
      if (!nextAt) continue;

      if (result.retryAfterMs !== undefined && result.retryAfterMs > 0) {
        // The receiver asked for a pause: the whole endpoint honours it, not just this stream.
        const until = now.getTime() + Math.min(result.retryAfterMs, schedule.maxRetryAfterMs);
        // Another stream may have stopped the endpoint while this attempt was in flight.
        if (!this.stop || Date.parse(this.stop.until) < until) this.stop = { until: new Date(until).toISOString() };
        deps.endpointPauses?.set(endpoint.key, Math.max(deps.endpointPauses.get(endpoint.key) ?? 0, until));
      }
      // The stream's later messages go back as they are: behind a waiting message, the storage holds them back.
      await this.release(stream.slice(index + 1));
      return;
    }
  }

  /** Messages set aside until `until` (no endpoint to send to, or a pause): pending, not attempted. */
  private async setAside(messages: readonly OutboxMessage[], until: string): Promise<void> {
    if (messages.length === 0) return;
    await this.deps.storage.outbox.updateMany(messages.map((message) => ({ ...message, nextAttemptAt: until })));
    for (const message of messages) this.held.delete(message.id);
    this.report.deferred += messages.length;
  }

  /** A message's new state (which ends its claim). */
  private async write(message: OutboxMessage): Promise<void> {
    await this.deps.storage.outbox.update(message);
    this.held.delete(message.id);
  }

  /** Claimed messages the lane will not send now go back as they are, for another claim. */
  private async release(messages: readonly OutboxMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.deps.storage.outbox.releaseClaims(
      this.deps.workerId ?? 'delivery',
      messages.map((message) => message.id),
    );
    for (const message of messages) this.held.delete(message.id);
  }

  private async flushDelivered(): Promise<void> {
    if (this.delivered.length === 0 && this.logged.length === 0) return;
    const batch = this.delivered;
    const attempts = this.logged;
    this.delivered = [];
    this.logged = [];
    await this.deps.storage.transaction(async (tx) => {
      await tx.outbox.updateMany(batch);
      await tx.webhookAttempts.addMany(attempts);
    });
    for (const message of batch) this.held.delete(message.id);
  }

  private async recordDelivered(message: OutboxMessage): Promise<void> {
    this.delivered.push(message);
    if (this.delivered.length >= DELIVERED_PER_COMMIT) await this.flushDelivered();
  }

  private log(message: OutboxMessage, result: WebhookDeliveryResult, at: string, error?: string): void {
    const attempt: WebhookAttempt = {
      id: this.deps.ids.next(),
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
    this.logged.push(attempt);
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
