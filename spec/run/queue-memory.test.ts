import { test } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryQueue } from '../../adapters/queue/memory/memory.queue.js';
import { defineQueueContract } from '../ports/queue.contract.js';

defineQueueContract({
  test,
  make: async (options) => {
    const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
    return { queue: new MemoryQueue({ ...options, clock, ids: new SequentialIds() }), clock, close: async () => {} };
  },
  numRuns: 150,
});
