import type { CoreDeps } from '../deps.js';
import type { OutboxMessage } from '../domain/types.js';
import { healthOf } from './health.js';
import { countsOf } from './log.js';

/** Parked messages listed at once, at most: support needs the oldest first, not all of them. */
export const MAX_PARKED_PAGE = 100;

export interface WebhookStatus {
  webhookEnabled: boolean;
  webhookStatusDetail: string | null;
  /** `disabled` when off, `failing` while every attempt since `failingSince` failed, else `healthy`. */
  health: ReturnType<typeof healthOf>;
  /** The first failed attempt since the last successful delivery; null when healthy. */
  failingSince: string | null;
  /** Messages of the default endpoint still pending (being delivered or waiting for a retry). */
  processing: number;
  /** Messages of the default endpoint parked after their last failed attempt, until `retryParked`. */
  failed: number;
  /**
   * The default endpoint's messages by state: pending (in flight or waiting for a retry), delivered (kept
   * for the retention, then pruned), parked (every attempt failed). Extra endpoints count theirs on their own.
   */
  messages: Record<OutboxMessage['status'], number>;
}

/**
 * `GET /settings/webhook`: the default endpoint (`webhookUrl`), its health and its messages. An account
 * without settings reports a disabled endpoint.
 */
export async function webhookStatus(deps: Pick<CoreDeps, 'storage'>, accountId: string): Promise<WebhookStatus> {
  const [settings, all] = await Promise.all([deps.storage.webhookSettings.get(accountId), deps.storage.outbox.countsByEndpoint(accountId)]);
  const counts = countsOf(all, null);
  const enabled = Boolean(settings?.webhookEnabled && settings.webhookUrl);
  return {
    webhookEnabled: enabled,
    webhookStatusDetail: settings?.webhookStatusDetail ?? null,
    health: healthOf(enabled, settings?.failingSince),
    failingSince: settings?.failingSince ?? null,
    processing: counts.pending,
    failed: counts.parked,
    messages: { pending: counts.pending, delivered: counts.delivered, parked: counts.parked },
  };
}

/**
 * `GET /settings/webhook/parked`: the default endpoint's parked messages, oldest first (ties by id), at most
 * `limit` (`MAX_PARKED_PAGE` when not given), each with its type (null when its body names none) and last
 * error. Other endpoints' parked messages are not listed. Throws nothing.
 */
export async function listParkedMessages(deps: Pick<CoreDeps, 'storage'>, accountId: string, limit = MAX_PARKED_PAGE) {
  const parked = await deps.storage.outbox.listForEndpoint(accountId, null, { status: 'parked' }, limit);
  return {
    messages: parked.map((message) => ({
      messageId: message.id,
      type: (JSON.parse(message.body) as { meta?: { type?: string } }).meta?.type ?? null,
      createdAt: message.createdAt,
      attempts: message.attempts,
      lastError: message.lastError ?? null,
    })),
  };
}
