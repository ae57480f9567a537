import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'data/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The pg and sqlite suites each own their schema or file; files run in parallel across 2 cores.
    pool: 'forks',
  },
});
