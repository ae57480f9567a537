/**
 * Per-account rate limits by route class, so one caller cannot take the service from the others: a token
 * bucket per account and class, refilled at the class's rate per minute and holding at most a minute's
 * worth (a burst). A request over the limit answers 429 RATE_LIMITED with Retry-After (whole seconds
 * until a token is back). The buckets live in the handler (one per process: limits are per instance),
 * bounded in number: the least recently used is dropped past `maxBuckets`, which only forgives its owner.
 */
import type { RateClass } from '../../contract/endpoints.js';
import type { ClockPort } from '../ports/clock.port.js';

// The settings and the package name the classes beside their limits, from here; an endpoint's class is its entry's `rate`.
export { RATE_LIMIT_CLASSES, type RateClass } from '../../contract/endpoints.js';

/** Requests per minute per account, by route class. */
export type RateLimits = Record<RateClass, number>;

/**
 * Defaults: generous for an integration's normal traffic, low enough that one runaway client cannot starve
 * the others. Creating patients one by one is for a few at a time (the bulk import takes a file), a document
 * query or a consolidated render sets off minutes of work.
 */
export const DEFAULT_RATE_LIMITS: RateLimits = { standard: 6000, create: 600, documentQuery: 120, consolidated: 120 };

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Token buckets by key, each holding at most a minute's worth at `perMinute` and refilled at that rate. At
 * most `maxBuckets` are kept: the least recently used is dropped first, which only forgives its owner.
 */
class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly clock: ClockPort,
    private readonly maxBuckets: number,
  ) {}

  /** Seconds until `key` has a token (at least 1), or undefined when it has one now. Changes nothing. */
  waitFor(key: string, perMinute: number): number | undefined {
    const found = this.buckets.get(key);
    return found ? this.secondsShort(this.refilled(found, perMinute), perMinute) : undefined;
  }

  /** Takes a token of `key`: undefined when there was one, else the seconds until there is (nothing taken). */
  take(key: string, perMinute: number): number | undefined {
    const found = this.buckets.get(key);
    const bucket = found ? this.refilled(found, perMinute) : { tokens: perMinute, at: this.clock.now().getTime() };
    // Most recently used last, so the first key is the one to drop.
    if (found) this.buckets.delete(key);
    this.buckets.set(key, bucket);
    if (this.buckets.size > this.maxBuckets) this.buckets.delete(this.buckets.keys().next().value!);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return this.secondsShort(bucket, perMinute);
  }

  get size(): number {
    return this.buckets.size;
  }

  private refilled(bucket: Bucket, perMinute: number): Bucket {
    const now = this.clock.now().getTime();
    bucket.tokens = Math.min(perMinute, bucket.tokens + Math.max(0, now - bucket.at) * (perMinute / 60_000));
    bucket.at = now;
    return bucket;
  }

  private secondsShort(bucket: Bucket, perMinute: number): number | undefined {
    if (bucket.tokens >= 1) return undefined;
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / perMinute));
  }
}

const isLimit = (perMinute: number) => perMinute > 0 && Number.isFinite(perMinute);

export class RateLimiter {
  private readonly buckets: TokenBuckets;

  constructor(
    clock: ClockPort,
    private readonly limits: RateLimits,
    maxBuckets = 100_000,
  ) {
    this.buckets = new TokenBuckets(clock, maxBuckets);
  }

  /**
   * Takes one request of `accountId` in `rateClass`; undefined when it may go on, else the seconds until it
   * may (at least 1).
   */
  take(accountId: string, rateClass: RateClass): number | undefined {
    const perMinute = this.limits[rateClass];
    if (!isLimit(perMinute)) return undefined;
    return this.buckets.take(`${accountId}\u0000${rateClass}`, perMinute);
  }

  /** How many buckets are kept (for tests of the bound). */
  get size(): number {
    return this.buckets.size;
  }
}

/**
 * Failed API key attempts allowed per client address and minute, a minute's worth at once: far above what a
 * person mistyping or a client holding a revoked key needs to notice, far below what guessing needs.
 */
export const DEFAULT_FAILED_AUTH_PER_MINUTE = 20;

/**
 * Wrong API keys per client address, as a token bucket of failures: each wrong key takes a token, and an
 * address with none left is refused whatever key it sends (429 TOO_MANY_FAILED_ATTEMPTS with Retry-After)
 * until one is back. A right key is refused too: were it let through, a refusal would itself say "wrong
 * key" and guessing would go on at full speed. Nothing resets the count but time, not even a right key:
 * an attacker with an account of its own could otherwise buy more guesses with it. Only failures make a
 * bucket, so callers that authenticate cost nothing but a look-up, and the buckets are bounded in number.
 */
export class FailedAttempts {
  private readonly buckets: TokenBuckets;

  constructor(
    clock: ClockPort,
    private readonly perMinute: number,
    maxBuckets = 100_000,
  ) {
    this.buckets = new TokenBuckets(clock, maxBuckets);
  }

  /** Seconds until `address` may try a key again (at least 1), or undefined when it may now. */
  lockedFor(address: string): number | undefined {
    return isLimit(this.perMinute) ? this.buckets.waitFor(address, this.perMinute) : undefined;
  }

  /** Counts one wrong key sent from `address`. */
  fail(address: string): void {
    if (isLimit(this.perMinute)) this.buckets.take(address, this.perMinute);
  }

  /** How many addresses are kept (for tests of the bound). */
  get size(): number {
    return this.buckets.size;
  }
}
