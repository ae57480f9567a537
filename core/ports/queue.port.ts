export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * `interactive`: work a person is waiting for (an import, a dry run, a query they started); claimed before
 * any due `background` job. `background`: work the service sets off by itself (the document queries of an
 * import), run when interactive work leaves room.
 */
export type JobLane = 'interactive' | 'background';

export const JOB_LANES: readonly JobLane[] = ['interactive', 'background'];

export interface NewJob {
  /** Handler name, e.g. `bulk.process`. */
  type: string;
  payload: JsonValue;
  /** Earliest run time, ISO 8601; now when absent. */
  runAt?: string;
  /**
   * Deduplication key: while a job with the same key is pending or running, enqueueing another one
   * returns the existing job's id instead of adding a second job. When the new one asks for the
   * interactive lane and the existing one is a pending background job, the existing job moves to the
   * interactive lane (a person now waits for it).
   */
  key?: string;
  /** Attempts before the job is dead-lettered; the adapter's default (e.g. 10) when absent. */
  maxAttempts?: number;
  /** `interactive` when absent. */
  lane?: JobLane;
  /**
   * Whose work this is (an account id). Within a lane, keys take turns: a key with 100,000 jobs queued
   * holds back a key that queues one job for at most a few claims, not for the whole backlog. Jobs without
   * a key share one.
   */
  fairnessKey?: string;
}

export interface ClaimedJob {
  id: string;
  type: string;
  payload: JsonValue;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  /** The lease ends at this instant (ISO); after it another worker may claim the job again. */
  leaseUntil: string;
  lane: JobLane;
}

/** A failed attempt as the queue records it (see `QueuePort.fail`). */
export interface JobFailure {
  /** Kept as the job's last error; holds no PHI. */
  error: string;
  /** When to try again, ISO; the adapter's backoff when absent. */
  retryAt?: string;
  /** `false`: the attempt is given back (see `QueuePort.fail`). Counts when absent. */
  countsAsAttempt?: boolean;
}

export interface QueueStats {
  pending: number;
  running: number;
  dead: number;
  done: number;
}

/**
 * A durable job queue with at-least-once delivery. A job is `pending` until claimed, `running` while its
 * lease holds, then `done`, back to `pending` for a retry, or `dead` after its last attempt. Time comes
 * from the clock port the adapter was built with, so a stepped clock drives leases and retries in tests.
 */
export interface QueuePort {
  /** Adds a job (see `NewJob.key` for deduplication). Returns the job id. */
  enqueue(job: NewJob): Promise<string>;
  /**
   * Claims up to `limit` due jobs (runAt <= now, pending, or running with an expired lease), optionally
   * only of the given types and lanes, leasing them to `workerId` for `leaseMs`. Order: interactive jobs
   * before background ones; within a lane, fairness keys take turns (see `NewJob.fairnessKey`), and a key's
   * own jobs go oldest runAt first. A job is never leased to two workers at once, across processes sharing
   * the same database.
   */
  claim(options: { workerId: string; limit: number; leaseMs: number; types?: readonly string[]; lanes?: readonly JobLane[] }): Promise<ClaimedJob[]>;
  /** Marks the job done. A no-op when the lease was lost (another worker took it over). */
  complete(jobId: string, workerId: string): Promise<void>;
  /**
   * Records a failed attempt. When attempts remain, the job returns to `pending` at `retryAt` (ISO; the
   * adapter's backoff when absent) and `retrying` is returned; otherwise it becomes `dead`.
   * `countsAsAttempt: false` (a cause outside the job, such as a full storage) gives the attempt back: the
   * job's attempt count is what it was before this claim, and it returns to `pending` whatever that count
   * is, never `dead`. A no-op returning `lost` when the lease was lost.
   */
  fail(jobId: string, workerId: string, failure: JobFailure): Promise<'retrying' | 'dead' | 'lost'>;
  /** Extends the lease of a running job; `false` when the lease was lost. */
  extendLease(jobId: string, workerId: string, leaseMs: number): Promise<boolean>;
  /** Gives back every lease the worker holds, so another worker can take the jobs at once (shutdown). */
  releaseAll(workerId: string): Promise<void>;
  /**
   * Ends at once the leases of a worker known to be dead (its process is gone): its running jobs become
   * claimable now, exactly as when their leases run out, so the claim that took them counts as an attempt
   * and a job that kills its worker every time still ends `dead`. Other workers' jobs are untouched; a
   * worker holding nothing is a no-op. Idempotent.
   */
  expireLeases(workerId: string): Promise<void>;
  /** Earliest runAt among pending jobs (ISO), or `undefined`: lets a runner sleep until then. */
  nextRunAt(): Promise<string | undefined>;
  stats(): Promise<QueueStats>;
  /**
   * Deletes up to `limit` finished jobs (done or dead) whose last change is before `before` (ISO), oldest
   * first, and returns how many: fewer than `limit` means nothing more is due. Pending and running jobs are
   * never touched. Counts in `stats` and the `dead` list shrink accordingly.
   */
  prune(before: string, limit: number): Promise<number>;
  /** Dead jobs, oldest first, with their last error. */
  dead(limit?: number): Promise<{ id: string; type: string; payload: JsonValue; attempts: number; lastError?: string }[]>;
}
