import type { CoreDeps } from './deps.js';

/** Delivered webhooks, finished jobs and finished network queries are kept this long by default, then pruned. */
export const DEFAULT_RETENTION_DAYS = 7;
/** Rows deleted per statement: small enough that a delete never holds the database for long. */
export const RETENTION_BATCH = 500;

export interface RetentionOptions {
  /** Delivered messages and finished jobs older than this many days go. */
  days: number;
  /** Rows per delete. Default `RETENTION_BATCH`. */
  batch?: number;
  /**
   * Called between two deletes: the host yields there (to the event loop, to delivery and requests), so a
   * large backlog of old rows is worked off in small steps instead of one long hold on the writer.
   */
  pause?: () => Promise<void>;
  /** Most deletes in one sweep per table; the next sweep goes on. Default 200. */
  maxBatches?: number;
}

export interface RetentionReport {
  /** Delivered outbox messages deleted. */
  messages: number;
  /** Finished (done or dead) queue jobs deleted. */
  jobs: number;
  /** Network queries deleted whose every source had ended. */
  networkQueries: number;
  /** Rows of the webhook delivery log (attempts) deleted. */
  attempts: number;
}

/**
 * Deletes delivered webhook messages, webhook delivery log rows, finished queue jobs and finished network queries older than the retention, oldest first, a
 * batch at a time. Pending and parked messages and active jobs are never touched: they are work, not
 * history. Safe to run from several instances at once (each delete takes what is still there).
 */
export async function pruneFinishedWork(deps: Pick<CoreDeps, 'storage' | 'queue' | 'clock'>, options: RetentionOptions): Promise<RetentionReport> {
  const before = new Date(deps.clock.now().getTime() - options.days * 86_400_000).toISOString();
  const batch = options.batch ?? RETENTION_BATCH;
  const maxBatches = options.maxBatches ?? 200;
  const report: RetentionReport = { messages: 0, jobs: 0, networkQueries: 0, attempts: 0 };
  const drain = async (prune: () => Promise<number>, count: (n: number) => void): Promise<void> => {
    for (let round = 0; round < maxBatches; round++) {
      const deleted = await prune();
      count(deleted);
      if (deleted < batch) return;
      await options.pause?.();
    }
  };
  await drain(() => deps.storage.outbox.pruneDelivered(before, batch), (n) => (report.messages += n));
  await drain(() => deps.queue.prune(before, batch), (n) => (report.jobs += n));
  await drain(() => deps.storage.networkQueries.pruneFinished(before, batch), (n) => (report.networkQueries += n));
  await drain(() => deps.storage.webhookAttempts.prune(before, batch), (n) => (report.attempts += n));
  return report;
}
