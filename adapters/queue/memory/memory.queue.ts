import type { ClaimedJob, JobFailure, JobLane, JsonValue, NewJob, QueuePort, QueueStats } from '../../../core/ports/queue.port.js';
import {
  LANE_RANK,
  LEASE_EXPIRED_ERROR,
  checkLeaseMs,
  checkLimit,
  checkWorkerId,
  clipError,
  parsePayload,
  prepareJob,
  resolveQueueOptions,
  retryAtMs,
  type QueueOptions,
  type ResolvedQueueOptions,
} from '../queue-common.js';

interface ActiveJob {
  id: string;
  type: string;
  payload: string;
  key?: string;
  status: 'pending' | 'running';
  attempts: number;
  maxAttempts: number;
  runAtMs: number;
  leaseUntilMs?: number;
  lockedBy?: string;
  lastError?: string;
  lane: JobLane;
  fairnessKey: string;
  /** The job's turn in its lane (see `turnFor`). */
  turn: number;
}

interface DeadJob {
  id: string;
  type: string;
  payload: string;
  attempts: number;
  lastError?: string;
  diedAtMs: number;
}

/** Claim order: lane, then turn, then runAt, then id (the port's order). */
function byClaimOrder(a: ActiveJob, b: ActiveJob): number {
  return LANE_RANK[a.lane] - LANE_RANK[b.lane] || a.turn - b.turn || a.runAtMs - b.runAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Dead jobs kept for `dead()`: the oldest are forgotten past this, so a sandbox never grows without bound. */
const MAX_DEAD_JOBS = 10_000;

/**
 * The queue in process memory, for tests and the sandbox: the same contract as the SQL queue (leases,
 * retries, dead letters, key dedupe), without durability. Every method runs to completion without
 * awaiting, so calls from concurrent async code never interleave halfway.
 */
export class MemoryQueue implements QueuePort {
  private readonly options: ResolvedQueueOptions;
  /** Pending and running jobs: the only ones claim looks at. */
  private readonly active = new Map<string, ActiveJob>();
  private readonly activeByKey = new Map<string, string>();
  private readonly deadJobs = new Map<string, DeadJob>();
  private doneCount = 0;
  /** Per lane, the latest turn claimed: where the lane's round stands. */
  private readonly laneTurn: Record<JobLane, number> = { interactive: 0, background: 0 };
  /** Per lane and fairness key with active jobs: how many, and the last turn given. Emptied as keys go idle. */
  private readonly keyTurns = new Map<string, { active: number; last: number }>();

  constructor(options: QueueOptions) {
    this.options = resolveQueueOptions(options);
  }

  async enqueue(job: NewJob): Promise<string> {
    const prepared = prepareJob(job, this.options, this.options.clock.now().getTime());
    if (prepared.key !== undefined) {
      const existing = this.activeByKey.get(prepared.key);
      if (existing !== undefined) {
        const job = this.active.get(existing)!;
        if (prepared.lane === 'interactive' && job.lane === 'background' && job.status === 'pending') this.promote(job);
        return existing;
      }
    }
    const active: ActiveJob = {
      id: prepared.id,
      type: prepared.type,
      payload: prepared.payload,
      status: 'pending',
      attempts: 0,
      maxAttempts: prepared.maxAttempts,
      runAtMs: prepared.runAtMs,
      lane: prepared.lane,
      fairnessKey: prepared.fairnessKey,
      turn: this.nextTurn(prepared.lane, prepared.fairnessKey),
    };
    if (prepared.key !== undefined) {
      active.key = prepared.key;
      this.activeByKey.set(prepared.key, prepared.id);
    }
    this.active.set(prepared.id, active);
    return prepared.id;
  }

  async claim(options: { workerId: string; limit: number; leaseMs: number; types?: readonly string[]; lanes?: readonly JobLane[] }): Promise<ClaimedJob[]> {
    checkWorkerId(options.workerId);
    checkLimit(options.limit);
    checkLeaseMs(options.leaseMs);
    const nowMs = this.options.clock.now().getTime();
    this.buryAbandonedFinalAttempts(nowMs);
    if (options.limit === 0) return [];
    const types = options.types === undefined ? undefined : new Set(options.types);
    const lanes = options.lanes === undefined ? undefined : new Set(options.lanes);
    const due = [...this.active.values()]
      .filter((job) => (types === undefined || types.has(job.type)) && (lanes === undefined || lanes.has(job.lane)) && this.isClaimable(job, nowMs))
      .sort(byClaimOrder)
      .slice(0, options.limit);
    const leaseUntilMs = nowMs + options.leaseMs;
    return due.map((job) => {
      job.status = 'running';
      job.lockedBy = options.workerId;
      job.leaseUntilMs = leaseUntilMs;
      job.attempts += 1;
      this.laneTurn[job.lane] = Math.max(this.laneTurn[job.lane], job.turn);
      return {
        id: job.id,
        type: job.type,
        payload: parsePayload(job.payload),
        attempt: job.attempts,
        maxAttempts: job.maxAttempts,
        leaseUntil: new Date(leaseUntilMs).toISOString(),
        lane: job.lane,
      };
    });
  }

  async complete(jobId: string, workerId: string): Promise<void> {
    const job = this.heldBy(jobId, workerId);
    if (!job) return;
    this.finish(job);
    this.doneCount += 1;
  }

  async fail(jobId: string, workerId: string, failure: JobFailure): Promise<'retrying' | 'dead' | 'lost'> {
    const job = this.heldBy(jobId, workerId);
    if (!job) return 'lost';
    const nowMs = this.options.clock.now().getTime();
    const error = clipError(failure.error);
    const counts = failure.countsAsAttempt !== false;
    if (counts && job.attempts >= job.maxAttempts) {
      this.bury(job, error);
      return 'dead';
    }
    job.runAtMs = retryAtMs(failure, job.attempts, nowMs, this.options);
    if (!counts) job.attempts = Math.max(0, job.attempts - 1);
    job.status = 'pending';
    job.lastError = error;
    delete job.lockedBy;
    delete job.leaseUntilMs;
    return 'retrying';
  }

  async extendLease(jobId: string, workerId: string, leaseMs: number): Promise<boolean> {
    checkLeaseMs(leaseMs);
    const job = this.heldBy(jobId, workerId);
    if (!job) return false;
    job.leaseUntilMs = this.options.clock.now().getTime() + leaseMs;
    return true;
  }

  async releaseAll(workerId: string): Promise<void> {
    for (const job of this.active.values()) {
      if (job.status !== 'running' || job.lockedBy !== workerId) continue;
      // A released job was never run to an outcome, so its claim does not count as an attempt.
      job.status = 'pending';
      job.attempts = Math.max(0, job.attempts - 1);
      delete job.lockedBy;
      delete job.leaseUntilMs;
    }
  }

  async expireLeases(workerId: string): Promise<void> {
    const nowMs = this.options.clock.now().getTime();
    for (const job of this.active.values()) {
      if (job.status === 'running' && job.lockedBy === workerId) job.leaseUntilMs = Math.min(job.leaseUntilMs ?? nowMs, nowMs);
    }
  }

  async nextRunAt(): Promise<string | undefined> {
    let earliest: number | undefined;
    for (const job of this.active.values()) {
      if (job.status === 'pending' && (earliest === undefined || job.runAtMs < earliest)) earliest = job.runAtMs;
    }
    return earliest === undefined ? undefined : new Date(earliest).toISOString();
  }

  async stats(): Promise<QueueStats> {
    let pending = 0;
    let running = 0;
    for (const job of this.active.values()) {
      if (job.status === 'pending') pending += 1;
      else running += 1;
    }
    return { pending, running, dead: this.deadJobs.size, done: this.doneCount };
  }

  /** Done jobs are not kept here (only counted), so only dead ones are pruned. */
  async prune(before: string, limit: number): Promise<number> {
    checkLimit(limit);
    const cutMs = Date.parse(before);
    const expired = [...this.deadJobs.values()]
      .filter((job) => job.diedAtMs < cutMs)
      .sort((a, b) => a.diedAtMs - b.diedAtMs)
      .slice(0, limit);
    for (const job of expired) this.deadJobs.delete(job.id);
    return expired.length;
  }

  async dead(limit = 100): Promise<{ id: string; type: string; payload: JsonValue; attempts: number; lastError?: string }[]> {
    checkLimit(limit);
    return [...this.deadJobs.values()]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, limit)
      .map((job) => {
        const entry: { id: string; type: string; payload: JsonValue; attempts: number; lastError?: string } = {
          id: job.id,
          type: job.type,
          payload: parsePayload(job.payload),
          attempts: job.attempts,
        };
        if (job.lastError !== undefined) entry.lastError = job.lastError;
        return entry;
      });
  }

  private isClaimable(job: ActiveJob, nowMs: number): boolean {
    if (job.status === 'pending') return job.runAtMs <= nowMs;
    return job.leaseUntilMs !== undefined && job.leaseUntilMs <= nowMs && job.attempts < job.maxAttempts;
  }

  /** A worker that died during the last attempt used it up: the job is dead rather than run once more. */
  private buryAbandonedFinalAttempts(nowMs: number): void {
    for (const job of this.active.values()) {
      if (job.status === 'running' && job.leaseUntilMs !== undefined && job.leaseUntilMs <= nowMs && job.attempts >= job.maxAttempts) {
        this.bury(job, LEASE_EXPIRED_ERROR);
      }
    }
  }

  private heldBy(jobId: string, workerId: string): ActiveJob | undefined {
    const job = this.active.get(jobId);
    return job && job.status === 'running' && job.lockedBy === workerId ? job : undefined;
  }

  /**
   * A key's next job takes the turn after its previous active one, but never one the lane has already
   * passed: so a key that queues a job behind another key's long backlog is served within a round, and a
   * key cannot bank turns while it is idle.
   */
  private nextTurn(lane: JobLane, fairnessKey: string): number {
    const name = `${lane}\u0000${fairnessKey}`;
    const key = this.keyTurns.get(name);
    const turn = Math.max(key ? key.last + 1 : 0, this.laneTurn[lane]);
    this.keyTurns.set(name, { active: (key?.active ?? 0) + 1, last: turn });
    return turn;
  }

  /** Moves a pending background job to the interactive lane, at the turn it would get if queued now. */
  private promote(job: ActiveJob): void {
    this.release(job);
    job.lane = 'interactive';
    job.turn = this.nextTurn(job.lane, job.fairnessKey);
  }

  /** Forgets the job's place in its key's turns. */
  private release(job: ActiveJob): void {
    const name = `${job.lane}\u0000${job.fairnessKey}`;
    const key = this.keyTurns.get(name);
    if (key && --key.active <= 0) this.keyTurns.delete(name);
  }

  private finish(job: ActiveJob): void {
    this.active.delete(job.id);
    if (job.key !== undefined && this.activeByKey.get(job.key) === job.id) this.activeByKey.delete(job.key);
    this.release(job);
  }

  private bury(job: ActiveJob, error: string): void {
    this.finish(job);
    this.deadJobs.set(job.id, { id: job.id, type: job.type, payload: job.payload, attempts: job.attempts, lastError: error, diedAtMs: this.options.clock.now().getTime() });
    if (this.deadJobs.size > MAX_DEAD_JOBS) this.deadJobs.delete(this.deadJobs.keys().next().value!);
  }
}
