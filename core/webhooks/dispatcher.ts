import type { OutboxMessage } from '../domain/types.js';
import {
  DEFAULT_DELIVERY_LEASE_MS,
  DEFAULT_ENDPOINT_CONCURRENCY,
  endpointKeyOf,
  type DeliveryDeps,
  type DeliveryOptions,
  type DeliveryReport,
  type EndpointRef,
} from './delivery.js';
import { CLAIM_ROUNDS_PER_ENDPOINT, EndpointLane, streamsOf } from './lane.js';

/** Endpoints whose failures in a row a dispatcher counts at most; past it, the longest-known is forgotten. */
const FAILING_ENDPOINTS_KEPT = 10_000;

const noReport = (): DeliveryReport => ({ delivered: 0, failed: 0, parked: 0, deferred: 0 });

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
