import { CoreError } from '../errors.js';

/**
 * Renders for people (consolidated data and C-CDA documents as HTML or PDF) take the event loop and
 * memory for as long as they run, so however many callers ask, at most `concurrency` run at once, in
 * every account together. Others wait their turn in order, at most `queue` of them; one more request is
 * refused at once with 503 BUSY and Retry-After rather than kept waiting behind seconds of renders. A
 * queued job always waits: the job runner already bounds how many there are, and refusing one would only
 * reschedule the same work. One instance per process, made by the runtime and passed in `CoreDeps`.
 */
export class RenderSlots {
  private running = 0;
  /** Waiters in arrival order; each gets the slot of a render that ends. */
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly concurrency: number,
    readonly queue: number,
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`RenderSlots: concurrency must be a whole number of 1 or more, not ${concurrency}`);
    if (!Number.isInteger(queue) || queue < 0) throw new Error(`RenderSlots: queue must be a whole number of 0 or more, not ${queue}`);
  }

  /**
   * Runs `work` in a slot: at once when one is free, else after those waiting before it. For a request,
   * throws BUSY when `queue` are waiting already; a job waits whatever the line.
   */
  async run<T>(work: () => Promise<T>, caller: 'request' | 'job' = 'request'): Promise<T> {
    if (this.running < this.concurrency) {
      this.running++;
    } else {
      if (caller === 'request' && this.waiting.length >= this.queue) {
        throw new CoreError('BUSY', 'Too many documents are being rendered right now; try again shortly', { details: { retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS } });
      }
      // The slot is handed over by the render that ends, so a newcomer never takes it from a waiter.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  /** Renders running and waiting now (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}

/** A render takes a fraction of a second to a few seconds: a second later a slot is usually free. */
const BUSY_RETRY_AFTER_SECONDS = 1;

/** Renders at once by default: two keep the API answering while a render runs (renders share its thread). */
export const DEFAULT_RENDER_CONCURRENCY = 2;
/** Renders that may wait for a slot by default: a few seconds of work at most; more are told to come back. */
export const DEFAULT_RENDER_QUEUE = 8;

/** `work` in one of `deps.renders`' slots, or at once when the host set no cap. */
export function inRenderSlot<T>(deps: { renders?: RenderSlots }, work: () => Promise<T>, caller: 'request' | 'job' = 'request'): Promise<T> {
  return deps.renders ? deps.renders.run(work, caller) : work();
}
