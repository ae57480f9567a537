import { describe, expect, test } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryHost } from '../../hosts/memory/memory.host.js';
import { ENDPOINTS, type Endpoint, type EndpointName } from '../../contract/endpoints.js';
import { DEFAULT_RATE_LIMITS, FailedAttempts, RATE_LIMIT_CLASSES, RateLimiter, type RateClass } from './rate-limit.js';

describe('rate limits', () => {
  test('a minute of requests may come at once; then one per 60/limit seconds, per account and class', () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const limiter = new RateLimiter(clock, { ...DEFAULT_RATE_LIMITS, documentQuery: 6 });
    for (let i = 0; i < 6; i++) expect(limiter.take('a', 'documentQuery')).toBeUndefined();
    expect(limiter.take('a', 'documentQuery')).toBe(10);
    // Another account, another class: untouched.
    expect(limiter.take('b', 'documentQuery')).toBeUndefined();
    expect(limiter.take('a', 'standard')).toBeUndefined();
    clock.advance(9_000);
    expect(limiter.take('a', 'documentQuery')).toBe(1);
    clock.advance(1_000);
    expect(limiter.take('a', 'documentQuery')).toBeUndefined();
    expect(limiter.take('a', 'documentQuery')).toBe(10);
  });

  test('a class at 0 is not limited, and the buckets are bounded in number', () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const limiter = new RateLimiter(clock, { ...DEFAULT_RATE_LIMITS, create: 0 }, 100);
    for (let i = 0; i < 1000; i++) expect(limiter.take('a', 'create')).toBeUndefined();
    for (let i = 0; i < 1000; i++) limiter.take(`account-${i}`, 'standard');
    expect(limiter.size).toBe(100);
  });

  test('the table classes endpoints by what they set off; everything else, polling the status of work too, is standard', () => {
    const byClass: Record<RateClass, EndpointName[]> = { standard: [], create: [], documentQuery: [], consolidated: [] };
    for (const [name, endpoint] of Object.entries(ENDPOINTS) as [EndpointName, Endpoint][]) byClass[endpoint.rate ?? 'standard'].push(name);
    expect({ create: byClass.create, documentQuery: byClass.documentQuery, consolidated: byClass.consolidated }).toEqual({
      create: ['createPatient', 'startBulkPatientCreate', 'createDocumentReference'],
      documentQuery: ['startDocumentQuery', 'startBulkGetDocumentUrl', 'startNetworkQuery'],
      consolidated: ['startConsolidatedQuery', 'getPatientConsolidated', 'getMedicalRecordUrl', 'searchPatientData', 'downloadNetworkQueryConsolidated'],
    });
    for (const polled of ['getConsolidatedQueryStatus', 'getDocumentQueryStatus', 'getNetworkQuery', 'getBulkPatientCreate', 'getPatient'] as const) {
      expect(byClass.standard).toContain(polled);
    }
    // Every class is one the limits name, and each is some endpoint's.
    expect(Object.keys(byClass).sort()).toEqual([...RATE_LIMIT_CLASSES].sort());
    expect(RATE_LIMIT_CLASSES.filter((rateClass) => byClass[rateClass].length === 0)).toEqual([]);
  });

  test("the handler limits a request by its endpoint's class: creates run out, a standard POST beside them does not", async () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const host = await MemoryHost.create({ clock, ids: new SequentialIds(), rateLimits: { ...DEFAULT_RATE_LIMITS, create: 1 } });
    try {
      const { apiKey } = await host.createAccount('one');
      // The limit is taken before the body is read: an invalid body spends a token as a valid one would.
      const post = (path: string) => host.request({ method: 'POST', path, headers: { 'x-api-key': apiKey }, body: {} });
      expect((await post('/medical/v1/patient')).status).toBe(400);
      const limited = await post('/medical/v1/patient');
      expect(limited.status).toBe(429);
      expect((limited.body as { code: string }).code).toBe('RATE_LIMITED');
      expect((await post('/medical/v1/patient/bulk')).status).toBe(429);
      for (let i = 0; i < 3; i++) expect((await post('/medical/v1/patient/match')).status).toBe(400);
    } finally {
      await host.close();
    }
  });

  test('through the API: 429 RATE_LIMITED with Retry-After, for that account only, and again after the wait', async () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const host = await MemoryHost.create({ clock, ids: new SequentialIds(), rateLimits: { ...DEFAULT_RATE_LIMITS, standard: 3 } });
    try {
      const one = await host.createAccount('one');
      const two = await host.createAccount('two');
      const read = (apiKey: string) => host.request({ method: 'GET', path: '/medical/v1/facility', headers: { 'x-api-key': apiKey } });
      for (let i = 0; i < 3; i++) expect((await read(one.apiKey)).status).toBe(200);
      const limited = await read(one.apiKey);
      expect(limited.status).toBe(429);
      expect(limited.headers['retry-after']).toBe('20');
      expect((limited.body as { code: string }).code).toBe('RATE_LIMITED');
      expect((await read(two.apiKey)).status).toBe(200);
      clock.advance(20_000);
      expect((await read(one.apiKey)).status).toBe(200);
      // A wrong key is refused before any bucket is touched.
      expect((await read('wrong')).status).toBe(401);
    } finally {
      await host.close();
    }
  });
});

