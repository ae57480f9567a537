import fc from 'fast-check';
import { expect } from 'vitest';
import type { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { isCoreError } from '../../core/errors.js';
import type { ClaimedJob, JsonValue, QueuePort } from '../../core/ports/queue.port.js';

type ContractTest = (name: string, fn: () => Promise<void>, timeout?: number) => void;

/** Adapter settings a test may ask for; every queue adapter takes them (see adapters/queue/queue-common.ts). */
export interface QueueFixtureOptions {
  defaultMaxAttempts?: number;
  backoff?: { baseMs?: number; maxMs?: number };
  random?: () => number;
}

export interface QueueFixture {
  queue: QueuePort;
  /** The clock the queue was built with; the suite steps it. */
  clock: SteppedClock;
  /** Releases what the fixture holds (connections, schema). */
  close(): Promise<void>;
}

export interface QueueContractOptions {
  test: ContractTest;
  /** A fresh, empty, isolated queue on every call, on a stepped clock. */
  make: (options?: QueueFixtureOptions) => Promise<QueueFixture>;
  /** fast-check runs of the interleaving property (each run makes a fresh queue). */
  numRuns?: number;
}

const LEASE = 1_000;

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'expected a rejection').toBeDefined();
  expect(isCoreError(error) ? error.code : error).toBe(code);
}

const ids = (jobs: ClaimedJob[]) => jobs.map((job) => job.id);

