import { expect } from 'vitest';
import { at, ACCOUNT_A, ACCOUNT_B, ids } from './fixtures.js';
import type { StorageContractGroup } from './suite.js';

/** Accounts and their API keys: the records every request is authenticated against. */
export function accountsContract({ test }: StorageContractGroup): void {
  // ----- accounts

  test('accounts: a missing account is undefined', async (storage) => {
    expect(await storage.accounts.get(ACCOUNT_A)).toBeUndefined();
    expect(await storage.accounts.getByApiKeyHash('nope')).toBeUndefined();
    expect(await storage.accounts.list()).toEqual([]);
  });

  test('accounts: insert, get, look up by key hash, list oldest first (ties by id)', async (storage, build) => {
    const later = build.account({ id: ACCOUNT_B, createdAt: at(10) });
    const earlier = build.account({ id: ACCOUNT_A, createdAt: at(5) });
    const tieLow = build.account({ id: '00000000-0000-7000-8000-0000000000f1', createdAt: at(7) });
    const tieHigh = build.account({ id: '00000000-0000-7000-8000-0000000000f2', createdAt: at(7) });
    for (const account of [later, tieHigh, earlier, tieLow]) await storage.accounts.insert(account);
    expect(await storage.accounts.get(ACCOUNT_A)).toEqual(earlier);
    expect(await storage.accounts.getByApiKeyHash(later.apiKeyHash)).toEqual(later);
    expect(ids(await storage.accounts.list())).toEqual([earlier.id, tieLow.id, tieHigh.id, later.id]);
  });

  test('accounts: replaceApiKey moves the account to a new key hash; the old one finds nothing; missing is false; a taken hash conflicts', async (storage, build) => {
    const account = build.account({ id: ACCOUNT_A });
    const other = build.account({ id: ACCOUNT_B });
    await storage.accounts.insert(account);
    await storage.accounts.insert(other);
    expect(await storage.accounts.replaceApiKey(ACCOUNT_A, 'new-hash', 'cb_newkey')).toBe(true);
    expect(await storage.accounts.getByApiKeyHash(account.apiKeyHash)).toBeUndefined();
    expect(await storage.accounts.getByApiKeyHash('new-hash')).toEqual({ ...account, apiKeyHash: 'new-hash', apiKeyPrefix: 'cb_newkey' });
    expect(await storage.accounts.replaceApiKey('00000000-0000-7000-8000-00000000dead', 'x-hash', 'cb_x')).toBe(false);
    await expect(storage.accounts.replaceApiKey(ACCOUNT_A, other.apiKeyHash, 'cb_other')).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await storage.accounts.get(ACCOUNT_B)).toEqual(other);
  });

  test('accounts: inserting an existing id throws and keeps the first', async (storage, build) => {
    const account = build.account({ id: ACCOUNT_A });
    await storage.accounts.insert(account);
    await expect(storage.accounts.insert({ ...account, name: 'Other', apiKeyHash: 'other-hash' })).rejects.toThrow();
    expect(await storage.accounts.get(ACCOUNT_A)).toEqual(account);
  });

  test('accounts: records are copies, in and out', async (storage, build) => {
    const account = build.account({ id: ACCOUNT_A });
    await storage.accounts.insert(account);
    account.name = 'changed after insert';
    const read = await storage.accounts.get(ACCOUNT_A);
    read!.name = 'changed after get';
    expect((await storage.accounts.get(ACCOUNT_A))!.name).toBe('Clinic Ñandú');
  });
}
