import { describe, expect, test } from 'vitest';
import { DEFAULT_RATE_LIMITS } from '../../core/api/rate-limit.js';
import { defineEntitiesGroup } from '../groups/entities.spec-group.js';
import { suiteHost, withHost } from '../host.suite.js';
import { AccountApi } from '../support/api.js';
import { makeMemoryDriver } from '../support/memory-driver.js';
import { honouringRetryAfter } from '../support/retry-after.js';

/** Two requests a minute of each class: every few calls of a test meet a 429. */
const TINY = { ...DEFAULT_RATE_LIMITS, standard: 2, create: 2 };
const tinyHost = () => makeMemoryDriver({ rateLimits: TINY });

describe("the suite's client honours Retry-After", () => {
  test('on 429 it waits Retry-After on the host clock and tries again; the bare driver gets the 429', async () => {
    await withHost(tinyHost, async (bare) => {
      const { apiKey } = await bare.createAccount();
      const list = { method: 'GET', path: '/medical/v1/facility', apiKey } as const;
      expect((await bare.call(list)).status).toBe(200);
      expect((await bare.call(list)).status).toBe(200);
      const refused = await bare.call(list);
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe('30');

      const host = honouringRetryAfter(bare);
      const before = host.clock.now().getTime();
      for (let i = 0; i < 3; i++) expect((await host.call(list)).status).toBe(200);
      // Each call waited its 30 s on the host's clock, never on the wall clock.
      expect(host.clock.now().getTime() - before).toBe(90_000);
    });
  });

  test('the wait is injectable, and the retries are bounded: past them the last answer is returned', async () => {
    await withHost(tinyHost, async (bare) => {
      const { apiKey } = await bare.createAccount();
      const waits: number[] = [];
      const host = honouringRetryAfter(bare, { wait: async (seconds) => void waits.push(seconds), attempts: 3 });
      const list = { method: 'GET', path: '/medical/v1/facility', apiKey } as const;
      await host.call(list);
      await host.call(list);
      // A wait that lets no time pass: the host keeps refusing.
      const response = await host.call(list);
      expect(response.status).toBe(429);
      expect(waits).toEqual([30, 30, 30]);
    });
  });

  test('a suite flow gets through two requests a minute', async () => {
    await withHost(suiteHost(tinyHost), async (host) => {
      const api = await AccountApi.create(host);
      const facility = await api.createFacility();
      const cohort = await api.createCohort();
      const read = await api.call('GET', `/medical/v1/facility/${facility.id}`);
      expect(read.status, read.text).toBe(200);
      expect((await api.call('GET', `/medical/v1/cohort/${cohort.id}`)).status).toBe(200);
      expect((await api.call('GET', '/medical/v1/facility')).body.facilities).toHaveLength(1);
    });
  });
});

// A whole behaviour group, unchanged, through a host that allows two requests a minute.
describe('the entities group at two requests a minute', () => {
  defineEntitiesGroup({ test, describe, makeHost: suiteHost(tinyHost) });
});
