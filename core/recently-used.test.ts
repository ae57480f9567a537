import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { RecentlyUsed } from './recently-used.js';

describe('RecentlyUsed', () => {
  test('never holds more than its capacity, and keeps exactly the keys used last', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.tuple(fc.constantFrom('get', 'set'), fc.integer({ min: 0, max: 20 })), { maxLength: 200 }), (capacity, operations) => {
        const recent = new RecentlyUsed<number>(capacity);
        const model: number[] = [];
        for (const [operation, key] of operations) {
          if (operation === 'set') {
            recent.set(String(key), key);
            const at = model.indexOf(key);
            if (at >= 0) model.splice(at, 1);
            model.push(key);
            if (model.length > capacity) model.shift();
          } else {
            expect(recent.get(String(key))).toBe(model.includes(key) ? key : undefined);
            if (model.includes(key)) model.push(...model.splice(model.indexOf(key), 1));
          }
          expect(recent.size).toBeLessThanOrEqual(capacity);
        }
        for (let key = 0; key <= 20; key++) expect(recent.has(String(key))).toBe(model.includes(key));
      }),
    );
  });

  test('a capacity must be a positive integer', () => {
    expect(() => new RecentlyUsed(0)).toThrow(/capacity/);
  });
});
