import { describe, expect, test } from 'vitest';
import { CoreError } from '../../core/errors.js';
import { SteppedClock } from '../clock/stepped.clock.js';
import { SequentialIds } from '../ids/sequential.ids.js';
import { MemoryQueue } from './memory/memory.queue.js';
import { QueueRunner } from './runner.js';

describe('QueueRunner onJobFinished', () => {
  test('is told of every job once its outcome is recorded, done or failed; a throwing hook does not stop the runner', async () => {
    const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
    const queue = new MemoryQueue({ clock, ids: new SequentialIds(), random: () => 0.5 });
    const seen: { type: string; outcome: string; statsAtCall: { pending: number; done: number } }[] = [];
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      handlers: {
        ok: async () => undefined,
        bad: async () => {
          throw new CoreError('INTERNAL', 'nope');
        },
      },
      onJobFinished: (job, outcome) => {
        void queue.stats().then((stats) => seen.push({ type: job.type, outcome, statsAtCall: { pending: stats.pending, done: stats.done } }));
        if (job.type === 'ok') throw new Error('a careless hook');
      },
    });
    await queue.enqueue({ type: 'ok', payload: null });
    await queue.enqueue({ type: 'bad', payload: null, maxAttempts: 2 });
    await queue.enqueue({ type: 'ok', payload: null });
    expect(await runner.drain()).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen.map(({ type, outcome }) => [type, outcome])).toEqual([
      ['ok', 'done'],
      ['bad', 'failed'],
      ['ok', 'done'],
    ]);
    // Called after the queue recorded the outcome: the first `ok` is already done when the hook runs.
    expect(seen[0]!.statsAtCall.done).toBe(1);
  });
});
