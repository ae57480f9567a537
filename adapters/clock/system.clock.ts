import type { ClockPort } from '../../core/ports/clock.port.js';

/**
 * The machine's clock. The port promises time never goes backwards, but the wall clock can (NTP
 * steps, manual changes), so a reading earlier than the last one is held at the last one.
 */
export class SystemClock implements ClockPort {
  private lastMs = 0;

  now(): Date {
    const ms = Math.max(Date.now(), this.lastMs);
    this.lastMs = ms;
    return new Date(ms);
  }
}
