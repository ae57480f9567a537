import { afterEach, describe, expect, test, vi } from 'vitest';
import { SteppedClock } from './stepped.clock.js';
import { SystemClock } from './system.clock.js';

describe('SteppedClock', () => {
  test('starts at the given instant, from a Date or an ISO string', () => {
    expect(new SteppedClock('2026-01-02T03:04:05.678Z').now().toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(new SteppedClock(new Date(0)).now().getTime()).toBe(0);
  });

  test('stands still until advanced or set', () => {
    const clock = new SteppedClock('2026-01-01T00:00:00Z');
    expect(clock.now().getTime()).toBe(clock.now().getTime());
    expect(clock.advance(1500).toISOString()).toBe('2026-01-01T00:00:01.500Z');
    expect(clock.now().toISOString()).toBe('2026-01-01T00:00:01.500Z');
    expect(clock.set('2026-01-01T01:00:00Z').toISOString()).toBe('2026-01-01T01:00:00.000Z');
    clock.advance(0);
    expect(clock.now().toISOString()).toBe('2026-01-01T01:00:00.000Z');
  });

  test('never goes backwards', () => {
    const clock = new SteppedClock('2026-01-01T00:00:00Z');
    expect(() => clock.advance(-1)).toThrow(RangeError);
    expect(() => clock.advance(Number.NaN)).toThrow(RangeError);
    expect(() => clock.set('2025-12-31T23:59:59.999Z')).toThrow(RangeError);
    expect(clock.now().toISOString()).toBe('2026-01-01T00:00:00.000Z');
  });

  test('refuses an invalid start or target', () => {
    expect(() => new SteppedClock('not a date')).toThrow(RangeError);
    expect(() => new SteppedClock('2026-01-01T00:00:00Z').set('nope')).toThrow(RangeError);
  });

  test('a returned Date is a copy: mutating it does not move the clock', () => {
    const clock = new SteppedClock('2026-01-01T00:00:00Z');
    clock.now().setFullYear(1999);
    expect(clock.now().toISOString()).toBe('2026-01-01T00:00:00.000Z');
  });
});

describe('SystemClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  test('follows the system time', () => {
    vi.useFakeTimers({ now: new Date('2026-05-01T00:00:00Z'), toFake: ['Date'] });
    const clock = new SystemClock();
    expect(clock.now().toISOString()).toBe('2026-05-01T00:00:00.000Z');
    vi.setSystemTime(new Date('2026-05-01T00:00:02Z'));
    expect(clock.now().toISOString()).toBe('2026-05-01T00:00:02.000Z');
  });

  test('holds its last reading when the system time steps back', () => {
    vi.useFakeTimers({ now: new Date('2026-05-01T00:00:10Z'), toFake: ['Date'] });
    const clock = new SystemClock();
    clock.now();
    vi.setSystemTime(new Date('2026-05-01T00:00:05Z'));
    expect(clock.now().toISOString()).toBe('2026-05-01T00:00:10.000Z');
    vi.setSystemTime(new Date('2026-05-01T00:00:11Z'));
    expect(clock.now().toISOString()).toBe('2026-05-01T00:00:11.000Z');
  });
});