export function defineQueueContract(options: QueueContractOptions): void {
  const { make } = options;

  /** Runs `body` with a fresh fixture and always closes it. */
  const test = (name: string, body: (fixture: QueueFixture) => Promise<void>, fixtureOptions?: QueueFixtureOptions) =>
    options.test(name, async () => {
      const fixture = await make(fixtureOptions);
      try {
        await body(fixture);
      } finally {
        await fixture.close();
      }
    });

  test('enqueue, claim, complete: a job runs once with its payload and ends done', async ({ queue, clock }) => {
    const payload = { requestId: 'r-1', rows: [1, 2, 3], nested: { ok: true, none: null, text: 'é ✓' } };
    const id = await queue.enqueue({ type: 'bulk.process', payload });
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(await queue.stats()).toEqual({ pending: 1, running: 0, dead: 0, done: 0 });

    const [job, ...rest] = await queue.claim({ workerId: 'w1', limit: 5, leaseMs: LEASE });
    expect(rest).toEqual([]);
    expect(job).toEqual({
      id,
      type: 'bulk.process',
      payload,
      attempt: 1,
      maxAttempts: 10,
      leaseUntil: new Date(clock.now().getTime() + LEASE).toISOString(),
      lane: 'interactive',
    });
    expect(await queue.stats()).toEqual({ pending: 0, running: 1, dead: 0, done: 0 });
    expect(await queue.claim({ workerId: 'w2', limit: 5, leaseMs: LEASE })).toEqual([]);

    await queue.complete(id, 'w1');
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 1 });
    clock.advance(10 * LEASE);
    expect(await queue.claim({ workerId: 'w2', limit: 5, leaseMs: LEASE })).toEqual([]);
    await queue.complete(id, 'w1');
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 1 });
  });

  test('payloads of every JSON shape come back equal, and as copies', async ({ queue, clock }) => {
    const payloads: JsonValue[] = ['text', 42, 1.5, true, false, null, [], {}, [1, 'a', { b: [null] }], { deep: { deeper: { deepest: 'x' } } }];
    for (const payload of payloads) await queue.enqueue({ type: 't', payload });
    const claimed = await queue.claim({ workerId: 'w', limit: payloads.length, leaseMs: LEASE });
    expect(claimed.map((job) => job.payload)).toEqual(payloads);
    const object = claimed.find((job) => JSON.stringify(job.payload) === '{"deep":{"deeper":{"deepest":"x"}}}')!;
    (object.payload as { deep: unknown }).deep = 'mutated';
    await queue.fail(object.id, 'w', { error: 'again', retryAt: clock.now().toISOString() });
    const [again] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    expect(again?.payload).toEqual({ deep: { deeper: { deepest: 'x' } } });
  });

  test('a job is not claimed before its runAt; nextRunAt tells when it will be', async ({ queue, clock }) => {
    const start = clock.now().getTime();
    expect(await queue.nextRunAt()).toBeUndefined();
    const runAt = new Date(start + 60_000).toISOString();
    const id = await queue.enqueue({ type: 't', payload: 1, runAt });
    expect(await queue.nextRunAt()).toBe(runAt);
    expect(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE })).toEqual([]);
    clock.advance(59_999);
    expect(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE })).toEqual([]);
    clock.advance(1);
    expect(ids(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE }))).toEqual([id]);
    expect(await queue.nextRunAt()).toBeUndefined();
  });

  test('a runAt in the past is due at once; runAt defaults to now', async ({ queue, clock }) => {
    const past = await queue.enqueue({ type: 't', payload: 'past', runAt: new Date(clock.now().getTime() - 5_000).toISOString() });
    const now = await queue.enqueue({ type: 't', payload: 'now' });
    expect(await queue.nextRunAt()).toBe(new Date(clock.now().getTime() - 5_000).toISOString());
    expect(ids(await queue.claim({ workerId: 'w', limit: 5, leaseMs: LEASE }))).toEqual([past, now]);
  });

  test('one key\'s due jobs are claimed in the order they were queued, a job not yet due waits, at most `limit`', async ({ queue, clock }) => {
    const t0 = clock.now().getTime();
    const at = (s: number) => new Date(t0 - s * 1000).toISOString();
    const later = await queue.enqueue({ type: 't', payload: 'later', runAt: new Date(t0 + 1).toISOString() });
    const c = await queue.enqueue({ type: 't', payload: 'c', runAt: at(1) });
    const a = await queue.enqueue({ type: 't', payload: 'a', runAt: at(3) });
    const b1 = await queue.enqueue({ type: 't', payload: 'b1', runAt: at(2) });
    const b2 = await queue.enqueue({ type: 't', payload: 'b2', runAt: at(2) });
    expect(ids(await queue.claim({ workerId: 'w', limit: 2, leaseMs: LEASE }))).toEqual([c, a]);
    expect(ids(await queue.claim({ workerId: 'w', limit: 10, leaseMs: LEASE }))).toEqual([b1, b2]);
    clock.advance(1);
    expect(ids(await queue.claim({ workerId: 'w', limit: 10, leaseMs: LEASE }))).toEqual([later]);
    expect(await queue.claim({ workerId: 'w', limit: 0, leaseMs: LEASE })).toEqual([]);
  });

  test('interactive jobs are claimed before background jobs queued earlier; lanes can be chosen', async ({ queue }) => {
    const background = [];
    for (let i = 0; i < 5; i++) background.push(await queue.enqueue({ type: 't', payload: i, lane: 'background', fairnessKey: 'acct-a' }));
    const interactive = await queue.enqueue({ type: 't', payload: 'now', fairnessKey: 'acct-a' });
    const [first] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    expect(first).toMatchObject({ id: interactive, lane: 'interactive' });
    expect(await queue.claim({ workerId: 'w', limit: 5, leaseMs: LEASE, lanes: ['interactive'] })).toEqual([]);
    expect(await queue.claim({ workerId: 'w', limit: 5, leaseMs: LEASE, lanes: [] })).toEqual([]);
    const rest = await queue.claim({ workerId: 'w', limit: 10, leaseMs: LEASE, lanes: ['background'] });
    expect(ids(rest)).toEqual(background);
    expect(rest.every((job) => job.lane === 'background')).toBe(true);
  });

  test('queueing a pending background job\'s key again as interactive moves that job to the interactive lane', async ({ queue }) => {
    const backlog = [];
    for (let i = 0; i < 5; i++) backlog.push(await queue.enqueue({ type: 't', payload: i, lane: 'background', fairnessKey: 'a' }));
    const wanted = await queue.enqueue({ type: 't', payload: 'wanted', lane: 'background', fairnessKey: 'a', key: 'query:7' });
    expect(await queue.enqueue({ type: 't', payload: 'again', lane: 'background', key: 'query:7' })).toBe(wanted);
    expect(await queue.enqueue({ type: 't', payload: 'asked', key: 'query:7' })).toBe(wanted);
    const [first] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    expect(first).toMatchObject({ id: wanted, lane: 'interactive', payload: 'wanted' });
    expect(ids(await queue.claim({ workerId: 'w', limit: 10, leaseMs: LEASE }))).toEqual(backlog);
  });

  test('fairness keys take turns: a key that queues one job behind another key\'s backlog is served within a round', async ({ queue }) => {
    const backlog = [];
    for (let i = 0; i < 30; i++) backlog.push(await queue.enqueue({ type: 't', payload: i, lane: 'background', fairnessKey: 'big' }));
    // Some of the backlog is under way when the small key arrives.
    expect(ids(await queue.claim({ workerId: 'w', limit: 3, leaseMs: LEASE }))).toEqual(backlog.slice(0, 3));
    const small = await queue.enqueue({ type: 't', payload: 'small', lane: 'background', fairnessKey: 'small' });
    const next = ids(await queue.claim({ workerId: 'w', limit: 2, leaseMs: LEASE }));
    expect(next).toContain(small);
    // The big key keeps its own order.
    const after = ids(await queue.claim({ workerId: 'w', limit: 100, leaseMs: LEASE }));
    expect([...next, ...after].filter((id) => id !== small)).toEqual(backlog.slice(3));
  });

  test('property: whatever is queued, claims follow lane, then turns by key, and nothing is claimed twice or lost', async ({ queue }) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ lane: fc.constantFrom<'interactive' | 'background'>('interactive', 'background'), key: fc.constantFrom('a', 'b', 'c') }), { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 1, max: 6 }),
        async (jobs, limit) => {
          const queued = new Map<string, { lane: string; key: string; order: number }>();
          for (const [order, job] of jobs.entries()) {
            queued.set(await queue.enqueue({ type: 'prop', payload: order, lane: job.lane, fairnessKey: job.key }), { lane: job.lane, key: job.key, order });
          }
          const claimed: string[] = [];
          for (let round = 0; round < 100 && claimed.length < jobs.length; round++) {
            const batch = await queue.claim({ workerId: 'w', limit, leaseMs: LEASE, types: ['prop'] });
            for (const job of batch) await queue.complete(job.id, 'w');
            claimed.push(...ids(batch));
          }
          expect(new Set(claimed).size).toBe(claimed.length);
          expect(new Set(claimed)).toEqual(new Set(queued.keys()));
          // Every interactive job before any background job, as all were queued before the first claim.
          const lanes = claimed.map((id) => queued.get(id)!.lane);
          expect(lanes.lastIndexOf('interactive')).toBeLessThan(lanes.includes('background') ? lanes.indexOf('background') : Number.POSITIVE_INFINITY);
          // Each key's jobs of a lane in the order they were queued.
          for (const lane of ['interactive', 'background']) {
            for (const key of ['a', 'b', 'c']) {
              const orders = claimed.map((id) => queued.get(id)!).filter((job) => job.lane === lane && job.key === key).map((job) => job.order);
              expect(orders).toEqual([...orders].sort((x, y) => x - y));
            }
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  test('claims can be limited to some job types', async ({ queue }) => {
    const a = await queue.enqueue({ type: 'a', payload: 1 });
    const b = await queue.enqueue({ type: 'b', payload: 2 });
    const c = await queue.enqueue({ type: 'c', payload: 3 });
    expect(await queue.claim({ workerId: 'w', limit: 5, leaseMs: LEASE, types: [] })).toEqual([]);
    expect(ids(await queue.claim({ workerId: 'w', limit: 5, leaseMs: LEASE, types: ['c', 'a'] }))).toEqual([a, c]);
    expect(await queue.claim({ workerId: 'w', limit: 5, leaseMs: LEASE, types: ['a', 'c', 'x'] })).toEqual([]);
    expect(ids(await queue.claim({ workerId: 'w', limit: 5, leaseMs: LEASE }))).toEqual([b]);
  });

  test('an expired lease lets another worker reclaim; the first worker then can no longer complete, fail or extend', async ({ queue, clock }) => {
    const id = await queue.enqueue({ type: 't', payload: 'x' });
    expect(ids(await queue.claim({ workerId: 'w1', limit: 1, leaseMs: LEASE }))).toEqual([id]);
    clock.advance(LEASE - 1);
    expect(await queue.claim({ workerId: 'w2', limit: 1, leaseMs: LEASE })).toEqual([]);
    clock.advance(1);
    const [reclaimed] = await queue.claim({ workerId: 'w2', limit: 1, leaseMs: LEASE });
    expect(reclaimed).toMatchObject({ id, attempt: 2, leaseUntil: new Date(clock.now().getTime() + LEASE).toISOString() });

    await queue.complete(id, 'w1');
    expect(await queue.stats()).toEqual({ pending: 0, running: 1, dead: 0, done: 0 });
    expect(await queue.fail(id, 'w1', { error: 'late' })).toBe('lost');
    expect(await queue.extendLease(id, 'w1', LEASE)).toBe(false);
    expect(await queue.stats()).toEqual({ pending: 0, running: 1, dead: 0, done: 0 });
    expect(await queue.claim({ workerId: 'w3', limit: 1, leaseMs: LEASE })).toEqual([]);

    await queue.complete(id, 'w2');
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 1 });
  });

  test('a worker whose lease ran out but was not taken over may still complete', async ({ queue, clock }) => {
    const id = await queue.enqueue({ type: 't', payload: 'x' });
    await queue.claim({ workerId: 'w1', limit: 1, leaseMs: LEASE });
    clock.advance(LEASE * 3);
    await queue.complete(id, 'w1');
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 1 });
    expect(await queue.claim({ workerId: 'w2', limit: 1, leaseMs: LEASE })).toEqual([]);
  });

  test('completing or failing a job that was never claimed, or does not exist, changes nothing', async ({ queue }) => {
    const id = await queue.enqueue({ type: 't', payload: 'x' });
    await queue.complete(id, 'w1');
    expect(await queue.fail(id, 'w1', { error: 'e' })).toBe('lost');
    expect(await queue.extendLease(id, 'w1', LEASE)).toBe(false);
    await queue.complete('00000000-0000-7000-8000-00000000ffff', 'w1');
    expect(await queue.fail('00000000-0000-7000-8000-00000000ffff', 'w1', { error: 'e' })).toBe('lost');
    expect(await queue.stats()).toEqual({ pending: 1, running: 0, dead: 0, done: 0 });
  });

  test('extendLease keeps the job from other workers past its first lease', async ({ queue, clock }) => {
    const id = await queue.enqueue({ type: 't', payload: 'x' });
    await queue.claim({ workerId: 'w1', limit: 1, leaseMs: LEASE });
    clock.advance(LEASE - 100);
    expect(await queue.extendLease(id, 'w1', LEASE)).toBe(true);
    clock.advance(LEASE - 1);
    expect(await queue.claim({ workerId: 'w2', limit: 1, leaseMs: LEASE })).toEqual([]);
    clock.advance(1);
    expect(ids(await queue.claim({ workerId: 'w2', limit: 1, leaseMs: LEASE }))).toEqual([id]);
    expect(await queue.extendLease(id, 'w1', LEASE)).toBe(false);
  });

  test('fail with retryAt retries at that time, counting attempts', async ({ queue, clock }) => {
    const id = await queue.enqueue({ type: 't', payload: 'x', maxAttempts: 5 });
    await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    const retryAt = new Date(clock.now().getTime() + 30_000).toISOString();
    expect(await queue.fail(id, 'w', { error: 'HIE timeout', retryAt })).toBe('retrying');
    expect(await queue.stats()).toEqual({ pending: 1, running: 0, dead: 0, done: 0 });
    expect(await queue.nextRunAt()).toBe(retryAt);
    clock.advance(29_999);
    expect(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE })).toEqual([]);
    clock.advance(1);
    const [again] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    expect(again).toMatchObject({ id, attempt: 2, maxAttempts: 5 });
    expect(await queue.fail(id, 'w', { error: 'again', retryAt: new Date(0).toISOString() })).toBe('retrying');
    expect(ids(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE }))).toEqual([id]);
  });

  test('after maxAttempts failures the job is dead, listed with its last error, and never claimed again', async ({ queue, clock }) => {
    const id = await queue.enqueue({ type: 'webhook.deliver', payload: { messageId: 'm-1' }, maxAttempts: 3 });
    const outcomes: string[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const [job] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
      expect(job).toMatchObject({ id, attempt, maxAttempts: 3 });
      outcomes.push(await queue.fail(id, 'w', { error: `failure ${attempt}`, retryAt: clock.now().toISOString() }));
    }
    expect(outcomes).toEqual(['retrying', 'retrying', 'dead']);
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 1, done: 0 });
    expect(await queue.dead()).toEqual([{ id, type: 'webhook.deliver', payload: { messageId: 'm-1' }, attempts: 3, lastError: 'failure 3' }]);
    clock.advance(3_600_000);
    expect(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE })).toEqual([]);
    expect(await queue.nextRunAt()).toBeUndefined();
    expect(await queue.fail(id, 'w', { error: 'late' })).toBe('lost');
  });

  test('a failure that does not count as an attempt gives it back: the job is retried at retryAt however often, never dead for it', async ({ queue, clock }) => {
    const id = await queue.enqueue({ type: 'bulk.process', payload: { requestId: 'r-1' }, maxAttempts: 2 });
    const [first] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    expect(first).toMatchObject({ id, attempt: 1 });
    // Its first attempt counted; then, on the last one, far more tries than maxAttempts, none counted.
    expect(await queue.fail(id, 'w', { error: 'counted', retryAt: clock.now().toISOString() })).toBe('retrying');
    for (let i = 0; i < 5; i++) {
      const [job] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
      expect(job).toMatchObject({ id, attempt: 2, maxAttempts: 2 });
      const retryAt = new Date(clock.now().getTime() + 30_000).toISOString();
      expect(await queue.fail(id, 'w', { error: 'STORAGE_FULL: full', retryAt, countsAsAttempt: false })).toBe('retrying');
      expect(await queue.nextRunAt()).toBe(retryAt);
      expect(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE })).toEqual([]);
      clock.advance(30_000);
    }
    expect(await queue.stats()).toEqual({ pending: 1, running: 0, dead: 0, done: 0 });
    // A counted failure of the last attempt still makes it dead.
    await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    expect(await queue.fail(id, 'w', { error: 'counted again' })).toBe('dead');
    expect(await queue.dead()).toEqual([expect.objectContaining({ id, attempts: 2, lastError: 'counted again' })]);
  });

  test('maxAttempts 1 means one try', async ({ queue }) => {
    const id = await queue.enqueue({ type: 't', payload: 'x', maxAttempts: 1 });
    await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    expect(await queue.fail(id, 'w', { error: 'once' })).toBe('dead');
  });

  test('a worker that vanishes during the last attempt uses it up: the job becomes dead, not run again', async ({ queue, clock }) => {
    const id = await queue.enqueue({ type: 't', payload: 'x', maxAttempts: 2 });
    await queue.claim({ workerId: 'w1', limit: 1, leaseMs: LEASE });
    clock.advance(LEASE);
    expect(ids(await queue.claim({ workerId: 'w2', limit: 1, leaseMs: LEASE }))).toEqual([id]);
    clock.advance(LEASE);
    expect(await queue.claim({ workerId: 'w3', limit: 1, leaseMs: LEASE })).toEqual([]);
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 1, done: 0 });
    const [dead] = await queue.dead();
    expect(dead).toMatchObject({ id, attempts: 2 });
    expect(dead?.lastError).toMatch(/lease/);
    await queue.complete(id, 'w2');
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 1, done: 0 });
  });

  test('the default maxAttempts is 10, or the adapter setting', async ({ queue }) => {
    await queue.enqueue({ type: 't', payload: 'x' });
    expect((await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE }))[0]?.maxAttempts).toBe(10);
  });

  options.test('the adapter setting for maxAttempts applies to jobs that do not set one', async () => {
    const { queue, close } = await make({ defaultMaxAttempts: 4 });
    try {
      await queue.enqueue({ type: 't', payload: 'x' });
      await queue.enqueue({ type: 't', payload: 'y', maxAttempts: 2 });
      expect((await queue.claim({ workerId: 'w', limit: 2, leaseMs: LEASE })).map((job) => job.maxAttempts)).toEqual([4, 2]);
    } finally {
      await close();
    }
  });

  test(
    'without retryAt, retries back off exponentially with jitter, capped',
    async ({ queue, clock }) => {
      // Step 1000 ms doubling, capped at 4000; jitter fixed at 0.5: half the step plus a quarter.
      const expected = [750, 1500, 3000, 3000, 3000];
      const id = await queue.enqueue({ type: 't', payload: 'x', maxAttempts: expected.length + 1 });
      for (const delay of expected) {
        await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
        const failedAt = clock.now().getTime();
        expect(await queue.fail(id, 'w', { error: 'busy' })).toBe('retrying');
        expect(await queue.nextRunAt()).toBe(new Date(failedAt + delay).toISOString());
        clock.advance(delay - 1);
        expect(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE })).toEqual([]);
        clock.advance(1);
      }
    },
    { backoff: { baseMs: 1_000, maxMs: 4_000 }, random: () => 0.5 },
  );

  test('with no jitter drawn, a retry waits half a step', async ({ queue, clock }) => {
    const first = await queue.enqueue({ type: 't', payload: 1 });
    await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    const t = clock.now().getTime();
    await queue.fail(first, 'w', { error: 'e' });
    expect(await queue.nextRunAt()).toBe(new Date(t + 500).toISOString());
  }, { backoff: { baseMs: 1_000, maxMs: 60_000 }, random: () => 0 });

  test('the default backoff makes a failed job wait, and not longer than an hour', async ({ queue, clock }) => {
    const id = await queue.enqueue({ type: 't', payload: 'x' });
    await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    await queue.fail(id, 'w', { error: 'e' });
    const wait = Date.parse((await queue.nextRunAt())!) - clock.now().getTime();
    expect(wait).toBeGreaterThan(0);
    expect(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE })).toEqual([]);
    clock.advance(3_600_000);
    expect(ids(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE }))).toEqual([id]);
  });

  test('a key deduplicates while its job is pending or running, and is free again once done or dead', async ({ queue }) => {
    const first = await queue.enqueue({ type: 'bulk.process', payload: { requestId: 'r1' }, key: 'bulk:r1' });
    expect(await queue.enqueue({ type: 'bulk.process', payload: { requestId: 'other' }, key: 'bulk:r1' })).toBe(first);
    const other = await queue.enqueue({ type: 'bulk.process', payload: { requestId: 'r2' }, key: 'bulk:r2' });
    expect(other).not.toBe(first);
    expect(await queue.stats()).toMatchObject({ pending: 2 });

    const claimed = await queue.claim({ workerId: 'w', limit: 2, leaseMs: LEASE });
    expect(claimed.find((job) => job.id === first)?.payload).toEqual({ requestId: 'r1' });
    expect(await queue.enqueue({ type: 'bulk.process', payload: {}, key: 'bulk:r1' })).toBe(first);

    await queue.complete(first, 'w');
    const second = await queue.enqueue({ type: 'bulk.process', payload: { requestId: 'r1' }, key: 'bulk:r1' });
    expect(second).not.toBe(first);

    expect(await queue.fail(other, 'w', { error: 'e', retryAt: new Date(0).toISOString() })).toBe('retrying');
    expect(await queue.enqueue({ type: 'bulk.process', payload: {}, key: 'bulk:r2' })).toBe(other);
    expect(await queue.stats()).toEqual({ pending: 2, running: 0, dead: 0, done: 1 });
  });

  test('a dead job frees its key', async ({ queue }) => {
    const first = await queue.enqueue({ type: 't', payload: 1, key: 'k', maxAttempts: 1 });
    await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE });
    await queue.fail(first, 'w', { error: 'e' });
    expect(await queue.enqueue({ type: 't', payload: 2, key: 'k' })).not.toBe(first);
  });

  test('jobs without a key are never deduplicated', async ({ queue }) => {
    const a = await queue.enqueue({ type: 't', payload: 'same' });
    const b = await queue.enqueue({ type: 't', payload: 'same' });
    expect(a).not.toBe(b);
    expect(await queue.stats()).toMatchObject({ pending: 2 });
  });

  test('concurrent enqueues with one key give one job', async ({ queue }) => {
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => queue.enqueue({ type: 't', payload: i, key: 'same' })));
    expect(new Set(results).size).toBe(1);
    expect(await queue.stats()).toMatchObject({ pending: 1 });
  });

  test('releaseAll gives a worker’s jobs back at once, without counting an attempt, and leaves others alone', async ({ queue }) => {
    const a = await queue.enqueue({ type: 't', payload: 'a' });
    const b = await queue.enqueue({ type: 't', payload: 'b' });
    const c = await queue.enqueue({ type: 't', payload: 'c' });
    expect(ids(await queue.claim({ workerId: 'w1', limit: 2, leaseMs: LEASE }))).toEqual([a, b]);
    expect(ids(await queue.claim({ workerId: 'w2', limit: 1, leaseMs: LEASE }))).toEqual([c]);
    await queue.releaseAll('w1');
    expect(await queue.stats()).toEqual({ pending: 2, running: 1, dead: 0, done: 0 });
    const retaken = await queue.claim({ workerId: 'w3', limit: 5, leaseMs: LEASE });
    expect(retaken.map((job) => [job.id, job.attempt])).toEqual([
      [a, 1],
      [b, 1],
    ]);
    await queue.complete(a, 'w1');
    expect(await queue.stats()).toEqual({ pending: 0, running: 3, dead: 0, done: 0 });
    await queue.releaseAll('nobody');
    expect(await queue.stats()).toEqual({ pending: 0, running: 3, dead: 0, done: 0 });
  });

  test('expireLeases hands a dead worker’s jobs to the next claim at once, counting its attempt, and leaves others alone', async ({ queue }) => {
    const a = await queue.enqueue({ type: 't', payload: 'a' });
    const b = await queue.enqueue({ type: 't', payload: 'b', maxAttempts: 1 });
    const c = await queue.enqueue({ type: 't', payload: 'c' });
    expect(ids(await queue.claim({ workerId: 'dead', limit: 2, leaseMs: LEASE }))).toEqual([a, b]);
    expect(ids(await queue.claim({ workerId: 'alive', limit: 1, leaseMs: LEASE }))).toEqual([c]);
    expect(await queue.claim({ workerId: 'next', limit: 5, leaseMs: LEASE })).toEqual([]);
    await queue.expireLeases('dead');
    await queue.expireLeases('nobody');
    // The killed worker's claim was an attempt: `a` comes back as its second, `b` had no attempt left.
    const retaken = await queue.claim({ workerId: 'next', limit: 5, leaseMs: LEASE });
    expect(retaken.map((job) => [job.id, job.attempt])).toEqual([[a, 2]]);
    expect(await queue.stats()).toEqual({ pending: 0, running: 2, dead: 1, done: 0 });
    expect(await queue.extendLease(c, 'alive', LEASE)).toBe(true);
    // The dead worker's late writes are refused: the job is someone else's now.
    expect(await queue.extendLease(a, 'dead', LEASE)).toBe(false);
  });

  test('nextRunAt is the earliest pending runAt, ignoring running, done and dead jobs', async ({ queue, clock }) => {
    const t0 = clock.now().getTime();
    const soon = new Date(t0 + 1_000).toISOString();
    const later = new Date(t0 + 5_000).toISOString();
    const running = await queue.enqueue({ type: 't', payload: 0 });
    await queue.enqueue({ type: 't', payload: 2, runAt: later });
    await queue.enqueue({ type: 't', payload: 1, runAt: soon });
    expect(await queue.nextRunAt()).toBe(new Date(t0).toISOString());
    expect(ids(await queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE }))).toEqual([running]);
    expect(await queue.nextRunAt()).toBe(soon);
    await queue.complete(running, 'w');
    expect(await queue.nextRunAt()).toBe(soon);
  });

  test('stats count every state', async ({ queue, clock }) => {
    const done = await queue.enqueue({ type: 't', payload: 1 });
    const dead = await queue.enqueue({ type: 't', payload: 2, maxAttempts: 1 });
    const running = await queue.enqueue({ type: 't', payload: 3 });
    await queue.enqueue({ type: 't', payload: 4, runAt: new Date(clock.now().getTime() + 1).toISOString() });
    await queue.enqueue({ type: 't', payload: 5, runAt: new Date(clock.now().getTime() + 1).toISOString() });
    expect(ids(await queue.claim({ workerId: 'w', limit: 3, leaseMs: LEASE }))).toEqual([done, dead, running]);
    await queue.complete(done, 'w');
    await queue.fail(dead, 'w', { error: 'x' });
    expect(await queue.stats()).toEqual({ pending: 2, running: 1, dead: 1, done: 1 });
  });

  test('prune deletes finished jobs older than the cut, in batches, and never an active one', async ({ queue, clock }) => {
    const done = await queue.enqueue({ type: 't', payload: 1 });
    const dead = await queue.enqueue({ type: 't', payload: 2, maxAttempts: 1 });
    const running = await queue.enqueue({ type: 't', payload: 3 });
    const pending = await queue.enqueue({ type: 't', payload: 4, runAt: new Date(clock.now().getTime() + 60_000).toISOString() });
    expect(ids(await queue.claim({ workerId: 'w', limit: 3, leaseMs: LEASE }))).toEqual([done, dead, running]);
    await queue.complete(done, 'w');
    await queue.fail(dead, 'w', { error: 'x' });
    const finishedAt = clock.now().getTime();
    // Nothing finished before the cut yet.
    expect(await queue.prune(new Date(finishedAt).toISOString(), 10)).toBe(0);
    const cut = new Date(finishedAt + 1).toISOString();
    // The dead job and, where the adapter keeps them, the done one; one per call with a limit of one.
    expect(await queue.prune(cut, 1)).toBe(1);
    const rest = await queue.prune(cut, 10);
    expect(rest).toBeLessThanOrEqual(1);
    expect(await queue.prune(cut, 10)).toBe(0);
    expect(await queue.dead()).toEqual([]);
    const stats = await queue.stats();
    expect([stats.pending, stats.running, stats.dead]).toEqual([1, 1, 0]);
    // The pending job was left alone: it is claimed once due.
    clock.advance(60_000);
    expect(ids(await queue.claim({ workerId: 'w2', limit: 5, leaseMs: LEASE }))).toContain(pending);
  });

  test('dead lists oldest first and honours its limit', async ({ queue }) => {
    const made: string[] = [];
    for (let i = 0; i < 4; i++) made.push(await queue.enqueue({ type: 't', payload: i, maxAttempts: 1 }));
    for (const job of await queue.claim({ workerId: 'w', limit: 4, leaseMs: LEASE })) await queue.fail(job.id, 'w', { error: `e${String(job.payload)}` });
    expect((await queue.dead()).map((job) => job.id)).toEqual(made);
    expect((await queue.dead(2)).map((job) => [job.id, job.lastError])).toEqual([
      [made[0], 'e0'],
      [made[1], 'e1'],
    ]);
  });

  test('invalid jobs and claims are refused with BAD_REQUEST', async ({ queue }) => {
    await expectCode(queue.enqueue({ type: '', payload: 1 }), 'BAD_REQUEST');
    await expectCode(queue.enqueue({ type: 't', payload: 1, maxAttempts: 0 }), 'BAD_REQUEST');
    await expectCode(queue.enqueue({ type: 't', payload: 1, maxAttempts: 1.5 }), 'BAD_REQUEST');
    await expectCode(queue.enqueue({ type: 't', payload: 1, runAt: 'tomorrow' }), 'BAD_REQUEST');
    await expectCode(queue.enqueue({ type: 't', payload: 1, key: '' }), 'BAD_REQUEST');
    await expectCode(queue.claim({ workerId: '', limit: 1, leaseMs: LEASE }), 'BAD_REQUEST');
    await expectCode(queue.claim({ workerId: 'w', limit: -1, leaseMs: LEASE }), 'BAD_REQUEST');
    await expectCode(queue.claim({ workerId: 'w', limit: 1, leaseMs: 0 }), 'BAD_REQUEST');
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 0 });
  });

  options.test('two queues from make share nothing', async () => {
    const first = await make();
    const second = await make();
    try {
      await first.queue.enqueue({ type: 't', payload: 1 });
      expect(await second.queue.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 0 });
      expect(await second.queue.claim({ workerId: 'w', limit: 1, leaseMs: LEASE })).toEqual([]);
    } finally {
      await first.close();
      await second.close();
    }
  });

  options.test(
    'property: under any interleaving of workers claiming, completing, failing, releasing and leases expiring, every job is delivered, never leased to two workers at once, and ends done or dead',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(jobArbitrary, { minLength: 1, maxLength: 6 }), fc.array(stepArbitrary, { maxLength: 40 }), async (jobs, steps) => {
          const fixture = await make({ backoff: { baseMs: 100, maxMs: 1_000 }, random: () => 0.5 });
          try {
            await checkInterleaving(fixture, jobs, steps);
          } finally {
            await fixture.close();
          }
        }),
        { numRuns: options.numRuns ?? 100 },
      );
    },
    120_000,
  );
}

