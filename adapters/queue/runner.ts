import { isCoreError } from '../../core/errors.js';
import type { ClockPort } from '../../core/ports/clock.port.js';
import type { ClaimedJob, JobFailure, JobLane, JsonValue, QueuePort } from '../../core/ports/queue.port.js';
import { runAtRank } from '../work-rank.js';

/** What a handler gets beside its payload: the claim, and a signal raised if the lease is lost. */
export type RunnerJob = ClaimedJob & { signal: AbortSignal };

export type QueueHandler = (payload: JsonValue, job: RunnerJob) => Promise<void>;

/** The subset of pino's interface the runner uses; ids, types and counts only, never payloads. */
export interface RunnerLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export interface QueueRunnerOptions {
  queue: QueuePort;
  clock: ClockPort;
  /** Handler per job type; the runner only claims jobs of these types. */
  handlers: Record<string, QueueHandler>;
  /** Unique per process (e.g. `hostname:pid`): leases are held in its name. */
  workerId: string;
  /** Jobs run at once; 1 unless told. */
  concurrency?: number;
  /**
   * Background jobs run at once, at most. `concurrency - 1` unless told (at least 1), so one slot is always
   * left for interactive work: an import started while a backlog of background queries runs is claimed at
   * the next poll, not after the backlog.
   */
  backgroundConcurrency?: number;
  /** How often the runner logs what it finished (counts by job type), ms; 60 s unless told. */
  summaryEveryMs?: number;
  /** Lease per claim; renewed while a handler runs. 60 s unless told. */
  leaseMs?: number;
  /** Longest sleep between polls when nothing is due. 1 s unless told. */
  pollMs?: number;
  logger?: RunnerLogger;
  /**
   * Called after each job's outcome is recorded (done, or failed whether retried or dead). Lets a host
   * start what a job may have made due at once, e.g. wake its webhook delivery loop when an import has
   * stored its `completed` message, instead of waiting for the loop's next poll. Must not throw.
   */
  onJobFinished?: (job: ClaimedJob, outcome: 'done' | 'failed') => void;
}

const silent: RunnerLogger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * Where a handler asked to be retried: `details.retryAt` of a CoreError, as an ISO string, a Date or
 * epoch milliseconds. Anything else leaves the queue's backoff in charge.
 */
function retryAtOf(error: unknown): string | undefined {
  if (!isCoreError(error)) return undefined;
  const value = error.details?.retryAt;
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : typeof value === 'number' ? value : Number.NaN;
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

/**
 * Whether the failure uses up one of the job's attempts: not when a CoreError says `details.countsAsAttempt:
 * false` (a cause outside the job, such as a full storage, which must never make it dead).
 */
function countsAsAttempt(error: unknown): boolean {
  return !(isCoreError(error) && error.details?.countsAsAttempt === false);
}

/**
 * The error text kept on the job and logged. The message of a CoreError is written by the core for
 * people and holds no PHI (house rule); other errors may come from libraries that echo their input (a
 * database error quoting a row), so only their name and code are kept.
 */
function describe(error: unknown): string {
  if (isCoreError(error)) return `${error.code}: ${error.message}`;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return `${error.name}${typeof code === 'string' || typeof code === 'number' ? ` [${code}]` : ''} (message withheld: may contain PHI)`;
  }
  return 'non-error thrown';
}

/**
 * Runs queued jobs with their handlers: `start()` polls in the background (the service), `drain()` runs
 * whatever is due now and returns (tests and the in-memory sandbox). Leases are renewed while a handler
 * runs; a handler that throws is recorded with `queue.fail`, and a CoreError with `details.retryAt`
 * chooses its retry time (with `details.countsAsAttempt: false`, a retry that does not use up an attempt).
 * Logs carry job ids, types and attempts, never payloads (they may hold PHI).
 */
export class QueueRunner {
  private readonly queue: QueuePort;
  private readonly clock: ClockPort;
  private readonly handlers: Record<string, QueueHandler>;
  private readonly types: string[];
  private readonly workerId: string;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly logger: RunnerLogger;
  private readonly onJobFinished: QueueRunnerOptions['onJobFinished'];

  private readonly inFlight = new Set<Promise<void>>();
  private readonly backgroundConcurrency: number;
  private backgroundInFlight = 0;
  private readonly summaryEveryMs: number;
  private summaryTimer: ReturnType<typeof setInterval> | undefined;
  /** Outcomes since the last summary line, by job type: one line a minute instead of one per job. */
  private finished = new Map<string, { done: number; failed: number }>();
  private loop: Promise<void> | undefined;
  private stopping = false;
  private wakeSleeper: (() => void) | undefined;

