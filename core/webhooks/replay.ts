import type { CoreDeps } from '../deps.js';
import type { OutboxMessage } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { nowIso } from '../time.js';
import { deliveryFor, deliveryIdOf, getEndpoint } from './endpoints.js';
import { DEFAULT_ENDPOINT_ID } from './log.js';

/*
 * Replay: messages sent again to one endpoint. A replay is a new attempt of the same message (same
 * message id and bytes, so receivers deduplicate by id) with a fresh attempt budget, due at once; the
 * delivery pass sends a stream's messages oldest first, so a replay keeps stream order. Messages already
 * waiting for a retry are left as they are. Only what the retention kept can be replayed.
 */

/** Messages replayed by one request, at most; `more` says when there were others. */
export const MAX_REPLAY = 1_000;

export type ReplayRequest =
  /** One message, by its message id: sent to the endpoint even if it never went there (filter, created later). */
  | { messageId: string }
  /** Every parked message of the endpoint. */
  | { parked: true }
  /** Every message of the endpoint created in [since, until). */
  | { since: string; until: string };

function restarted(message: OutboxMessage, now: string): OutboxMessage {
  const { lastError: _lastError, deliveredAt: _deliveredAt, ...rest } = message;
  return { ...rest, status: 'pending', attempts: 0, nextAttemptAt: now };
}

/**
 * Replays messages to one endpoint (`endpointId`: an extra endpoint's id or `default`). Returns how many
 * were replayed and whether more matched than `MAX_REPLAY` (replay again with a later `since` for them).
 * @throws CoreError `WEBHOOK_ENDPOINT_NOT_FOUND`, `WEBHOOK_MESSAGE_NOT_FOUND` (no such message, or pruned).
 */
export async function replayMessages(
  deps: Pick<CoreDeps, 'storage' | 'clock'>,
  accountId: string,
  endpointIdOrDefault: string,
  request: ReplayRequest,
): Promise<{ replayed: number; more: boolean }> {
  const endpointId = endpointIdOrDefault === DEFAULT_ENDPOINT_ID ? null : (await getEndpoint(deps, accountId, endpointIdOrDefault)).id;
  const now = nowIso(deps.clock);
  if ('messageId' in request) {
    const delivery = await deps.storage.outbox.get(accountId, endpointId === null ? request.messageId : deliveryIdOf(request.messageId, endpointId));
    if (delivery && (delivery.endpointId ?? null) === endpointId) {
      if (delivery.status === 'pending') return { replayed: 0, more: false };
      await deps.storage.outbox.update(restarted(delivery, now));
      return { replayed: 1, more: false };
    }
    // Never went to this endpoint: the message itself is the default endpoint's record.
    const original = await deps.storage.outbox.get(accountId, request.messageId);
    if (!original || original.endpointId !== undefined || endpointId === null) {
      throw new CoreError('WEBHOOK_MESSAGE_NOT_FOUND', 'No webhook message with this id in your account (or it is past the retention)');
    }
    await deps.storage.outbox.add(restarted(deliveryFor(original, endpointId), now));
    return { replayed: 1, more: false };
  }
  const filter = 'parked' in request ? { status: 'parked' as const } : { since: request.since, until: request.until };
  const found = await deps.storage.outbox.listForEndpoint(accountId, endpointId, filter, MAX_REPLAY + 1);
  const chosen = found.slice(0, MAX_REPLAY).filter((message) => message.status !== 'pending');
  await deps.storage.outbox.updateMany(chosen.map((message) => restarted(message, now)));
  return { replayed: chosen.length, more: found.length > MAX_REPLAY };
}
