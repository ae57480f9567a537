import { describe, expect, test } from 'vitest';
import { CoreError } from '../../core/errors.js';
import type { JsonValue } from '../../core/ports/queue.port.js';
import { SteppedClock } from '../clock/stepped.clock.js';
import { SequentialIds } from '../ids/sequential.ids.js';
import { MemoryQueue } from './memory/memory.queue.js';
import { QueueRunner, type QueueHandler, type RunnerJob, type RunnerLogger } from './runner.js';

function setup(options: { backoff?: { baseMs: number; maxMs: number } } = {}) {
  const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
  const queue = new MemoryQueue({ clock, ids: new SequentialIds(), random: () => 0.5, ...options });
  return { clock, queue };
}

function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const logger: RunnerLogger = {
    debug: (fields, message) => lines.push({ level: 'debug', fields, message }),
    info: (fields, message) => lines.push({ level: 'info', fields, message }),
    warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
    error: (fields, message) => lines.push({ level: 'error', fields, message }),
  };
  return { lines, logger };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const until = async (condition: () => Promise<boolean> | boolean, timeoutMs = 2_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('QueueRunner.drain', () => {
  test('runs every due job with its payload and claim, and returns how many ran', async () => {
    const { queue, clock } = setup();
    const seen: { payload: JsonValue; attempt: number; type: string }[] = [];
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      handlers: { 'a.job': async (payload, job) => void seen.push({ payload, attempt: job.attempt, type: job.type }) },
    });
    await queue.enqueue({ type: 'a.job', payload: { n: 1 } });
    await queue.enqueue({ type: 'a.job', payload: { n: 2 } });
    expect(await runner.drain()).toBe(2);
    expect(seen).toEqual([
      { payload: { n: 1 }, attempt: 1, type: 'a.job' },
      { payload: { n: 2 }, attempt: 1, type: 'a.job' },
    ]);
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 2 });
    expect(await runner.drain()).toBe(0);
  });

  test('never advances the clock: a job due later waits until the test steps time', async () => {
    const { queue, clock } = setup();
    const ran: number[] = [];
    const runner = new QueueRunner({ queue, clock, workerId: 'w', handlers: { t: async (payload) => void ran.push(payload as number) } });
    const before = clock.now().toISOString();
    await queue.enqueue({ type: 't', payload: 1, runAt: new Date(clock.now().getTime() + 60_000).toISOString() });
    expect(await runner.drain()).toBe(0);
    expect(clock.now().toISOString()).toBe(before);
    clock.advance(60_000);
    expect(await runner.drain()).toBe(1);
    expect(ran).toEqual([1]);
  });

  test('runs jobs that handlers enqueue while it drains', async () => {
    const { queue, clock } = setup();
    const order: string[] = [];
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      handlers: {
        first: async () => {
          order.push('first');
          await queue.enqueue({ type: 'second', payload: null });
        },
        second: async () => void order.push('second'),
      },
    });
    await queue.enqueue({ type: 'first', payload: null });
    expect(await runner.drain()).toBe(2);
    expect(order).toEqual(['first', 'second']);
  });

  test('stops after maxJobs', async () => {
    const { queue, clock } = setup();
    const runner = new QueueRunner({ queue, clock, workerId: 'w', concurrency: 2, handlers: { t: async () => {} } });
    for (let i = 0; i < 5; i++) await queue.enqueue({ type: 't', payload: i });
    expect(await runner.drain({ maxJobs: 3 })).toBe(3);
    expect(await queue.stats()).toMatchObject({ pending: 2, done: 3 });
  });

  test('a handler that throws fails the job: retried after the backoff, dead after the last attempt', async () => {
    const { queue, clock } = setup({ backoff: { baseMs: 1_000, maxMs: 1_000 } });
    let calls = 0;
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      handlers: {
        flaky: async () => {
          calls++;
          throw new CoreError('INTERNAL', 'downstream unavailable');
        },
      },
    });
    await queue.enqueue({ type: 'flaky', payload: null, maxAttempts: 2 });
    expect(await runner.drain()).toBe(1);
    expect(await queue.stats()).toMatchObject({ pending: 1, dead: 0 });
    expect(await runner.drain()).toBe(0);
    clock.advance(750);
    expect(await runner.drain()).toBe(1);
    expect(calls).toBe(2);
    expect(await queue.dead()).toEqual([{ id: expect.any(String), type: 'flaky', payload: null, attempts: 2, lastError: 'INTERNAL: downstream unavailable' }]);
  });

  test('a CoreError with details.retryAt sets the retry time', async () => {
    const { queue, clock } = setup();
    const retryAt = new Date(clock.now().getTime() + 45_000);
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      handlers: {
        later: async () => {
          throw new CoreError('RATE_LIMITED', 'receiver asked to wait', { details: { retryAt } });
        },
      },
    });
    await queue.enqueue({ type: 'later', payload: null });
    await runner.drain();
    expect(await queue.nextRunAt()).toBe(retryAt.toISOString());
  });

  test('a CoreError with details.countsAsAttempt false is retried without using up an attempt, never dead for it', async () => {
    const { queue, clock } = setup();
    let runs = 0;
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      handlers: {
        full: async () => {
          runs++;
          throw new CoreError('STORAGE_FULL', 'no space', { details: { retryAt: clock.now().getTime() + 1_000, countsAsAttempt: false } });
        },
      },
    });
    await queue.enqueue({ type: 'full', payload: null, maxAttempts: 2 });
    for (let i = 0; i < 5; i++) {
      await runner.drain();
      clock.advance(1_000);
    }
    expect(runs).toBe(5);
    expect(await queue.stats()).toMatchObject({ pending: 1, dead: 0 });
  });

  test('runs at most `concurrency` handlers at once', async () => {
    const { queue, clock } = setup();
    let active = 0;
    let peak = 0;
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      concurrency: 3,
      handlers: {
        t: async () => {
          active++;
          peak = Math.max(peak, active);
          await new Promise((resolve) => setTimeout(resolve, 5));
          active--;
        },
      },
    });
    for (let i = 0; i < 10; i++) await queue.enqueue({ type: 't', payload: i });
    expect(await runner.drain()).toBe(10);
    expect(peak).toBe(3);
  });

  test('claims only the types it has handlers for', async () => {
    const { queue, clock } = setup();
    const runner = new QueueRunner({ queue, clock, workerId: 'w', handlers: { known: async () => {} } });
    await queue.enqueue({ type: 'unknown', payload: null });
    await queue.enqueue({ type: 'known', payload: null });
    expect(await runner.drain()).toBe(1);
    expect(await queue.stats()).toEqual({ pending: 1, running: 0, dead: 0, done: 1 });
  });

  test('never logs or stores payloads, nor the messages of non-core errors', async () => {
    const { queue, clock } = setup();
    const { lines, logger } = recordingLogger();
    const phi = 'Jane Q Patient 1961-07-04 123-45-6789';
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      logger,
      handlers: {
        ok: async () => {},
        leaky: async (payload) => {
          throw new Error(`could not insert ${JSON.stringify(payload)}`);
        },
      },
    });
    await queue.enqueue({ type: 'ok', payload: { name: phi } });
    const leakyId = await queue.enqueue({ type: 'leaky', payload: { name: phi }, maxAttempts: 1 });
    await runner.drain();
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(lines)).not.toContain('Jane');
    expect(lines.find((line) => line.fields.jobId === leakyId)).toMatchObject({ level: 'error', fields: { type: 'leaky', outcome: 'dead' } });
    const [dead] = await queue.dead();
    expect(dead?.lastError).toMatch(/^Error/);
    expect(dead?.lastError).not.toContain('Jane');
  });
});

