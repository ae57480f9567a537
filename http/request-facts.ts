import { AsyncLocalStorage } from 'node:async_hooks';
import type { Account } from '../core/domain/types.js';

/** What the access log learns about a request while the handler runs: only ids, never PHI. */
export interface RequestFacts {
  accountId?: string;
}

const facts = new AsyncLocalStorage<RequestFacts>();

/** Runs one request's work with a fresh facts record the access log reads afterwards. */
export function withRequestFacts<T>(record: RequestFacts, work: () => Promise<T>): Promise<T> {
  return facts.run(record, work);
}

/**
 * Notes the account a request authenticated as for the access log of the current request (the API
 * handler's `onAuthenticated`). Outside a request (background jobs) nothing is noted.
 */
export function noteAccount(account: Account): void {
  const record = facts.getStore();
  if (record) record.accountId = account.id;
}
