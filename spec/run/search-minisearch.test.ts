import { describe, test } from 'vitest';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { defineSearchIndexContract } from '../ports/search-index.contract.js';

describe('the default budget', () => {
  defineSearchIndexContract({ test, make: () => new MiniSearchIndex(), keepsStamps: true, serializes: true, makeForgetful: () => new MiniSearchIndex({ budgetBytes: 40_000 }) });
});

// A budget of a few small patients: every behaviour holds while patients come and go.
describe('a budget of a few small patients', () => {
  defineSearchIndexContract({ test, make: () => new MiniSearchIndex({ budgetBytes: 40_000 }), keepsStamps: true, serializes: true });
});
