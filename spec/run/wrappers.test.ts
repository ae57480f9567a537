import { describe, test } from 'vitest';
import { defineHostSpec } from '../host.suite.js';
import { makeWrapperDriver } from '../support/wrapper-driver.js';

// The same behaviour suite through each HTTP wrapper of the one translation: a bare node:http server and
// the fetch handler on the memory profile (the Koa wrapper runs it on SQLite in koa.test.ts and on
// PostgreSQL in postgres.test.ts).
describe('node:http wrapper (memory profile)', () => {
  defineHostSpec({ test, describe, makeHost: () => makeWrapperDriver('node'), numRuns: 10 });
});

describe('fetch wrapper (memory profile)', () => {
  defineHostSpec({ test, describe, makeHost: () => makeWrapperDriver('fetch'), numRuns: 10 });
});
