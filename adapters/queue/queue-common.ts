import { CoreError } from '../../core/errors.js';
import type { ClockPort } from '../../core/ports/clock.port.js';
import type { IdsPort } from '../../core/ports/ids.port.js';
import type { JobLane, JsonValue, NewJob } from '../../core/ports/queue.port.js';

export const DEFAULT_MAX_ATTEMPTS = 10;
export const DEFAULT_BACKOFF = { baseMs: 2_000, maxMs: 3_600_000 } as const;
/** Written as the last error of a job whose worker vanished during its final attempt. */
export const LEASE_EXPIRED_ERROR = 'lease expired during the final attempt';

const MAX_TYPE_LENGTH = 200;
const MAX_KEY_LENGTH = 500;
const MAX_WORKER_LENGTH = 200;
const MAX_ERROR_LENGTH = 4_000;
const MAX_MAX_ATTEMPTS = 1_000;

/** What both queue adapters are built from. */
export interface QueueOptions {
  clock: ClockPort;
  ids: IdsPort;
  /** Attempts of a job that does not say; 10 unless told. */
  defaultMaxAttempts?: number;
  /** Retry delay when `fail` gets no `retryAt`: exponential from `baseMs`, capped at `maxMs`, with jitter. */
  backoff?: { baseMs?: number; maxMs?: number };
  /** Source of jitter, in [0, 1): inject a fixed one in tests so retry times are exact. */
  random?: () => number;
}

/**
 * Delay before retrying after failed attempt number `attempt` (1-based): "equal jitter", half of the
 * exponential step fixed and half random, so retries of jobs that failed together spread out but never
 * come back sooner than half the step.
 */
export function retryDelayMs(attempt: number, backoff: { baseMs: number; maxMs: number }, random: () => number): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 52);
  const step = Math.min(backoff.maxMs, backoff.baseMs * 2 ** exponent);
  const jitter = Math.min(Math.max(random(), 0), 1);
  return Math.round(step / 2 + (step / 2) * jitter);
}

export interface ResolvedQueueOptions {
  clock: ClockPort;
  ids: IdsPort;
  defaultMaxAttempts: number;
  backoff: { baseMs: number; maxMs: number };
  random: () => number;
}

export function resolveQueueOptions(options: QueueOptions): ResolvedQueueOptions {
  const defaultMaxAttempts = options.defaultMaxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  checkMaxAttempts(defaultMaxAttempts);
  const baseMs = options.backoff?.baseMs ?? DEFAULT_BACKOFF.baseMs;
  const maxMs = options.backoff?.maxMs ?? DEFAULT_BACKOFF.maxMs;
  if (!(baseMs >= 0 && maxMs >= baseMs)) throw new CoreError('BAD_REQUEST', 'queue backoff needs 0 <= baseMs <= maxMs');
  return {
    clock: options.clock,
    ids: options.ids,
    defaultMaxAttempts,
    backoff: { baseMs, maxMs },
    // Jitter only spreads retries; it needs no cryptographic quality.
    random: options.random ?? Math.random,
  };
}

function checkMaxAttempts(value: number): void {
  if (!Number.isInteger(value) || value < 1 || value > MAX_MAX_ATTEMPTS) {
    throw new CoreError('BAD_REQUEST', `maxAttempts must be an integer in [1, ${MAX_MAX_ATTEMPTS}]`);
  }
}

/** A new job checked and reduced to what adapters store. */
export interface PreparedJob {
  id: string;
  type: string;
  /** JSON text: both adapters store it serialised, so what a handler gets is the same on each. */
  payload: string;
  key?: string;
  maxAttempts: number;
  runAtMs: number;
  lane: JobLane;
  /** `''` for jobs without one: they share a turn order. */
  fairnessKey: string;
}

/** Lanes as stored: the claim order sorts on it. */
export const LANE_RANK: Record<JobLane, number> = { interactive: 0, background: 1 };
export const LANE_OF_RANK: readonly JobLane[] = ['interactive', 'background'];

export function prepareJob(job: NewJob, options: ResolvedQueueOptions, nowMs: number): PreparedJob {
  if (typeof job.type !== 'string' || job.type.length === 0 || job.type.length > MAX_TYPE_LENGTH) {
    throw new CoreError('BAD_REQUEST', `job type must be a non-empty string of at most ${MAX_TYPE_LENGTH} characters`);
  }
  if (job.key !== undefined && (typeof job.key !== 'string' || job.key.length === 0 || job.key.length > MAX_KEY_LENGTH)) {
    throw new CoreError('BAD_REQUEST', `job key must be a non-empty string of at most ${MAX_KEY_LENGTH} characters`);
  }
  const maxAttempts = job.maxAttempts ?? options.defaultMaxAttempts;
  checkMaxAttempts(maxAttempts);
  let runAtMs = nowMs;
  if (job.runAt !== undefined) {
    runAtMs = Date.parse(job.runAt);
    if (!Number.isFinite(runAtMs)) throw new CoreError('BAD_REQUEST', 'job runAt must be an ISO 8601 instant');
  }
  const payload = JSON.stringify(job.payload);
  if (payload === undefined) throw new CoreError('BAD_REQUEST', 'job payload must be JSON');
  const lane = job.lane ?? 'interactive';
  if (!(lane in LANE_RANK)) throw new CoreError('BAD_REQUEST', 'job lane must be interactive or background');
  if (job.fairnessKey !== undefined && (typeof job.fairnessKey !== 'string' || job.fairnessKey.length > MAX_KEY_LENGTH)) {
    throw new CoreError('BAD_REQUEST', `job fairnessKey must be a string of at most ${MAX_KEY_LENGTH} characters`);
  }
  const prepared: PreparedJob = { id: options.ids.next(), type: job.type, payload, maxAttempts, runAtMs, lane, fairnessKey: job.fairnessKey ?? '' };
  if (job.key !== undefined) prepared.key = job.key;
  return prepared;
}

export function parsePayload(text: string): JsonValue {
  return JSON.parse(text) as JsonValue;
}

export function checkWorkerId(workerId: string): void {
  if (typeof workerId !== 'string' || workerId.length === 0 || workerId.length > MAX_WORKER_LENGTH) {
    throw new CoreError('BAD_REQUEST', `workerId must be a non-empty string of at most ${MAX_WORKER_LENGTH} characters`);
  }
}

export function checkLeaseMs(leaseMs: number): void {
  if (!Number.isInteger(leaseMs) || leaseMs < 1) throw new CoreError('BAD_REQUEST', 'leaseMs must be a positive integer');
}

export function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 0) throw new CoreError('BAD_REQUEST', 'limit must be a non-negative integer');
}

/** The retry instant of a failed attempt: the caller's, or the backoff's. */
export function retryAtMs(failure: { retryAt?: string }, attempt: number, nowMs: number, options: ResolvedQueueOptions): number {
  if (failure.retryAt !== undefined) {
    const ms = Date.parse(failure.retryAt);
    if (!Number.isFinite(ms)) throw new CoreError('BAD_REQUEST', 'retryAt must be an ISO 8601 instant');
    return ms;
  }
  return nowMs + retryDelayMs(attempt, options.backoff, options.random);
}

/** Error texts are kept short: they are for operators reading the dead list, not a log sink. */
export function clipError(error: string): string {
  const text = typeof error === 'string' ? error : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}