describe('QueueRunner.start/stop', () => {
  test('polls in the background and runs jobs as they come', async () => {
    const { queue, clock } = setup();
    const ran: JsonValue[] = [];
    const runner = new QueueRunner({ queue, clock, workerId: 'w', pollMs: 5, handlers: { t: async (payload) => void ran.push(payload) } });
    runner.start();
    try {
      await queue.enqueue({ type: 't', payload: 1 });
      await until(() => ran.length === 1);
      await queue.enqueue({ type: 't', payload: 2 });
      runner.wake();
      await until(() => ran.length === 2);
      expect(await queue.stats()).toMatchObject({ done: 2 });
    } finally {
      await runner.stop();
    }
  });

  test('stop waits for jobs in flight, then holds no lease', async () => {
    const { queue, clock } = setup();
    const gate = deferred();
    const started = deferred();
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      pollMs: 5,
      handlers: {
        slow: async () => {
          started.resolve();
          await gate.promise;
        },
      },
    });
    await queue.enqueue({ type: 'slow', payload: null });
    runner.start();
    await started.promise;
    let stopped = false;
    const stopping = runner.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 1 });
    expect(runner.running).toBe(false);
  });

  test('stop gives back jobs claimed but not finished, so another worker takes them at once', async () => {
    const { queue, clock } = setup();
    const runner = new QueueRunner({ queue, clock, workerId: 'w', handlers: { t: async () => {} } });
    await queue.enqueue({ type: 't', payload: null });
    // As if the runner had claimed it and its handler never got to run (e.g. a crash between claim and run).
    await queue.claim({ workerId: 'w', limit: 1, leaseMs: 60_000 });
    await runner.stop();
    expect(await queue.claim({ workerId: 'other', limit: 1, leaseMs: 60_000 })).toMatchObject([{ attempt: 1 }]);
  });

  test('stop without start is harmless', async () => {
    const { queue, clock } = setup();
    await new QueueRunner({ queue, clock, workerId: 'w', handlers: {} }).stop();
  });
});

