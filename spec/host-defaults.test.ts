import { describe, expect, expectTypeOf, test } from 'vitest';
import { embeddedRuntimeOptions, type CarebridgeOptions } from '../hosts/embedded/carebridge.js';
import { memoryRuntimeOptions, type MemoryHostOptions } from '../hosts/memory/memory.host.js';
import { runtimeTunables } from '../runtime/runtime.js';
import { readSettings, TUNABLES, type ResolvedTunables, type TunableSpec, type Tunables } from '../runtime/settings-table.js';
import { settingsFromEnv } from '../runtime/settings.js';

/*
 * The limits and work settings are declared once, in runtime/settings-table.ts, with their defaults. These
 * tests hold every host to them: a default stated again in a host, or changed in one place only, fails here.
 */

type Tree = { [name: string]: TunableSpec<never, unknown> | Tree };

/** What the table says each option is when nothing is set, read the way the service reads its environment. */
function tableDefaults(tree: Tree, environment: Map<string, unknown>, hosts: boolean): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(tree).map(([name, entry]) => {
      if (typeof entry.variable !== 'string') return [name, tableDefaults(entry as Tree, environment, hosts)];
      const spec = entry as TunableSpec<never, unknown>;
      const value = environment.get(spec.variable);
      if (value === undefined || (hosts && spec.optionDefault === 'none')) return [name, undefined];
      return [name, spec.toOption ? (spec.toOption as (given: unknown) => unknown)(value) : value];
    }),
  );
}

const fromEmptyEnvironment = readSettings({});
const SERVICE = tableDefaults(TUNABLES as unknown as Tree, fromEmptyEnvironment, false);
const EMBEDDED = tableDefaults(TUNABLES as unknown as Tree, fromEmptyEnvironment, true);

describe('every host runs with the settings table defaults', () => {
  test('the service, from an empty environment', () => {
    expect(runtimeTunables({ profile: { kind: 'sql' }, publicUrl: 'http://localhost', ...settingsFromEnv({}).tunables })).toEqual(SERVICE);
  });

  test('the embedded host, given no option: the same, but no request limits of its own (the application may have them)', () => {
    const resolved = runtimeTunables(embeddedRuntimeOptions({ publicUrl: 'https://app.example.com/api' }));
    expect(resolved).toEqual(EMBEDDED);
    expect(resolved.rateLimits).toBeUndefined();
    expect(resolved.failedAuthPerMinute).toBeUndefined();
    expect(resolved.jobConcurrency).toBe(SERVICE.jobConcurrency);
  });

  test('the sandbox host, given no option: the embedded defaults, one job at a time and private webhook URLs allowed', () => {
    const embedded = EMBEDDED as ResolvedTunables;
    expect(runtimeTunables(memoryRuntimeOptions({}))).toEqual({ ...embedded, jobConcurrency: 1, webhooks: { ...embedded.webhooks, allowPrivate: true } });
  });

  test('an option given to a host is what its runtime runs with, under the host’s own name', () => {
    const embedded = runtimeTunables(
      embeddedRuntimeOptions({ publicUrl: 'https://app.example.com', jobConcurrency: 7, searchCacheMb: 8, renders: { queue: 0 }, webhooks: { leaseMs: 20_000, allowPrivate: true } }),
    );
    expect(embedded).toMatchObject({ jobConcurrency: 7, searchCacheMb: 8, renders: { ...(SERVICE.renders as object), queue: 0 } });
    expect(embedded.webhooks).toMatchObject({ leaseMs: 20_000, allowPrivate: true });
    const sandbox = runtimeTunables(memoryRuntimeOptions({ searchCacheBytes: 32 * 1024 * 1024, webhookDisableAfterMs: 0, webhookAllowPrivate: false, failedAuthPerMinute: 5 }));
    expect(sandbox).toMatchObject({ searchCacheMb: 32, failedAuthPerMinute: 5, webhooks: { disableAfterMs: 0, allowPrivate: false } });
  });

  test('the sandbox takes every option under the table’s name, which wins over its older aliases', () => {
    const tableNames = runtimeTunables(
      memoryRuntimeOptions({ jobConcurrency: 3, searchCacheMb: 16, retentionDays: 2, webhooks: { allowPrivate: false, disableAfterMs: 0, endpointConcurrency: 2 } }),
    );
    expect(tableNames).toMatchObject({ jobConcurrency: 3, searchCacheMb: 16, retentionDays: 2, webhooks: { allowPrivate: false, disableAfterMs: 0, endpointConcurrency: 2 } });
    const both = runtimeTunables(
      memoryRuntimeOptions({ searchCacheMb: 16, searchCacheBytes: 32 * 1024 * 1024, webhooks: { allowPrivate: false, disableAfterMs: 1_000 }, webhookAllowPrivate: true, webhookDisableAfterMs: 0 }),
    );
    expect(both).toMatchObject({ searchCacheMb: 16, webhooks: { allowPrivate: false, disableAfterMs: 1_000 } });
  });

  test('the hosts’ option types are the table’s', () => {
    expectTypeOf<CarebridgeOptions['jobConcurrency']>().toEqualTypeOf<Tunables['jobConcurrency']>();
    expectTypeOf<CarebridgeOptions['rateLimits']>().toEqualTypeOf<Tunables['rateLimits']>();
    expectTypeOf<MemoryHostOptions['jobConcurrency']>().toEqualTypeOf<Tunables['jobConcurrency']>();
    expectTypeOf<MemoryHostOptions['webhooks']>().toEqualTypeOf<Tunables['webhooks']>();
    expectTypeOf<MemoryHostOptions['renders']>().toEqualTypeOf<Tunables['renders']>();
    expectTypeOf<NonNullable<CarebridgeOptions['webhooks']>['leaseMs']>().toEqualTypeOf<NonNullable<Tunables['webhooks']>['leaseMs']>();
    expectTypeOf<MemoryHostOptions['webhookDisableAfterMs']>().toEqualTypeOf<NonNullable<Tunables['webhooks']>['disableAfterMs']>();
    // A host cannot take a setting in another type than the table's.
    // @ts-expect-error WEBHOOK_LEASE_SECONDS becomes a number of ms, not a text
    const leaseAsText: CarebridgeOptions = { publicUrl: 'https://app.example.com', webhooks: { leaseMs: '20s' } };
    void leaseAsText;
  });
});
