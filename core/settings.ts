import { webhookSigningSecret } from '../contract/signature.js';
import type { CoreDeps } from './deps.js';
import type { WebhookSettings } from './domain/types.js';
import { nowIso } from './time.js';
import { resumePendingMessages, retryParked } from './webhooks/requeue.js';
import { webhookStatus } from './webhooks/status.js';
import { pingWebhook } from './webhooks/ping.js';
import { validateWebhookUrl } from './webhooks/url.js';

/** The secret is derived from the key, not stored: whatever changes the key changes it, and old rows have it. */
export function settingsToWire(settings: WebhookSettings) {
  return {
    id: settings.accountId,
    webhookUrl: settings.webhookUrl,
    webhookKey: settings.webhookKey,
    webhookSigningSecret: webhookSigningSecret(settings.webhookKey),
    webhookEnabled: settings.webhookEnabled,
    webhookStatusDetail: settings.webhookStatusDetail,
  };
}

async function currentSettings(deps: Pick<CoreDeps, 'storage' | 'secrets' | 'clock'>, accountId: string): Promise<WebhookSettings> {
  const stored = await deps.storage.webhookSettings.get(accountId);
  if (stored) return stored;
  // Accounts created before settings existed get theirs on first use.
  const created: WebhookSettings = {
    accountId,
    webhookUrl: null,
    webhookKey: deps.secrets.randomToken(32),
    webhookEnabled: false,
    webhookStatusDetail: null,
    updatedAt: nowIso(deps.clock),
  };
  await deps.storage.webhookSettings.put(created);
  return created;
}

export async function getSettings(deps: Pick<CoreDeps, 'storage' | 'secrets' | 'clock'>, accountId: string): Promise<WebhookSettings> {
  return currentSettings(deps, accountId);
}

/**
 * Sets (or with an empty string, clears) the webhook URL. A new URL is pinged at once (expects
 * `{pong}` within 2 s); the endpoint is enabled only when it answers, and the outcome is the status detail.
 * Messages stored meanwhile stay pending, never lost, and become due at once when the endpoint works.
 * Setting the URL is how the default endpoint is re-enabled (after a 410, or a disable for failing too
 * long): it resets its failure clock.
 */
export async function updateSettings(deps: CoreDeps, accountId: string, input: { webhookUrl: string }): Promise<WebhookSettings> {
  const current = await currentSettings(deps, accountId);
  if (input.webhookUrl.trim() === '') {
    const { failingSince: _clock, ...rest } = current;
    const cleared: WebhookSettings = { ...rest, webhookUrl: null, webhookEnabled: false, webhookStatusDetail: null, updatedAt: nowIso(deps.clock) };
    await deps.storage.webhookSettings.put(cleared);
    await deps.storage.webhookSettings.setFailingSince(accountId, null);
    return cleared;
  }
  const webhookUrl = validateWebhookUrl(input.webhookUrl, { allowPrivate: deps.config.webhookAllowPrivate });
  const ping = await pingWebhook(deps, { url: webhookUrl, key: current.webhookKey, token: deps.secrets.randomToken(16) });
  const updated: WebhookSettings = {
    ...current,
    webhookUrl,
    webhookEnabled: ping.ok,
    webhookStatusDetail: ping.detail,
    updatedAt: nowIso(deps.clock),
  };
  await deps.storage.webhookSettings.put(updated);
  if (ping.ok) {
    // Set again and answering: the default endpoint's failure clock starts afresh (health.ts).
    await deps.storage.webhookSettings.setFailingSince(accountId, null);
    delete updated.failingSince;
    await resumePendingMessages(deps, accountId);
  }
  return updated;
}

export async function getWebhookStatus(deps: Pick<CoreDeps, 'storage'>, accountId: string) {
  return webhookStatus(deps, accountId);
}

export async function retryWebhookMessages(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string) {
  return retryParked(deps, accountId);
}
