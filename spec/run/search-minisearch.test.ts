import { test } from 'vitest';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { defineSearchIndexContract } from '../ports/search-index.contract.js';

defineSearchIndexContract({ test, make: () => new MiniSearchIndex() });
