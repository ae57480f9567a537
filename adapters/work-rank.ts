import { AsyncLocalStorage } from 'node:async_hooks';
import type { MutexRank } from './storage/mutex.js';

/**
 * The rank of the work running now, for the resources several kinds of work queue on (SQLite's one writer):
 * the queue runner runs a background-lane job (an import's document query) as `background`; everything
 * else (requests, imports, queries a person started) is `urgent`. Carried through every await of the work
 * by the async context, so no port or core function needs to know of it.
 */
const rank = new AsyncLocalStorage<MutexRank>();

/** Runs `work` (and everything it awaits) at `workRank`. */
export function runAtRank<T>(workRank: MutexRank, work: () => T): T {
  return rank.run(workRank, work);
}

/** The rank of the work calling; `urgent` outside any ranked work. */
export function currentRank(): MutexRank {
  return rank.getStore() ?? 'urgent';
}