const WORKERS = ['w0', 'w1', 'w2'] as const;

const jobArbitrary = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 3 }),
  key: fc.option(fc.constantFrom('k1', 'k2'), { nil: undefined }),
  delayMs: fc.constantFrom(0, 0, 500),
});

type Step =
  | { kind: 'claim'; worker: number; limit: number }
  | { kind: 'complete' | 'extend'; worker: number; pick: number }
  | { kind: 'fail'; worker: number; pick: number; retryNow: boolean }
  | { kind: 'release'; worker: number }
  | { kind: 'advance'; ms: number };

const worker = fc.nat({ max: WORKERS.length - 1 });
const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('claim' as const), worker, limit: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('complete' as const), worker, pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fail' as const), worker, pick: fc.nat(), retryNow: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('extend' as const), worker, pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), worker }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.constantFrom(0, 100, LEASE - 1, LEASE, 2 * LEASE) }) },
);

async function checkInterleaving(
  { queue, clock }: QueueFixture,
  jobs: { maxAttempts: number; key: string | undefined; delayMs: number }[],
  steps: Step[],
): Promise<void> {
  const enqueued = new Set<string>();
  for (const job of jobs) {
    const runAt = new Date(clock.now().getTime() + job.delayMs).toISOString();
    enqueued.add(await queue.enqueue({ type: 't', payload: { n: enqueued.size }, maxAttempts: job.maxAttempts, runAt, ...(job.key ? { key: job.key } : {}) }));
  }
  // What each worker believes it holds: job id -> lease end (ms), as the claims returned it.
  const held = WORKERS.map(() => new Map<string, number>());
  const delivered = new Set<string>();
  const maxAttemptsOf = new Map<string, number>();

  const claim = async (w: number, limit: number) => {
    const now = clock.now().getTime();
    const claimed = await queue.claim({ workerId: WORKERS[w]!, limit, leaseMs: LEASE });
    for (const job of claimed) {
      expect(enqueued.has(job.id), 'claimed a job that was never enqueued').toBe(true);
      held.forEach((holding, other) => {
        const leaseEnd = holding.get(job.id);
        if (other !== w && leaseEnd !== undefined) {
          expect(leaseEnd, `job ${job.id} leased to ${WORKERS[w]} while ${WORKERS[other]} holds it`).toBeLessThanOrEqual(now);
          holding.delete(job.id);
        }
      });
      const ownLease = held[w]!.get(job.id);
      if (ownLease !== undefined) expect(ownLease, 'a worker was handed a job whose lease it still holds').toBeLessThanOrEqual(now);
      expect(job.attempt).toBeGreaterThanOrEqual(1);
      expect(job.attempt).toBeLessThanOrEqual(job.maxAttempts);
      held[w]!.set(job.id, Date.parse(job.leaseUntil));
      delivered.add(job.id);
      maxAttemptsOf.set(job.id, job.maxAttempts);
    }
    return claimed;
  };
  const pickHeld = (w: number, pick: number): string | undefined => {
    const mine = [...held[w]!.keys()];
    // Now and then aim at a job this worker does not hold, to exercise the "lost" paths.
    if (mine.length === 0 || pick % 5 === 0) return [...enqueued][pick % enqueued.size];
    return mine[pick % mine.length];
  };

  for (const step of steps) {
    switch (step.kind) {
      case 'claim':
        await claim(step.worker, step.limit);
        break;
      case 'complete': {
        const id = pickHeld(step.worker, step.pick);
        if (id) {
          await queue.complete(id, WORKERS[step.worker]!);
          held[step.worker]!.delete(id);
        }
        break;
      }
      case 'fail': {
        const id = pickHeld(step.worker, step.pick);
        if (id) {
          const outcome = await queue.fail(id, WORKERS[step.worker]!, { error: 'boom', ...(step.retryNow ? { retryAt: clock.now().toISOString() } : {}) });
          if (!held[step.worker]!.has(id)) expect(outcome).toBe('lost');
          held[step.worker]!.delete(id);
        }
        break;
      }
      case 'extend': {
        const id = pickHeld(step.worker, step.pick);
        if (id && (await queue.extendLease(id, WORKERS[step.worker]!, LEASE))) {
          expect(held[step.worker]!.has(id), 'extended a lease the worker does not hold').toBe(true);
          held[step.worker]!.set(id, clock.now().getTime() + LEASE);
        }
        break;
      }
      case 'release':
        await queue.releaseAll(WORKERS[step.worker]!);
        held[step.worker]!.clear();
        break;
      case 'advance':
        clock.advance(step.ms);
        break;
    }
  }

  // Then the workers vanish and a last worker keeps running whatever becomes due, stepping time as needed.
  for (let round = 0; round < 500; round++) {
    const stats = await queue.stats();
    if (stats.pending + stats.running === 0) break;
    const claimed = await claim(0, 10);
    for (const job of claimed) {
      await queue.complete(job.id, WORKERS[0]);
      held[0]!.delete(job.id);
    }
    if (claimed.length > 0) continue;
    const next = await queue.nextRunAt();
    if (next !== undefined && Date.parse(next) > clock.now().getTime()) clock.set(next);
    else clock.advance(LEASE);
  }

  const stats = await queue.stats();
  expect(stats.pending + stats.running, 'jobs left unfinished').toBe(0);
  expect(stats.done + stats.dead).toBe(enqueued.size);
  expect([...enqueued].filter((id) => !delivered.has(id)), 'jobs never delivered').toEqual([]);
  for (const dead of await queue.dead(1_000)) {
    expect(enqueued.has(dead.id)).toBe(true);
    expect(dead.attempts).toBe(maxAttemptsOf.get(dead.id));
  }
}
