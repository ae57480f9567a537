import { AsyncLocalStorage } from 'node:async_hooks';
import type { Account } from '../../core/domain/types.js';
import type { AccountRepository, StoragePort } from '../../core/ports/storage.port.js';

/** What the access log learns about a request while the handler runs: only ids, never PHI. */
export interface RequestFacts {
  accountId?: string;
}

const facts = new AsyncLocalStorage<RequestFacts>();

/** Runs one request's work with a fresh facts record the access log reads afterwards. */
export function withRequestFacts<T>(record: RequestFacts, work: () => Promise<T>): Promise<T> {
  return facts.run(record, work);
}

function noteAccount(account: Account | undefined): Account | undefined {
  const record = facts.getStore();
  if (record && account) record.accountId = account.id;
  return account;
}

/**
 * The storage the API handler gets in the Koa host: the same storage, except that the account an API key
 * or a signed URL resolves to is noted for the access log of the current request. The handler itself
 * reports no account (it is transport-free), and authenticating twice just to log would double the work.
 * Outside a request (background jobs) nothing is noted.
 */
export function withAccountNotes(storage: StoragePort): StoragePort {
  const inner = storage.accounts;
  const accounts: AccountRepository = {
    insert: (account) => inner.insert(account),
    get: async (id) => noteAccount(await inner.get(id)),
    getByApiKeyHash: async (hash) => noteAccount(await inner.getByApiKeyHash(hash)),
    list: () => inner.list(),
  };
  return new Proxy(storage, {
    get(target, property) {
      if (property === 'accounts') return accounts;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
