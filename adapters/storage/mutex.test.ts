import { expect, test } from 'vitest';
import { BACKGROUND_TURN, Mutex } from './mutex.js';

/** Holds the mutex until released; resolves `entered` once it holds it. */
function holder(mutex: Mutex) {
  let release!: () => void;
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const done = mutex.run(async () => {
    entered();
    await new Promise<void>((resolve) => (release = resolve));
  });
  return { inside, release: () => release(), done };
}

test('one holder at a time, in order within a rank', async () => {
  const mutex = new Mutex();
  const first = holder(mutex);
  await first.inside;
  const order: string[] = [];
  const waiters = ['a', 'b', 'c'].map((name) => mutex.run(async () => void order.push(name)));
  first.release();
  await Promise.all([first.done, ...waiters]);
  expect(order).toEqual(['a', 'b', 'c']);
});

test('urgent work waiting goes before background work that waited longer', async () => {
  const mutex = new Mutex();
  const first = holder(mutex);
  await first.inside;
  const order: string[] = [];
  const waiters = [
    mutex.run(async () => void order.push('background 1'), 'background'),
    mutex.run(async () => void order.push('background 2'), 'background'),
    mutex.run(async () => void order.push('import batch'), 'urgent'),
  ];
  first.release();
  await Promise.all([first.done, ...waiters]);
  expect(order).toEqual(['import batch', 'background 1', 'background 2']);
});

test('a steady stream of urgent work still leaves background work one turn in BACKGROUND_TURN', async () => {
  const mutex = new Mutex();
  const first = holder(mutex);
  await first.inside;
  const order: string[] = [];
  const waiters = [mutex.run(async () => void order.push('background'), 'background')];
  for (let i = 0; i < 2 * BACKGROUND_TURN; i++) waiters.push(mutex.run(async () => void order.push(`urgent ${i}`)));
  first.release();
  await Promise.all([first.done, ...waiters]);
  expect(order.indexOf('background')).toBe(BACKGROUND_TURN - 1);
  expect(order).toHaveLength(2 * BACKGROUND_TURN + 1);
});

test('a holder that throws hands the lock on', async () => {
  const mutex = new Mutex();
  await expect(mutex.run(async () => Promise.reject(new Error('failed')))).rejects.toThrow('failed');
  expect(await mutex.run(async () => 'next')).toBe('next');
});
