import type { CoreDeps } from './deps.js';
import type { Account } from './domain/types.js';
import { CoreError } from './errors.js';
import type { ClockPort } from './ports/clock.port.js';
import { RecentlyUsed } from './recently-used.js';
import { nowIso } from './time.js';

/** API keys carry a visible prefix so a person can tell a carebridge key in a config file. */
const API_KEY_PREFIX = 'cb_';
/** How much of the key is kept in clear to identify it in lists (never enough to use it). */
const VISIBLE_KEY_CHARS = 10;

export interface CreatedAccount {
  account: Account;
  /** Shown once: only its hash is stored. */
  apiKey: string;
}

type AccountDeps = Pick<CoreDeps, 'storage' | 'secrets' | 'ids' | 'clock'>;

export async function createAccount(deps: AccountDeps, input: { name: string }): Promise<CreatedAccount> {
  const name = input.name.trim();
  if (name === '' || name.length > 200) {
    throw new CoreError('VALIDATION_FAILED', 'name: required, at most 200 characters');
  }
  const apiKey = `${API_KEY_PREFIX}${deps.secrets.randomToken(32)}`;
  const now = nowIso(deps.clock);
  const account: Account = {
    id: deps.ids.next(),
    name,
    apiKeyHash: deps.secrets.sha256Hex(apiKey),
    apiKeyPrefix: apiKey.slice(0, VISIBLE_KEY_CHARS),
    createdAt: now,
  };
  await deps.storage.transaction(async (tx) => {
    await tx.accounts.insert(account);
    await tx.webhookSettings.put({
      accountId: account.id,
      webhookUrl: null,
      webhookKey: deps.secrets.randomToken(32),
      webhookEnabled: false,
      webhookStatusDetail: null,
      updatedAt: now,
    });
  });
  return { account, apiKey };
}

/** How long an authenticated key's account is kept in process by default. */
export const DEFAULT_API_KEY_CACHE_MS = 5_000;
/** Most keys kept at once: one entry per key recently used, whatever the number of accounts. */
const API_KEY_CACHE_ENTRIES = 10_000;

/**
 * Accounts by API key hash, each kept `ttlMs` after it was looked up, so most requests authenticate
 * without a database round trip. The price: a key that was replaced keeps working in this process for at
 * most `ttlMs`. Only keys that worked are kept; a wrong key always asks the database.
 */
export class ApiKeyCache {
  private readonly entries = new RecentlyUsed<{ account: Account; expiresAtMs: number }>(API_KEY_CACHE_ENTRIES);

  constructor(
    private readonly clock: ClockPort,
    readonly ttlMs: number = DEFAULT_API_KEY_CACHE_MS,
  ) {}

  /** The account of `apiKey` when it was looked up less than `ttlMs` ago. */
  get(apiKey: string): Account | undefined {
    const entry = this.entries.get(apiKey);
    if (!entry || entry.expiresAtMs <= this.clock.now().getTime()) return undefined;
    return entry.account;
  }

  set(apiKey: string, account: Account): void {
    if (this.ttlMs > 0) this.entries.set(apiKey, { account, expiresAtMs: this.clock.now().getTime() + this.ttlMs });
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * The account an API key belongs to. The key is looked up by its SHA-256: keys are high-entropy random
 * tokens, so a fast hash is enough and the lookup is an index hit rather than a compare against every key.
 * With a cache, a key looked up in the last few seconds is not looked up again.
 */
export async function authenticate(deps: Pick<CoreDeps, 'storage' | 'secrets'>, apiKey: string | undefined, cache?: ApiKeyCache): Promise<Account> {
  if (!apiKey || apiKey.length > 512) {
    throw new CoreError('UNAUTHORIZED', 'Send your API key in the x-api-key header');
  }
  // Looked up by the key itself, before hashing: the SHA-256 was a few percent of an authenticated read.
  // The cache holds a key only as long as its entry lives, in the process every request brings it to.
  const cached = cache?.get(apiKey);
  if (cached) return cached;
  const hash = deps.secrets.sha256Hex(apiKey);
  const account = await deps.storage.accounts.getByApiKeyHash(hash);
  if (!account || !deps.secrets.equal(account.apiKeyHash, hash)) {
    throw new CoreError('UNAUTHORIZED', 'The API key is not valid');
  }
  cache?.set(apiKey, account);
  return account;
}

/**
 * Gives the account a new API key, shown once, and retires the old one: it stops working at once where
 * no cache holds it, and within the API's key cache time (a few seconds) everywhere.
 */
export async function rotateApiKey(deps: Pick<CoreDeps, 'storage' | 'secrets'>, accountId: string): Promise<{ apiKey: string; apiKeyPrefix: string }> {
  const apiKey = `${API_KEY_PREFIX}${deps.secrets.randomToken(32)}`;
  const apiKeyPrefix = apiKey.slice(0, VISIBLE_KEY_CHARS);
  if (!(await deps.storage.accounts.replaceApiKey(accountId, deps.secrets.sha256Hex(apiKey), apiKeyPrefix))) {
    throw new CoreError('NOT_FOUND', `No account ${accountId}`);
  }
  return { apiKey, apiKeyPrefix };
}
