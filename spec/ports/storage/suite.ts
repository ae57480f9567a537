import type { StoragePort } from '../../../core/ports/storage.port.js';
import type { builders } from './fixtures.js';

/**
 * The contract of the storage port (core/ports/storage.port.ts), run against every adapter.
 * `make` returns a fresh, isolated storage per test; nothing is shared between tests.
 */
export interface StorageUnderTest {
  storage: StoragePort;
  /** Closes the storage and removes whatever `make` created (file, schema). */
  close(): Promise<void>;
}

export interface StorageContractOptions {
  /** vitest's `test` (or `it`). */
  test: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  make: () => Promise<StorageUnderTest>;
  /**
   * Transactions of one storage run one at a time (memory, SQLite), so a read-modify-write inside
   * concurrent transactions loses no update. PostgreSQL runs them concurrently (READ COMMITTED).
   */
  serialisesTransactions: boolean;
  /**
   * Writes of an unfinished transaction are invisible to reads outside it. Not so for SQLite in memory,
   * where every query shares the one connection that holds the database.
   */
  isolatesUncommittedWrites: boolean;
  /** fast-check runs per property; fewer for slow backends. */
  numRuns?: number;
}

/** Registers a test that gets a fresh storage and the fixture builders of its own, and always closes the storage. */
export type StorageTest = (name: string, body: (storage: StoragePort, build: ReturnType<typeof builders>) => Promise<void>, timeout?: number) => void;

/** What each group of the storage contract is given: its test function and the adapter's options. */
export interface StorageContractGroup {
  test: StorageTest;
  /** fast-check runs per property. */
  numRuns: number;
  options: StorageContractOptions;
}
