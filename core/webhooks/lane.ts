import type { OutboxMessage, WebhookAttempt } from '../domain/types.js';
import type { WebhookDeliveryResult } from '../ports/webhook-sender.port.js';
import {
  DEFAULT_DELIVERY_LEASE_MS,
  DEFAULT_DELIVERY_TIMEOUT_MS,
  DEFAULT_ENDPOINT_CONCURRENCY,
  DEFAULT_HOLD_MS,
  DISABLED_DETAIL_PREFIX,
  UNHEALTHY_DETAIL_PREFIX,
  type DeliveryDeps,
  type DeliveryReport,
  type EndpointRef,
} from './delivery.js';
import { messageIdOf } from './endpoints.js';
import { DEFAULT_DISABLE_AFTER_MS, describeDuration } from './health.js';
import { describeFailure } from './ping.js';
import { defaultRetrySchedule } from './retry-schedule.js';
import { loadTarget, type Chain, type Target } from './target.js';
import { pauseEndpoint, pausedUntil, takeToken } from './throttle.js';

/** How long a failing endpoint rests when the retry schedule has no second step. */
const DEFAULT_REST_MS = 5_000;
/** Deliveries recorded per storage transaction. */
const DELIVERED_PER_COMMIT = 50;

/** Messages of one endpoint a poll takes at most, as a multiple of the endpoint's concurrency. */
export const CLAIM_ROUNDS_PER_ENDPOINT = 4;
/**
 * Failed attempts in a row after which an endpoint rests: nothing more is tried for the schedule's first
 * retry delay (5 s by default), its other messages waiting, due. A delivered attempt starts the count again.
 */
export const FAILURES_BEFORE_REST = 20;

/** Messages (oldest first) grouped by stream, streams in the order of their oldest message. */
export function streamsOf(messages: readonly OutboxMessage[]): OutboxMessage[][] {
  const streams = new Map<string, OutboxMessage[]>();
  for (const message of messages) {
    const stream = streams.get(message.streamKey);
    if (stream) stream.push(message);
    else streams.set(message.streamKey, [message]);
  }
  return [...streams.values()];
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

/** Why an endpoint failing for `disableAfterMs` was turned off, and how to turn it on again. */
function failingDetail(endpointId: string | undefined, failingSince: string, now: Date, lastError: string): string {
  const again = endpointId === undefined ? 'set the webhook URL again' : 'PATCH the endpoint with enabled: true';
  return `${DISABLED_DETAIL_PREFIX} no attempt succeeded for ${describeDuration(now.getTime() - Date.parse(failingSince))} (failing since ${failingSince}; the last: ${lastError}); ${again} to re-enable`;
}

/**
 * One endpoint's messages as a dispatcher sends them: up to `endpointConcurrency` streams in flight, and
 * more of the endpoint claimed as they finish, until it has nothing deliverable left, is stopped (disabled,
 * paused), out of its rate, or closed. Each claim that brings messages reloads the endpoint (URL, secrets,
 * on or off) before they are sent, so a long-running lane sends with what the account set last.
 */
export class EndpointLane {
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
    const paused = pausedUntil(deps.endpointPauses, endpoint.key, now.getTime());
    if (paused !== undefined) {
      await this.setAside(this.queue.splice(0).flat(), new Date(paused).toISOString());
      return;
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

  /**
   * Claims more of the endpoint, twice as many as the last time (up to the limit). False when it got none.
   * The endpoint is read again only when the claim brought messages to send with it: most lanes end on a
   * refill that finds nothing, and that read was their second of the endpoint.
   */
  private async refill(): Promise<boolean> {
    if (this.exhausted || this.stop || this.closing || this.restUntilMs !== undefined) return false;
    const { deps, endpoint } = this;
    // The endpoint's own writes land before it is read again.
    await this.saving;
    const now = deps.clock.now();
    const concurrency = deps.endpointConcurrency ?? DEFAULT_ENDPOINT_CONCURRENCY;
    const size = Math.min(CLAIM_ROUNDS_PER_ENDPOINT * concurrency * 2 ** this.refills, this.limit);
    this.refills += 1;
    const claimed = await deps.storage.outbox.claim(now.toISOString(), size, {
      owner: deps.workerId ?? 'delivery',
      leaseMs: deps.leaseMs ?? DEFAULT_DELIVERY_LEASE_MS,
      accountId: endpoint.accountId,
      endpointId: endpoint.endpointId ?? null,
    });
    if (claimed.length === 0) {
      this.exhausted = true;
      return false;
    }
    for (const message of claimed) this.held.set(message.id, message);
    const target = await loadTarget(deps, endpoint.accountId, endpoint.endpointId, now, this.chain);
    if (!target) {
      // Turned off or deleted meanwhile: what was sent stands, and what was just claimed is set aside, as a
      // lane starting now would set it aside.
      this.exhausted = true;
      await this.setAside(claimed, new Date(now.getTime() + (deps.holdMs ?? DEFAULT_HOLD_MS)).toISOString());
      return false;
    }
    this.target = target;
    this.queue.push(...streamsOf(claimed));
    return true;
  }

  private rest(untilMs: number): void {
    this.restUntilMs = Math.max(this.restUntilMs ?? 0, untilMs);
  }

  /** Takes one message's worth of the endpoint's rate; false (and the lane rests until its bucket is full) when none is left. */
  private withinRate(nowMs: number): boolean {
    if (!this.deps.rateLimit) return true;
    const token = takeToken(this.deps.rateLimit, this.endpoint.key, nowMs);
    if (!token.taken) this.rest(token.fullAtMs);
    return token.taken;
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
      if (this.closing || this.restUntilMs !== undefined || !this.withinRate(deps.clock.now().getTime())) {
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
        pauseEndpoint(deps.endpointPauses, endpoint.key, until);
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
