import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { DeliveryLoop } from './background.js';

/** A dispatcher whose polls claim what the test says, counted. */
function dispatcher(claims: number[]) {
  const polls: number[] = [];
  return {
    polls,
    poll: async () => {
      polls.push(Date.now());
      return claims.shift() ?? 0;
    },
    pass: async () => ({ delivered: 0, failed: 0, parked: 0, deferred: 0 }),
    drain: async () => undefined,
  };
}

/** Lets the loop's promises run without moving the clock. */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('the webhook delivery loop', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  test('after a claim that found nothing, many wakes make one claim a moment later, not one claim each', async () => {
    const fake = dispatcher([]);
    const loop = new DeliveryLoop(fake, 500, undefined);
    loop.start();
    await settle();
    expect(fake.polls).toEqual([0]);
    // A busy endpoint's writes wake the loop again and again: each would be a turn of the writer.
    for (let i = 0; i < 20; i++) {
      loop.wake();
      await vi.advanceTimersByTimeAsync(2);
    }
    expect(fake.polls.length).toBe(1);
    await vi.advanceTimersByTimeAsync(10);
    expect(fake.polls).toEqual([0, 50]);
    await loop.stop();
  });

  test('claims again at once while claims bring messages, and after the poll interval when nothing wakes it', async () => {
    const fake = dispatcher([3, 2]);
    const loop = new DeliveryLoop(fake, 500, undefined);
    loop.start();
    await settle();
    expect(fake.polls).toEqual([0, 0, 0]);
    await vi.advanceTimersByTimeAsync(499);
    expect(fake.polls.length).toBe(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(fake.polls).toEqual([0, 0, 0, 500]);
    await loop.stop();
  });
});
