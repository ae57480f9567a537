import { describe, expect, test } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { ApiKeyCache, DEFAULT_API_KEY_CACHE_MS, rotateApiKey } from '../../core/accounts.js';
import { MemoryHost } from '../../hosts/memory/memory.host.js';

describe('API keys are remembered for a few seconds, and a replaced key stops working within that time', () => {
  test('a rotated key keeps working for at most the cache time, then is refused; the new key works at once', async () => {
    const clock = new SteppedClock('2026-11-25T09:00:00.000Z');
    const host = await MemoryHost.create({ clock, ids: new SequentialIds() });
    try {
      const { accountId, apiKey: oldKey } = await host.createAccount('Rotating');
      const get = (key: string) => host.request({ method: 'GET', path: '/medical/v1/facility', headers: { 'x-api-key': key } });
      expect((await get(oldKey)).status).toBe(200);
      const { apiKey: newKey } = await rotateApiKey(host.deps, accountId);
      expect((await get(newKey)).status).toBe(200);
      // Remembered from the request above: still accepted just before the cache time ends...
      clock.advance(DEFAULT_API_KEY_CACHE_MS - 1);
      expect((await get(oldKey)).status).toBe(200);
      // ...and refused once it has.
      clock.advance(1);
      expect((await get(oldKey)).status).toBe(401);
      expect((await get(newKey)).status).toBe(200);
      expect((await get('cb_not-a-key')).status).toBe(401);
    } finally {
      await host.close();
    }
  });

  test('the cache is bounded: it keeps at most 10,000 keys however many are used', () => {
    const clock = new SteppedClock('2026-11-25T09:00:00.000Z');
    const cache = new ApiKeyCache(clock);
    const account = { id: 'a', name: 'n', apiKeyHash: 'h', apiKeyPrefix: 'cb_', createdAt: clock.now().toISOString() };
    for (let i = 0; i < 25_000; i++) cache.set(`hash-${i}`, account);
    expect(cache.size).toBe(10_000);
    expect(cache.get('hash-24999')).toEqual(account);
    expect(cache.get('hash-0')).toBeUndefined();
    const off = new ApiKeyCache(clock, 0);
    off.set('hash', account);
    expect(off.get('hash')).toBeUndefined();
  });
});
