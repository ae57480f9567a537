const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Waits before attempt 1, 2, ... 8, as Standard Webhooks and Svix schedule them: immediately, then 5 s,
 * 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 27.6 h in all). The short second step lets a receiver that
 * dropped one request (a deploy, a blip) catch up in seconds without holding its stream back for long.
 */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

export interface RetryScheduleOptions {
  /** Wait before each attempt; `delaysMs[0]` is the first attempt (usually 0). Its length is the attempt budget. */
  delaysMs?: readonly number[];
  /**
   * Spread of the jitter as a fraction of the delay: a delay d becomes d * (1 + jitter * (2r - 1)) for the
   * caller's random r in [0, 1). Spreads retries of many messages that failed together. Default 0.1.
   */
  jitter?: number;
  /**
   * Longest Retry-After honoured, so a receiver cannot push a message past the schedule's horizon.
   * Default 10 h, the longest step of the default schedule.
   */
  maxRetryAfterMs?: number;
}

export interface RetrySchedule {
  readonly delaysMs: readonly number[];
  /** Attempts before a message is parked. */
  readonly maxAttempts: number;
  readonly jitter: number;
  readonly maxRetryAfterMs: number;
  /**
   * When to try again after `attempts` failed attempts (1 after the first failure), or `undefined` when the
   * budget is spent and the message must be parked. `random` is in [0, 1) (the caller's source: the core has
   * no randomness). A receiver's Retry-After (ms) wins when it asks for a longer wait, up to `maxRetryAfterMs`.
   */
  nextAttemptAt(attempts: number, now: Date, random: number, retryAfterMs?: number): Date | undefined;
}

export function createRetrySchedule(options: RetryScheduleOptions = {}): RetrySchedule {
  const delaysMs = [...(options.delaysMs ?? DEFAULT_RETRY_DELAYS_MS)];
  const jitter = options.jitter ?? 0.1;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 10 * HOUR;
  if (delaysMs.length === 0) throw new RangeError('retry schedule: at least one attempt is needed');
  if (delaysMs.some((d) => !Number.isFinite(d) || d < 0)) throw new RangeError('retry schedule: delays must be finite and >= 0');
  if (!(jitter >= 0 && jitter < 1)) throw new RangeError('retry schedule: jitter must be in [0, 1)');
  if (!(maxRetryAfterMs >= 0)) throw new RangeError('retry schedule: maxRetryAfterMs must be >= 0');

  return {
    delaysMs,
    maxAttempts: delaysMs.length,
    jitter,
    maxRetryAfterMs,
    nextAttemptAt(attempts, now, random, retryAfterMs) {
      if (!Number.isInteger(attempts) || attempts < 1) throw new RangeError(`retry schedule: attempts must be >= 1, got ${attempts}`);
      if (!(random >= 0 && random < 1)) throw new RangeError(`retry schedule: random must be in [0, 1), got ${random}`);
      const base = delaysMs[attempts];
      if (base === undefined) return undefined;
      const jittered = Math.round(base * (1 + jitter * (2 * random - 1)));
      const asked = retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > 0 ? Math.min(retryAfterMs, maxRetryAfterMs) : 0;
      return new Date(now.getTime() + Math.max(jittered, asked));
    },
  };
}

export const defaultRetrySchedule: RetrySchedule = createRetrySchedule();

/** `defaultRetrySchedule.nextAttemptAt`: the default schedule as a plain function. */
export function nextAttemptAt(attempts: number, now: Date, random: number, retryAfterMs?: number): Date | undefined {
  return defaultRetrySchedule.nextAttemptAt(attempts, now, random, retryAfterMs);
}
