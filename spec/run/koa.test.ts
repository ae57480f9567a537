import { describe, test } from 'vitest';
import { defineHostSpec } from '../host.suite.js';
import { makeKoaDriver } from '../support/koa-driver.js';

// The same behaviour suite as the in-memory host, over real HTTP on SQLite. Fewer property runs: each run
// starts a real service with its own database.
describe('Koa host over HTTP (SQLite)', () => {
  defineHostSpec({ test, describe, makeHost: () => makeKoaDriver(), numRuns: 8 });
});
