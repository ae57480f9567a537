import type { ClockPort } from '../../core/ports/clock.port.js';

function toMs(value: Date | string): number {
  const ms = typeof value === 'string' ? Date.parse(value) : value.getTime();
  if (!Number.isFinite(ms)) throw new RangeError(`SteppedClock: not a valid instant: ${String(value)}`);
  return ms;
}

/**
 * A clock that moves only when told to, so expiry, leases and retry schedules are tested by stepping
 * time instead of sleeping. It never goes backwards, like the port requires.
 */
export class SteppedClock implements ClockPort {
  private currentMs: number;

  constructor(start: Date | string) {
    this.currentMs = toMs(start);
  }

  /** A fresh Date each call, so a caller mutating it cannot move this clock. */
  now(): Date {
    return new Date(this.currentMs);
  }

  /** Moves the clock forward by `ms` (0 allowed) and returns the new instant. */
  advance(ms: number): Date {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`SteppedClock: cannot advance by ${ms} ms`);
    this.currentMs += ms;
    return this.now();
  }

  /** Jumps to `date`, which may not be earlier than the current instant. */
  set(date: Date | string): Date {
    const ms = toMs(date);
    if (ms < this.currentMs) {
      throw new RangeError(`SteppedClock: cannot go back from ${this.now().toISOString()} to ${new Date(ms).toISOString()}`);
    }
    this.currentMs = ms;
    return this.now();
  }
}
