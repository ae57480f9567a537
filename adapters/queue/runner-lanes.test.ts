import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { JsonValue } from '../../core/ports/queue.port.js';
import { SteppedClock } from '../clock/stepped.clock.js';
import { SequentialIds } from '../ids/sequential.ids.js';
import { MemoryQueue } from './memory/memory.queue.js';
import { QueueRunner, type RunnerLogger } from './runner.js';
import { currentRank } from '../work-rank.js';

const until = async (condition: () => boolean, timeoutMs = 3_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
};

/** Jobs that run until released, recording how many of each lane run at once. */
function blockingWorld(concurrency: number, backgroundConcurrency: number) {
  const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
  const queue = new MemoryQueue({ clock, ids: new SequentialIds(), random: () => 0.5 });
  const running = { interactive: 0, background: 0 };
  const most = { background: 0 };
  const started: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const run = (lane: 'interactive' | 'background') => async (payload: JsonValue) => {
    running[lane] += 1;
    most.background = Math.max(most.background, running.background);
    started.push(String(payload));
    try {
      await released;
    } finally {
      running[lane] -= 1;
    }
  };
  const runner = new QueueRunner({
    queue,
    clock,
    workerId: 'w',
    concurrency,
    backgroundConcurrency,
    pollMs: 20,
    handlers: { 'bg.query': run('background'), 'user.import': run('interactive') },
  });
  return { queue, runner, running, most, started, release };
}

describe('QueueRunner lanes', () => {
  test('background jobs queued first: a user-facing job still runs at the next claim, while the background ones hold their slots', async () => {
    const world = blockingWorld(2, 1);
    for (let i = 0; i < 20; i++) await world.queue.enqueue({ type: 'bg.query', payload: `bg-${i}`, lane: 'background', fairnessKey: 'acct-a' });
    world.runner.start();
    try {
      await until(() => world.running.background === 1);
      // The second slot stays free for interactive work, however many background jobs are due.
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(world.running.background).toBe(1);
      await world.queue.enqueue({ type: 'user.import', payload: 'import', fairnessKey: 'acct-b' });
      world.runner.wake();
      await until(() => world.running.interactive === 1);
      expect(world.started).toEqual(['bg-0', 'import']);
    } finally {
      world.release();
      await world.runner.stop();
    }
    expect(world.most.background).toBe(1);
  });

  test('property: background jobs never exceed their cap, and interactive jobs queued behind a backlog start at once while slots are free', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 5 }).chain((concurrency) => fc.tuple(fc.constant(concurrency), fc.integer({ min: 1, max: concurrency - 1 }))),
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 1, max: 4 }),
        async ([concurrency, cap], backlog, interactiveCount) => {
          const world = blockingWorld(concurrency, cap);
          for (let i = 0; i < backlog; i++) await world.queue.enqueue({ type: 'bg.query', payload: `bg-${i}`, lane: 'background' });
          world.runner.start();
          try {
            await until(() => world.running.background === Math.min(cap, backlog));
            for (let i = 0; i < interactiveCount; i++) await world.queue.enqueue({ type: 'user.import', payload: `ui-${i}` });
            world.runner.wake();
            const expected = Math.min(interactiveCount, concurrency - Math.min(cap, backlog));
            await until(() => world.running.interactive === expected);
            expect(world.running.background).toBe(Math.min(cap, backlog));
          } finally {
            world.release();
            await world.runner.stop();
          }
          expect(world.most.background).toBeLessThanOrEqual(cap);
        },
      ),
      { numRuns: 30 },
    );
  });

  test('finished jobs are summarised by type at info level; each one is a debug line', async () => {
    const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
    const queue = new MemoryQueue({ clock, ids: new SequentialIds(), random: () => 0.5 });
    const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
    const record = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, fields, message });
    const logger: RunnerLogger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') };
    const runner = new QueueRunner({ queue, clock, workerId: 'w', logger, summaryEveryMs: 60_000, handlers: { a: async () => undefined, b: async () => undefined } });
    for (let i = 0; i < 5; i++) await queue.enqueue({ type: i < 3 ? 'a' : 'b', payload: i });
    runner.start();
    await until(() => lines.filter((line) => line.message === 'job done').length === 5);
    await runner.stop();
    expect(lines.filter((line) => line.message === 'job done').every((line) => line.level === 'debug')).toBe(true);
    expect(lines.filter((line) => line.level === 'info')).toEqual([
      { level: 'info', message: 'jobs finished', fields: { workerId: 'w', jobs: { a: { done: 3, failed: 0 }, b: { done: 2, failed: 0 } } } },
    ]);
  });
});

test('a background-lane job runs at background rank (its writes wait behind urgent ones for the one writer); others run urgent', async () => {
  const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
  const queue = new MemoryQueue({ clock, ids: new SequentialIds(), random: () => 0.5 });
  const ranks: string[] = [];
  const record = (name: string) => async () => void ranks.push(`${name}:${currentRank()}`);
  const runner = new QueueRunner({ queue, clock, workerId: 'w', concurrency: 1, handlers: { 'bg.query': record('bg.query'), 'user.import': record('user.import') } });
  await queue.enqueue({ type: 'bg.query', payload: 1, lane: 'background' });
  await queue.enqueue({ type: 'user.import', payload: 2, lane: 'interactive' });
  await runner.drain();
  expect(ranks.sort()).toEqual(['bg.query:background', 'user.import:urgent']);
  expect(currentRank()).toBe('urgent');
});
