import type { describe as Describe, test as Test } from 'vitest';
import { defineApiFuzzGroup } from './groups/api-fuzz.spec-group.js';
import { defineBulkCreateGroup } from './groups/bulk-create.spec-group.js';
import { defineBulkFuzzGroup } from './groups/bulk-fuzz.spec-group.js';
import { defineBulkHostileGroup } from './groups/bulk-hostile.spec-group.js';
import { defineBulkPropertiesGroup } from './groups/bulk-properties.spec-group.js';
import { defineBulkStateMachineGroup } from './groups/bulk-state-machine.spec-group.js';
import { defineConcurrencyGroup } from './groups/concurrency.spec-group.js';
import { defineConsolidatedGroup } from './groups/consolidated.spec-group.js';
import { defineDocumentsGroup } from './groups/documents.spec-group.js';
import { defineEntitiesGroup } from './groups/entities.spec-group.js';
import { defineHostileInputGroup } from './groups/hostile-input.spec-group.js';
import { defineNetworkQueryGroup } from './groups/network-query.spec-group.js';
import { defineOptOutGroup } from './groups/opt-out.spec-group.js';
import { defineSearchGroup } from './groups/search.spec-group.js';
import { defineTenancyGroup } from './groups/tenancy.spec-group.js';
import { defineWebhookEndpointsGroup } from './groups/webhook-endpoints.spec-group.js';
import { defineWebhooksGroup } from './groups/webhooks.spec-group.js';
import type { HostDriver, MakeHost } from './support/driver.js';
import { honouringRetryAfter } from './support/retry-after.js';

export interface HostSpecOptions {
  test: typeof Test;
  describe: typeof Describe;
  /** A fresh, isolated host per call. */
  makeHost: MakeHost;
  /** Runs per fast-check property; hosts over HTTP may ask for fewer. */
  numRuns?: number;
}

/**
 * The one behaviour suite (after abstract-level's and keyv's): every host runs it unchanged, so what
 * passes in process passes over HTTP.
 */
export function defineHostSpec(given: HostSpecOptions): void {
  const options = { ...given, makeHost: suiteHost(given.makeHost) };
  defineEntitiesGroup(options);
  defineTenancyGroup(options);
  defineOptOutGroup(options);
  defineConcurrencyGroup(options);
  defineBulkCreateGroup(options);
  defineBulkPropertiesGroup(options);
  defineBulkStateMachineGroup(options);
  defineBulkHostileGroup(options);
  defineBulkFuzzGroup(options);
  defineWebhooksGroup(options);
  defineWebhookEndpointsGroup(options);
  defineDocumentsGroup(options);
  defineConsolidatedGroup(options);
  defineNetworkQueryGroup(options);
  defineSearchGroup(options);
  defineHostileInputGroup(options);
  defineApiFuzzGroup(options);
}

/** Hosts as the suite's tests use them: through a client that waits out Retry-After (see honouringRetryAfter). */
export function suiteHost(makeHost: MakeHost): MakeHost {
  return async () => honouringRetryAfter(await makeHost());
}

/** Runs `body` with a fresh host and always closes it. */
export async function withHost<T>(makeHost: MakeHost, body: (host: HostDriver) => Promise<T>): Promise<T> {
  const host = await makeHost();
  try {
    return await body(host);
  } finally {
    await host.close();
  }
}
