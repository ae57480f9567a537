import { fileURLToPath } from 'node:url';
import { afterAll, test } from 'vitest';
import { PooledCcdaConverter } from '../../adapters/ccda/pooled.ccda.js';
import { defineCcdaContract } from '../ports/ccda.contract.js';
import { expectedCounts } from './ccda-expected-counts.js';

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));

// One pool for the whole suite: the converter keeps no state between documents, and each new pool would
// load the converter into its threads again.
const converter = new PooledCcdaConverter({ maxThreads: 2 });
afterAll(() => converter.close());

// The same converter runs in the threads, so it extracts the same resources as in process.
defineCcdaContract({ test, make: () => converter, fixturesDir, expectedCounts });
