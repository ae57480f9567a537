import type { OutboxMessage } from '../domain/types.js';
import type { StoragePort } from '../ports/storage.port.js';
import { patientIdOf, streamKeyOf, type PingMessage, type WebhookMessage } from './envelope.js';
import { deliveryFor, eventTypesTake } from './endpoints.js';

/**
 * Stores a message in the outbox (pending, due at once): once for the default endpoint, and once more for
 * each enabled extra endpoint whose filter takes its type (see endpoints.ts). Call it with the `tx` of the
 * transaction that makes the change the message reports, so both commit or neither does. `meta.when` is the creation time: order
 * and `when` then stay the same on every retry. The body is serialised here, once; the stream key is
 * derived from the message (`streamKeyOf`). `except` leaves one endpoint out (an extra endpoint's id, or
 * null for the default one): a notice about an endpoint never goes to it. Without the default endpoint's
 * record the message cannot be replayed to an endpoint it did not go to. Returns the default endpoint's
 * record (not stored when `except` is null).
 */
export async function enqueueMessage(
  tx: StoragePort,
  accountId: string,
  message: Exclude<WebhookMessage, PingMessage>,
  options: { except?: string | null } = {},
): Promise<OutboxMessage> {
  const record: OutboxMessage = {
    id: message.meta.messageId,
    accountId,
    type: message.meta.type,
    body: JSON.stringify(message),
    streamKey: streamKeyOf(message),
    status: 'pending',
    attempts: 0,
    nextAttemptAt: message.meta.when,
    createdAt: message.meta.when,
  };
  const patientId = patientIdOf(message);
  if (patientId !== undefined) record.patientId = patientId;
  if (options.except !== null) await tx.outbox.add(record);
  for (const endpoint of await tx.webhookEndpoints.list(accountId)) {
    if (endpoint.id === options.except) continue;
    if (endpoint.enabled && eventTypesTake(endpoint.eventTypes, record.type)) await tx.outbox.add(deliveryFor(record, endpoint.id));
  }
  return record;
}
