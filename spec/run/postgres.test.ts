import { describe, test } from 'vitest';
import { defineHostSpec } from '../host.suite.js';
import { probePostgres } from '../support/pg.js';
import { makeWrapperDriver } from '../support/wrapper-driver.js';

const pgProbe = await probePostgres();

// The behaviour suite once on PostgreSQL, through the Koa wrapper: each host works in its own schema.
describe.skipIf(!pgProbe.available)('Koa wrapper on PostgreSQL', () => {
  defineHostSpec({ test, describe, makeHost: () => makeWrapperDriver('koa', 'postgres'), numRuns: 5 });
});
