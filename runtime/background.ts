import type { Logger } from 'pino';
import { describeError } from '../core/error-facts.js';
import type { DeliveryReport } from '../core/webhooks/delivery.js';
import type { WebhookDispatcher } from '../core/webhooks/dispatcher.js';
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

/** At least this long between a claim that found nothing and the next, however often the loop is woken. */
const DRY_CLAIM_INTERVAL_MS = 50;

/**
 * Webhook delivery in the background or on demand, through one dispatcher per process (several processes
 * share the outbox through its claims). The loop polls: each poll starts lanes for the endpoints with
 * deliverable messages that have none running, and never waits for the lanes it started, so a slow
 * endpoint's lane delays no other's. It polls again at once after a poll that claimed something, when woken
 * (a write, a lane that ended; no sooner than DRY_CLAIM_INTERVAL_MS after a poll that found nothing), or
 * after `pollMs`.
 */
export class DeliveryLoop {
  private loop: Promise<void> | undefined;
  private stopped = true;
  private wakeUp: (() => void) | undefined;
  /** A wake that came while a poll ran: the loop polls again instead of sleeping. */
  private woken = false;

  constructor(
    private readonly dispatcher: Pick<WebhookDispatcher, 'poll' | 'pass' | 'drain'>,
    private readonly pollMs: number,
    private readonly logger: Logger | undefined,
  ) {}

  /** A poll, then every lane until it ends (lanes the loop runs included): what `settle` waits for. */
  pass(): Promise<DeliveryReport> {
    return this.dispatcher.pass();
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = (async () => {
      while (!this.stopped) {
        this.woken = false;
        let claimed = 0;
        try {
          claimed = await this.dispatcher.poll();
        } catch (error) {
          this.logger?.warn({ err: describeError(error) }, 'webhook delivery poll failed; will retry');
        }
        if (claimed === 0 && !this.stopped) {
          const dryAt = Date.now();
          if (!this.woken) {
            await new Promise<void>((done) => {
              const timer = setTimeout(done, this.pollMs);
              this.wakeUp = () => {
                clearTimeout(timer);
                done();
              };
            });
            this.wakeUp = undefined;
          }
          // Woken soon after a claim that found nothing: the wakes of a busy endpoint's writes come faster
          // than its lane takes them, and each claim is a turn of the database's writer; they are taken
          // together a moment later.
          const rest = Math.min(this.pollMs, DRY_CLAIM_INTERVAL_MS) - (Date.now() - dryAt);
          if (rest > 0 && !this.stopped) await new Promise<void>((done) => setTimeout(done, rest));
        }
      }
    })();
  }

  wake(): void {
    if (this.wakeUp) this.wakeUp();
    else this.woken = true;
  }

  /** Stops polling; the lanes hand back what they hold and finish their requests in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loop;
    this.loop = undefined;
    await this.dispatcher.drain();
  }
}
