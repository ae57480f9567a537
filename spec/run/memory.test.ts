import { describe, test } from 'vitest';
import { defineHostSpec } from '../host.suite.js';
import { makeMemoryDriver } from '../support/memory-driver.js';

describe('in-memory host', () => {
  defineHostSpec({ test, describe, makeHost: makeMemoryDriver, numRuns: 20 });
});
