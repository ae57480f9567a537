/**
 * Per-account rate limits by route class, so one caller cannot take the service from the others: a token
 * bucket per account and class, refilled at the class's rate per minute and holding at most a minute's
 * worth (a burst). A request over the limit answers 429 RATE_LIMITED with Retry-After (whole seconds
 * until a token is back). The buckets live in the handler (one per process: limits are per instance),
 * bounded in number: the least recently used is dropped past `maxBuckets`, which only forgives its owner.
 */
import type { ClockPort } from '../ports/clock.port.js';
import type { RouteDefinition } from './router.js';

/** Route classes, by what a request costs the service. */
export type RateClass = 'standard' | 'create' | 'documentQuery' | 'consolidated';

/** Requests per minute per account, by route class. */
export type RateLimits = Record<RateClass, number>;

/**
 * Defaults: generous for an integration's normal traffic, low enough that one runaway client cannot starve
 * the others. Creating patients one by one is for a few at a time (the bulk import takes a file), a document
 * query or a consolidated render sets off minutes of work.
 */
export const DEFAULT_RATE_LIMITS: RateLimits = { standard: 6000, create: 600, documentQuery: 120, consolidated: 120 };

/**
 * The class of a route: what its work costs, from its method and path. Reading the status of work already
 * started (a query's status, a file it made) is standard: clients poll those.
 */
export function rateClassOf(route: Pick<RouteDefinition, 'method' | 'path'>): RateClass {
  const method = route.method.toUpperCase();
  const path = route.path;
  const startsConsolidated =
    (method === 'POST' && path.endsWith('/consolidated/query')) ||
    (method === 'GET' && (path.endsWith('/consolidated') || path.endsWith('/medical-record') || path.endsWith('/consolidated/search')));
  if (startsConsolidated) return 'consolidated';
  if (method === 'POST' && (path.endsWith('/document/query') || path.endsWith('/network/query') || path.endsWith('/document/download-url/bulk'))) return 'documentQuery';
  if (method === 'POST' && (path === '/medical/v1/patient' || path.endsWith('/patient/bulk') || path.endsWith('/document/upload'))) return 'create';
  return 'standard';
}

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly clock: ClockPort,
    private readonly limits: RateLimits,
    private readonly maxBuckets = 100_000,
  ) {}

  /**
   * Takes one request of `accountId` in `rateClass`; undefined when it may go on, else the seconds until it
   * may (at least 1).
   */
  take(accountId: string, rateClass: RateClass): number | undefined {
    const perMinute = this.limits[rateClass];
    if (!(perMinute > 0) || !Number.isFinite(perMinute)) return undefined;
    const key = `${accountId}\u0000${rateClass}`;
    const now = this.clock.now().getTime();
    const perMs = perMinute / 60_000;
    const found = this.buckets.get(key);
    const bucket = found ?? { tokens: perMinute, at: now };
    bucket.tokens = Math.min(perMinute, bucket.tokens + Math.max(0, now - bucket.at) * perMs);
    bucket.at = now;
    // Most recently used last, so the first key is the one to drop.
    if (found) this.buckets.delete(key);
    this.buckets.set(key, bucket);
    if (this.buckets.size > this.maxBuckets) this.buckets.delete(this.buckets.keys().next().value!);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  }

  /** How many buckets are kept (for tests of the bound). */
  get size(): number {
    return this.buckets.size;
  }
}
