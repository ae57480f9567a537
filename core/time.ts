import type { ClockPort } from './ports/clock.port.js';

export function nowIso(clock: ClockPort): string {
  return clock.now().toISOString();
}

/** Today as YYYY-MM-DD in UTC: what a date of birth is compared with. */
export function todayIso(clock: ClockPort): string {
  return clock.now().toISOString().slice(0, 10);
}

export function addMs(clock: ClockPort, ms: number): Date {
  return new Date(clock.now().getTime() + ms);
}

export const MINUTE_MS = 60_000;
