import { describe, test } from 'vitest';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { withStamps } from '../../adapters/search/stamped.search-index.js';
import { defineSearchIndexContract } from '../ports/search-index.contract.js';

describe('the default budget', () => {
  defineSearchIndexContract({ test, make: () => new MiniSearchIndex(), serializes: true, makeForgetful: () => new MiniSearchIndex({ budgetBytes: 40_000 }) });
});

// A budget of a few small patients: every behaviour holds while patients come and go.
describe('a budget of a few small patients', () => {
  defineSearchIndexContract({ test, make: () => new MiniSearchIndex({ budgetBytes: 40_000 }), serializes: true });
});

// An embedder's index that keeps no stamps: the host keeps them beside it, and together they are a full index.
describe('an index without stamps of its own, given them by the host', () => {
  const stampless = () => {
    const index = new MiniSearchIndex();
    return withStamps({ upsert: index.upsert.bind(index), remove: index.remove.bind(index), search: index.search.bind(index) });
  };
  defineSearchIndexContract({ test, make: stampless });
});
