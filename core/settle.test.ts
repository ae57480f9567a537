import { describe, expect, test } from 'vitest';
import { settleAll } from './settle.js';

describe('settleAll', () => {
  test('resolves with the values in argument order', async () => {
    const late = new Promise<string>((resolve) => setTimeout(() => resolve('late'), 5));
    expect(await settleAll([late, Promise.resolve(2), undefined] as const)).toEqual(['late', 2, undefined]);
  });

  test('rejects only once every promise has settled, with the first failure in argument order', async () => {
    let slowFinished = false;
    const slow = new Promise<void>((resolve) =>
      setTimeout(() => {
        slowFinished = true;
        resolve();
      }, 20),
    );
    const first = new Error('first');
    const second = Promise.reject(new Error('second'));
    const failing = new Promise((_, reject) => setTimeout(() => reject(first), 5));
    await expect(settleAll([failing, slow, second] as const)).rejects.toBe(first);
    expect(slowFinished).toBe(true);
  });
});
