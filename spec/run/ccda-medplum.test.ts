import { fileURLToPath } from 'node:url';
import { test } from 'vitest';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { defineCcdaContract } from '../ports/ccda.contract.js';
import { expectedCounts } from './ccda-expected-counts.js';

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));

defineCcdaContract({ test, make: () => new MedplumCcdaConverter(), fixturesDir, expectedCounts });