describe('failed API key attempts per client address', () => {
  const WRONG = 'cb_not-a-real-key';

  test('past the limit an address gets 429 TOO_MANY_FAILED_ATTEMPTS, a right key too, until a token is back; other addresses go on', async () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const host = await MemoryHost.create({ clock, ids: new SequentialIds(), failedAuthPerMinute: 3 });
    try {
      const { apiKey } = await host.createAccount('one');
      const read = (key: string | undefined, remoteAddress?: string) =>
        host.request({ method: 'GET', path: '/medical/v1/facility', headers: key === undefined ? {} : { 'x-api-key': key }, ...(remoteAddress ? { remoteAddress } : {}) });
      for (let i = 0; i < 3; i++) expect((await read(WRONG, '203.0.113.7')).status).toBe(401);
      const locked = await read(WRONG, '203.0.113.7');
      expect(locked.status).toBe(429);
      expect(locked.headers['retry-after']).toBe('20');
      expect((locked.body as { code: string }).code).toBe('TOO_MANY_FAILED_ATTEMPTS');
      // Refused without looking at the key: an answer that told a right key from a wrong one would let the
      // guessing go on at full speed.
      const right = await read(apiKey, '203.0.113.7');
      expect(right.status).toBe(429);
      expect((right.body as { code: string }).code).toBe('TOO_MANY_FAILED_ATTEMPTS');
      expect((await read(apiKey, '198.51.100.1')).status).toBe(200);
      expect((await read(WRONG, '198.51.100.1')).status).toBe(401);
      clock.advance(20_000);
      expect((await read(apiKey, '203.0.113.7')).status).toBe(200);
      expect((await read(WRONG, '203.0.113.7')).status).toBe(401);
      expect((await read(WRONG, '203.0.113.7')).status).toBe(429);
    } finally {
      await host.close();
    }
  });

  test('a missing key is no guess, successes leave no trace and never reset the count; with no address nothing is counted', async () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const host = await MemoryHost.create({ clock, ids: new SequentialIds(), failedAuthPerMinute: 2 });
    try {
      const { apiKey } = await host.createAccount('one');
      const read = (key: string | undefined, remoteAddress?: string) =>
        host.request({ method: 'GET', path: '/medical/v1/facility', headers: key === undefined ? {} : { 'x-api-key': key }, ...(remoteAddress ? { remoteAddress } : {}) });
      for (let i = 0; i < 10; i++) expect((await read(undefined, '203.0.113.7')).status).toBe(401);
      for (let i = 0; i < 10; i++) expect((await read(apiKey, '203.0.113.7')).status).toBe(200);
      // A right key between guesses (the attacker's own account, say) does not buy more guesses.
      expect((await read(WRONG, '203.0.113.7')).status).toBe(401);
      expect((await read(apiKey, '203.0.113.7')).status).toBe(200);
      expect((await read(WRONG, '203.0.113.7')).status).toBe(401);
      expect((await read(WRONG, '203.0.113.7')).status).toBe(429);
      // In process, with no transport, there is no address to count against.
      for (let i = 0; i < 10; i++) expect((await read(WRONG)).status).toBe(401);
    } finally {
      await host.close();
    }
  });

  test('the failure buckets are bounded in number, and only failures make one', () => {
    const clock = new SteppedClock('2026-01-01T00:00:00.000Z');
    const failures = new FailedAttempts(clock, 20, 100);
    for (let i = 0; i < 1000; i++) expect(failures.lockedFor(`10.0.${i >> 8}.${i & 255}`)).toBeUndefined();
    expect(failures.size).toBe(0);
    for (let i = 0; i < 1000; i++) failures.fail(`10.0.${i >> 8}.${i & 255}`);
    expect(failures.size).toBe(100);
  });
});
