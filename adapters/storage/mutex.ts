/** Who waits for the lock: work a person or an import waits on, or background work (an import's document queries). */
export type MutexRank = 'urgent' | 'background';

/**
 * An async mutex: `run` waits until no other work holds it, so the work of two callers never interleaves.
 * Used to serialise transactions where the engine allows one writer (memory, SQLite). Waiters are served in
 * order within their rank, urgent ones first: with several background document queries queued on SQLite's
 * one writer, an import's batch or a person's request would otherwise wait behind every one of them. So
 * that background work is never starved by a steady stream of urgent work, every BACKGROUND_TURN-th turn
 * goes to the background when some waits.
 */
export class Mutex {
  private held = false;
  private readonly waiting: Record<MutexRank, (() => void)[]> = { urgent: [], background: [] };
  /** Urgent turns in a row handed over while background work waited. */
  private urgentStreak = 0;

  async run<T>(work: () => Promise<T>, rank: MutexRank = 'urgent'): Promise<T> {
    if (this.held) await new Promise<void>((resolve) => this.waiting[rank].push(resolve));
    else this.held = true;
    try {
      return await work();
    } finally {
      this.handOver();
    }
  }

  /** Gives the lock to the next waiter (it stays held), or frees it. */
  private handOver(): void {
    const { urgent, background } = this.waiting;
    const backgroundTurn = background.length > 0 && (urgent.length === 0 || this.urgentStreak >= BACKGROUND_TURN - 1);
    const next = backgroundTurn ? background.shift() : urgent.shift();
    if (backgroundTurn) this.urgentStreak = 0;
    else if (next && background.length > 0) this.urgentStreak += 1;
    if (next) next();
    else this.held = false;
  }
}

/** One turn in this many goes to waiting background work, whatever else waits. */
export const BACKGROUND_TURN = 4;