describe('QueueRunner leases', () => {
  test('renews the lease while a long handler runs, so no other worker takes the job', async () => {
    const { queue, clock } = setup();
    const leaseMs = 60;
    let stolen: unknown[] = [];
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      leaseMs,
      handlers: {
        long: async () => {
          for (let i = 0; i < 4; i++) {
            clock.advance(leaseMs / 2);
            // Real time for the heartbeat (every leaseMs / 3 ms) to renew from the stepped clock.
            await new Promise((resolve) => setTimeout(resolve, leaseMs));
            stolen = stolen.concat(await queue.claim({ workerId: 'thief', limit: 1, leaseMs }));
          }
        },
      },
    });
    await queue.enqueue({ type: 'long', payload: null });
    expect(await runner.drain()).toBe(1);
    expect(stolen).toEqual([]);
    expect(await queue.stats()).toMatchObject({ done: 1, running: 0 });
  });

  test('a lost lease aborts the handler’s signal, and its completion is then a no-op', async () => {
    const { queue, clock } = setup();
    const leaseMs = 90;
    let aborted = false;
    const runner = new QueueRunner({
      queue,
      clock,
      workerId: 'w',
      leaseMs,
      handlers: {
        slow: async (_payload, job: RunnerJob) => {
          // The lease runs out and another worker takes the job before the first renewal.
          clock.advance(leaseMs);
          expect(await queue.claim({ workerId: 'other', limit: 1, leaseMs: 60_000 })).toHaveLength(1);
          await Promise.race([
            new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true })),
            new Promise<void>((resolve) => setTimeout(resolve, 2_000)),
          ]);
          aborted = job.signal.aborted;
        },
      },
    });
    await queue.enqueue({ type: 'slow', payload: null });
    await runner.drain();
    expect(aborted).toBe(true);
    expect(await queue.stats()).toEqual({ pending: 0, running: 1, dead: 0, done: 0 });
  });

  test('rejects nonsensical settings', () => {
    const { queue, clock } = setup();
    const handlers: Record<string, QueueHandler> = {};
    expect(() => new QueueRunner({ queue, clock, workerId: 'w', handlers, concurrency: 0 })).toThrow(RangeError);
    expect(() => new QueueRunner({ queue, clock, workerId: 'w', handlers, leaseMs: 0 })).toThrow(RangeError);
    expect(() => new QueueRunner({ queue, clock, workerId: 'w', handlers, pollMs: 0 })).toThrow(RangeError);
  });
});
