import type { Logger } from 'pino';
import { describeError } from '../core/error-facts.js';
import type { DeliveryReport } from '../core/webhooks/deliver.js';
import type { RetentionReport } from '../core/retention.js';

/** How often the background prunes delivered webhooks and finished jobs past their retention. */
const RETENTION_SWEEP_MS = 10 * 60_000;

/** Prunes past-retention history now and then; one sweep at a time, never one that holds the writer long. */
export class RetentionSweeper {
  private timers: NodeJS.Timeout[] = [];
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly sweep: () => Promise<RetentionReport>,
    private readonly logger: Logger | undefined,
  ) {}

  start(): void {
    if (this.timers.length > 0) return;
    this.stopped = false;
    const tick = () => {
      this.running = this.running.then(async () => {
        if (this.stopped) return;
        try {
          const report = await this.sweep();
          if (report.messages + report.jobs > 0) this.logger?.info(report, 'pruned delivered webhooks and finished jobs past retention');
        } catch (error) {
          this.logger?.warn({ err: describeError(error) }, 'retention sweep failed; will retry');
        }
      });
    };
    // The first sweep soon after start, not ten minutes later: a restarted service catches up at once.
    this.timers = [setTimeout(tick, 5_000), setInterval(tick, RETENTION_SWEEP_MS)];
    for (const timer of this.timers) timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
    await this.running;
  }
}

/**
 * One webhook delivery pass at a time in this process, in the background or on demand (several processes
 * share the outbox through its claims).
 */
export class DeliveryLoop {
  private tail: Promise<unknown> = Promise.resolve();
  private loop: Promise<void> | undefined;
  private stopped = true;
  private wakeUp: (() => void) | undefined;

  constructor(
    private readonly deliver: () => Promise<DeliveryReport>,
    private readonly pollMs: number,
    private readonly logger: Logger | undefined,
  ) {}

  pass(): Promise<DeliveryReport> {
    const result = this.tail.then(() => this.deliver());
    this.tail = result.catch(() => undefined);
    return result;
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = (async () => {
      while (!this.stopped) {
        let attempted = 0;
        try {
          const report = await this.pass();
          attempted = report.delivered + report.failed + report.parked;
        } catch (error) {
          this.logger?.warn({ err: describeError(error) }, 'webhook delivery pass failed; will retry');
        }
        if (attempted === 0 && !this.stopped) {
          await new Promise<void>((done) => {
            const timer = setTimeout(done, this.pollMs);
            this.wakeUp = () => {
              clearTimeout(timer);
              done();
            };
          });
          this.wakeUp = undefined;
        }
      }
    })();
  }

  wake(): void {
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loop;
    this.loop = undefined;
    await this.tail;
  }
}
