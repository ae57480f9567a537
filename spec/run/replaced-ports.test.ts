import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import type { Ports } from '../../adapters/container/tokens.js';
import { SandboxHieNetwork } from '../../adapters/hie/sandbox.hie.js';
import { SandboxLabNetwork } from '../../adapters/hie/sandbox.lab.js';
import { SandboxPharmacyNetwork } from '../../adapters/hie/sandbox.pharmacy.js';
import { BundleRenderer } from '../../adapters/render/bundle.renderer.js';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { defineConsolidatedGroup } from '../groups/consolidated.spec-group.js';
import { defineDocumentsGroup } from '../groups/documents.spec-group.js';
import { defineNetworkQueryGroup } from '../groups/network-query.spec-group.js';
import { defineSearchGroup } from '../groups/search.spec-group.js';
import { suiteHost } from '../host.suite.js';
import { makeMemoryDriver } from '../support/memory-driver.js';

/*
 * An embedder's own adapters, plugged in through the public `ports` option: each port of the document half
 * is given an implementation of its own (another instance, wrapped to note every call), and the behaviour
 * groups that use those ports run unchanged on top. They pass, and every given implementation was called:
 * the built-in adapters were not used in their place.
 */

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const called = new Map<string, Set<string>>();

/** `inner`, noting in `called` each method used, by port name. */
function noted<T extends object>(name: string, inner: T): T {
  const methods = called.get(name) ?? new Set<string>();
  called.set(name, methods);
  return new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        methods.add(String(property));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

function ownPorts(): Partial<Ports> {
  return {
    hie: noted('hie', new SandboxHieNetwork({ fixturesDir })),
    pharmacy: noted('pharmacy', new SandboxPharmacyNetwork()),
    lab: noted('lab', new SandboxLabNetwork()),
    ccda: noted('ccda', new MedplumCcdaConverter()),
    search: noted('search', new MiniSearchIndex()),
    renderer: noted('renderer', new BundleRenderer()),
  };
}

const makeHost = () => makeMemoryDriver({ ports: ownPorts });
const options = { test, describe, makeHost: suiteHost(makeHost), numRuns: 5 };

describe('ports replaced through the public API', () => {
  defineDocumentsGroup(options);
  defineConsolidatedGroup(options);
  defineNetworkQueryGroup(options);
  defineSearchGroup(options);
});

afterAll(() => {
  // Every port given was the one used: the groups reached each of them.
  expect([...called.keys()].sort()).toEqual(['ccda', 'hie', 'lab', 'pharmacy', 'renderer', 'search']);
  for (const [name, methods] of called) expect(methods.size, `${name} was never called`).toBeGreaterThan(0);
});
