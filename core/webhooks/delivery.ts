import type { CoreDeps } from '../deps.js';
import type { RetrySchedule } from './retry-schedule.js';
import type { EndpointPauses, EndpointRateLimit } from './throttle.js';

/* What webhook delivery is given, its defaults and what it reports: shared by the dispatcher and its lanes. */

/** The receiver must answer within 4 seconds. */
export const DEFAULT_DELIVERY_TIMEOUT_MS = 4_000;
/** See `DeliveryDeps.endpointConcurrency`. */
export const DEFAULT_ENDPOINT_CONCURRENCY = 16;
/** See `DeliveryDeps.leaseMs`. */
export const DEFAULT_DELIVERY_LEASE_MS = 5 * 60_000;
/** See `DeliveryDeps.holdMs`. */
export const DEFAULT_HOLD_MS = 15 * 60_000;

/** Prefixes of the status details the delivery writes, so it only ever clears its own. */
export const UNHEALTHY_DETAIL_PREFIX = 'Unhealthy:';
export const DISABLED_DETAIL_PREFIX = 'Disabled:';

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

/** An endpoint of an account: an extra endpoint's id, or undefined for the account's default one; `key` as `endpointKeyOf`. */
export interface EndpointRef {
  key: string;
  accountId: string;
  endpointId: string | undefined;
}

/**
 * The key of an endpoint's pause and rate-limit bucket: the account id for the default endpoint (as before
 * there were others), the endpoint id prefixed for an extra one.
 */
export function endpointKeyOf(accountId: string, endpointId: string | undefined): string {
  return endpointId === undefined ? accountId : `endpoint:${endpointId}`;
}
