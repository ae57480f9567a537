import type { CoreDeps } from './deps.js';
import type { Account } from './domain/types.js';
import { CoreError } from './errors.js';
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

/**
 * The account an API key belongs to. The key is looked up by its SHA-256: keys are high-entropy random
 * tokens, so a fast hash is enough and the lookup is an index hit rather than a compare against every key.
 */
export async function authenticate(deps: Pick<CoreDeps, 'storage' | 'secrets'>, apiKey: string | undefined): Promise<Account> {
  if (!apiKey || apiKey.length > 512) {
    throw new CoreError('UNAUTHORIZED', 'Send your API key in the x-api-key header');
  }
  const hash = deps.secrets.sha256Hex(apiKey);
  const account = await deps.storage.accounts.getByApiKeyHash(hash);
  if (!account || !deps.secrets.equal(account.apiKeyHash, hash)) {
    throw new CoreError('UNAUTHORIZED', 'The API key is not valid');
  }
  return account;
}