  constructor(options: QueueRunnerOptions) {
    this.queue = options.queue;
    this.clock = options.clock;
    this.handlers = { ...options.handlers };
    this.types = Object.keys(this.handlers);
    this.workerId = options.workerId;
    this.concurrency = options.concurrency ?? 1;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.pollMs = options.pollMs ?? 1_000;
    this.logger = options.logger ?? silent;
    this.onJobFinished = options.onJobFinished;
    this.backgroundConcurrency = options.backgroundConcurrency ?? Math.max(1, this.concurrency - 1);
    this.summaryEveryMs = options.summaryEveryMs ?? 60_000;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) throw new RangeError('QueueRunner: concurrency must be a positive integer');
    if (!Number.isInteger(this.backgroundConcurrency) || this.backgroundConcurrency < 1) {
      throw new RangeError('QueueRunner: backgroundConcurrency must be a positive integer');
    }
    if (!Number.isInteger(this.leaseMs) || this.leaseMs < 1) throw new RangeError('QueueRunner: leaseMs must be a positive integer');
    if (!(this.pollMs > 0)) throw new RangeError('QueueRunner: pollMs must be positive');
  }

  get running(): boolean {
    return this.loop !== undefined;
  }

  /** Starts polling in the background. Calling it while running does nothing. */
  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.summaryTimer = setInterval(() => this.logSummary(), this.summaryEveryMs);
    this.summaryTimer.unref();
    this.loop = this.pollLoop().catch((error: unknown) => {
      this.logger.error({ workerId: this.workerId, error: describe(error) }, 'queue runner stopped on an unexpected error');
    });
  }

  /** Wakes a sleeping poll loop at once (after an enqueue, say), instead of at its next poll. */
  wake(): void {
    this.wakeSleeper?.();
  }

  /**
   * Stops claiming, waits for the jobs in flight to finish, then gives back every lease this worker still
   * holds so another worker can take those jobs at once. Safe to call when not started.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.loop;
    this.loop = undefined;
    await Promise.all([...this.inFlight]);
    await this.queue.releaseAll(this.workerId);
    clearInterval(this.summaryTimer);
    this.summaryTimer = undefined;
    this.logSummary();
    this.stopping = false;
  }

  /** One info line with what finished since the last one, by job type; nothing when nothing did. */
  private logSummary(): void {
    if (this.finished.size === 0) return;
    const jobs = Object.fromEntries(this.finished);
    this.finished = new Map();
    this.logger.info({ workerId: this.workerId, jobs }, 'jobs finished');
  }

  private count(type: string, outcome: 'done' | 'failed'): void {
    let counts = this.finished.get(type);
    if (!counts) {
      counts = { done: 0, failed: 0 };
      this.finished.set(type, counts);
    }
    counts[outcome] += 1;
  }

  /**
   * Runs due jobs, up to `concurrency` at a time, until none is due (jobs that become due by being
   * enqueued meanwhile are run too) or `maxJobs` have run. Never advances the clock: a retry scheduled
   * later waits for the caller to step time. Returns how many jobs ran.
   */
  async drain(options: { maxJobs?: number } = {}): Promise<number> {
    const maxJobs = options.maxJobs ?? Number.POSITIVE_INFINITY;
    let ran = 0;
    while (ran < maxJobs && !this.stopping) {
      const jobs = await this.claim(Math.min(this.concurrency, maxJobs - ran));
      if (jobs.length === 0) break;
      // Tracked like polled jobs, so a stop() during a drain waits for them too.
      await Promise.all(jobs.map((job) => this.track(this.runJob(job), job.lane)));
      ran += jobs.length;
    }
    return ran;
  }

  /**
   * Up to `limit` jobs: interactive ones first, then background ones while fewer than
   * `backgroundConcurrency` of those run (counting the ones this claim takes).
   */
  private async claim(limit: number): Promise<ClaimedJob[]> {
    if (this.types.length === 0 || limit < 1) return [];
    const base = { workerId: this.workerId, leaseMs: this.leaseMs, types: this.types };
    const backgroundRoom = this.backgroundConcurrency - this.backgroundInFlight;
    if (backgroundRoom <= 0) return this.queue.claim({ ...base, limit, lanes: ['interactive'] });
    const interactive = await this.queue.claim({ ...base, limit, lanes: ['interactive'] });
    const room = Math.min(limit - interactive.length, backgroundRoom);
    if (room <= 0) return interactive;
    return [...interactive, ...(await this.queue.claim({ ...base, limit: room, lanes: ['background'] }))];
  }

  private async pollLoop(): Promise<void> {
    while (!this.stopping) {
      const free = this.concurrency - this.inFlight.size;
      let claimed = 0;
      if (free > 0) {
        try {
          const jobs = await this.claim(free);
          claimed = jobs.length;
          for (const job of jobs) this.track(this.runJob(job), job.lane);
        } catch (error) {
          // The database may be restarting: keep polling rather than die.
          this.logger.warn({ workerId: this.workerId, error: describe(error) }, 'queue claim failed; will retry');
        }
      }
      if (this.stopping) break;
      // A full claim means more may be due right now; otherwise sleep until a slot frees, the next job
      // is due, a poll interval passes, or someone wakes us.
      if (claimed > 0 && claimed === free) continue;
      // With the background slots full, due background jobs must not make the loop spin: it waits for a
      // job to finish, a wake (new interactive work), or the poll interval.
      const backgroundFull = this.backgroundInFlight >= this.backgroundConcurrency;
      await this.sleep(await this.sleepMs(free > 0 && !backgroundFull));
    }
  }

  private async sleepMs(hadFreeSlot: boolean): Promise<number> {
    if (!hadFreeSlot) return this.pollMs;
    try {
      const next = await this.queue.nextRunAt();
      if (next === undefined) return this.pollMs;
      return Math.min(this.pollMs, Math.max(0, Date.parse(next) - this.clock.now().getTime()));
    } catch {
      return this.pollMs;
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      // Any finished job frees a slot, so the loop should look again.
      const anyFinished = Promise.race([...this.inFlight]);
      let settled = false;
      function done() {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve();
      }
      this.wakeSleeper = done;
      if (this.inFlight.size > 0) void anyFinished.then(done, done);
    }).finally(() => {
      this.wakeSleeper = undefined;
    });
  }

  private track(running: Promise<void>, lane: JobLane): Promise<void> {
    this.inFlight.add(running);
    if (lane === 'background') this.backgroundInFlight += 1;
    void running.finally(() => {
      this.inFlight.delete(running);
      if (lane === 'background') this.backgroundInFlight -= 1;
    });
    return running;
  }

  /** Never rejects: every outcome ends up on the queue or, when even that fails, in the log. */
  private async runJob(job: ClaimedJob): Promise<void> {
    const handler = this.handlers[job.type];
    const fields = { jobId: job.id, type: job.type, attempt: job.attempt, workerId: this.workerId };
    const lease = new AbortController();
    const heartbeat = this.startHeartbeat(job, lease);
    let outcome: { ok: true } | { ok: false; error: unknown };
    try {
      if (!handler) throw new Error(`no handler for job type ${job.type}`);
      // A background job's writes wait behind urgent ones (imports, requests) for the database's one writer.
      await runAtRank(job.lane === 'background' ? 'background' : 'urgent', () => handler(job.payload, { ...job, signal: lease.signal }));
      outcome = { ok: true };
    } catch (error) {
      outcome = { ok: false, error };
    } finally {
      clearInterval(heartbeat);
      // Tells a renewal still in flight that the job is over, so it does not report a lost lease.
      if (!lease.signal.aborted) lease.abort(new Error('job finished'));
    }
    if (!outcome.ok) {
      this.count(job.type, 'failed');
      await this.recordFailure(job, outcome.error, fields);
      this.notifyFinished(job, 'failed');
      return;
    }
    try {
      await this.queue.complete(job.id, this.workerId);
      this.logger.debug(fields, 'job done');
      this.count(job.type, 'done');
    } catch (error) {
      // The lease will expire and the job run again: handlers are idempotent, so at-least-once holds.
      this.logger.error({ ...fields, error: describe(error) }, 'could not mark a job done');
    }
    this.notifyFinished(job, 'done');
  }

  private notifyFinished(job: ClaimedJob, outcome: 'done' | 'failed'): void {
    try {
      this.onJobFinished?.(job, outcome);
    } catch (error) {
      this.logger.warn({ jobId: job.id, type: job.type, error: describe(error) }, 'onJobFinished threw');
    }
  }

  private async recordFailure(job: ClaimedJob, error: unknown, fields: Record<string, unknown>): Promise<void> {
    const failure: JobFailure = { error: describe(error) };
    const retryAt = retryAtOf(error);
    if (retryAt !== undefined) failure.retryAt = retryAt;
    if (!countsAsAttempt(error)) failure.countsAsAttempt = false;
    const code = isCoreError(error) ? error.code : undefined;
    try {
      const outcome = await this.queue.fail(job.id, this.workerId, failure);
      const log = outcome === 'dead' ? this.logger.error : this.logger.warn;
      log.call(this.logger, { ...fields, outcome, code }, outcome === 'dead' ? 'job dead after its last attempt' : 'job failed');
    } catch (failError) {
      // The lease will expire and the job run again: at-least-once holds even when this write fails.
      this.logger.error({ ...fields, code, error: describe(failError) }, 'could not record a job failure');
    }
  }

  /** Renews the lease at a third of its length while the handler runs; a lost lease aborts the signal. */
  private startHeartbeat(job: ClaimedJob, lease: AbortController): ReturnType<typeof setInterval> {
    const timer = setInterval(() => {
      this.queue.extendLease(job.id, this.workerId, this.leaseMs).then(
        (held) => {
          if (!held && !lease.signal.aborted) {
            this.logger.warn({ jobId: job.id, type: job.type, workerId: this.workerId }, 'job lease lost');
            lease.abort(new Error('lease lost'));
          }
        },
        // A failed renewal is retried at the next beat; the lease may still hold.
        () => undefined,
      );
    }, Math.max(1, Math.floor(this.leaseMs / 3)));
    timer.unref();
    return timer;
  }
}
