import { webhookSigningSecret } from '../../contract/signature.js';
import { FILTERABLE_EVENT_TYPES } from '../../contract/webhooks.js';
import type { CoreDeps } from '../deps.js';
import type { OutboxMessage, WebhookEndpoint } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { nowIso } from '../time.js';
import { healthOf } from './health.js';
import { countsOf } from './log.js';
import { pingWebhook } from './ping.js';
import { validateWebhookUrl } from './url.js';

/*
 * Webhook endpoints beside the account's default one (the `webhookUrl` setting, which stays as it is).
 *
 * - A message goes to the default endpoint and to every enabled endpoint whose filter takes its type, each
 *   a delivery of its own, stored with the message (fan-out when it is stored): its order, retries, parking,
 *   pauses and rate limit are the endpoint's alone, so one failing or slow endpoint never delays another.
 * - Every endpoint receives a message under the same message id (`webhook-id`, `meta.messageId`).
 * - An endpoint is pinged when it is created or its URL changes, like the default one, and is enabled only
 *   when it answers. A disabled endpoint gets no new messages; those already stored for it wait.
 * - Deleting an endpoint deletes its deliveries.
 * - Health (health.ts): an endpoint failing for the configured time is disabled by the delivery pass;
 *   enabling it again (or a new URL that answers the ping) resets its failure clock.
 */

/** Endpoints an account may have beside its default one: fan-out reads them for every message. */
export const MAX_WEBHOOK_ENDPOINTS = 20;

// The message types a filter may name are the wire contract's, which the request schemas take too.
export { FILTERABLE_EVENT_TYPES };


/** Whether one filter entry takes `type`: the exact type, or a `prefix.*` the type starts with. */
function patternTakes(pattern: string, type: string): boolean {
  return pattern.endsWith('.*') ? type.startsWith(pattern.slice(0, -1)) : pattern === type;
}

/** Whether an endpoint with these filters receives messages of `type`; an empty filter takes every type. */
export function eventTypesTake(eventTypes: readonly string[], type: string): boolean {
  return eventTypes.length === 0 || eventTypes.some((pattern) => patternTakes(pattern, type));
}

/**
 * Checks an endpoint's filter: each entry must take at least one message type, so a typo does not
 * silently leave an endpoint without messages. Returns the entries without duplicates, in their order.
 * @throws CoreError `WEBHOOK_EVENT_TYPE_UNKNOWN` naming the entries that take no type.
 */
export function validateEventTypes(eventTypes: readonly string[]): string[] {
  const unknown = eventTypes.filter((pattern) => !FILTERABLE_EVENT_TYPES.some((type) => patternTakes(pattern, type)));
  if (unknown.length > 0) {
    throw new CoreError('WEBHOOK_EVENT_TYPE_UNKNOWN', `eventTypes: ${unknown.map((p) => JSON.stringify(p)).join(', ')} match no message type; expected one of ${FILTERABLE_EVENT_TYPES.join(', ')}, or a prefix ending in ".*" such as "network-query.*"`, {
      details: { unknown, known: FILTERABLE_EVENT_TYPES },
    });
  }
  return [...new Set(eventTypes)];
}

/** The outbox id of a message's delivery to an extra endpoint: one per message and endpoint. */
export function deliveryIdOf(messageId: string, endpointId: string): string {
  return `${messageId}:${endpointId}`;
}

/** The copy of a default-endpoint outbox record for an extra endpoint: its own id and stream, the same message. */
export function deliveryFor(message: OutboxMessage, endpointId: string): OutboxMessage {
  return {
    ...message,
    id: deliveryIdOf(message.id, endpointId),
    messageId: message.id,
    endpointId,
    streamKey: `${message.streamKey}@${endpointId}`,
  };
}

/** The message id a delivery is sent under (`webhook-id`). */
export function messageIdOf(delivery: OutboxMessage): string {
  return delivery.messageId ?? delivery.id;
}

export function endpointToWire(endpoint: WebhookEndpoint, messages: { pending: number; failing: number; delivered: number; parked: number }) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    enabled: endpoint.enabled,
    eventTypes: endpoint.eventTypes,
    signingSecret: endpoint.secret,
    previousSecretExpiresAt: endpoint.previousSecretUntil ?? null,
    statusDetail: endpoint.statusDetail,
    health: healthOf(endpoint.enabled, endpoint.failingSince),
    failingSince: endpoint.failingSince ?? null,
    messages,
    createdAt: endpoint.createdAt,
    updatedAt: endpoint.updatedAt,
  };
}

/**
 * Endpoints as answered, in the order given, each with its message counts (zero when it has none).
 * Throws nothing.
 */
export async function endpointsToWire(deps: Pick<CoreDeps, 'storage'>, accountId: string, endpoints: readonly WebhookEndpoint[]) {
  const counts = await deps.storage.outbox.countsByEndpoint(accountId);
  return endpoints.map((endpoint) => endpointToWire(endpoint, countsOf(counts, endpoint.id)));
}

type EndpointDeps = Pick<CoreDeps, 'storage' | 'webhookSender' | 'clock' | 'ids' | 'secrets' | 'config'>;

async function ping(deps: EndpointDeps, url: string, secret: string) {
  return pingWebhook(deps, { url, key: secret, token: deps.secrets.randomToken(16) });
}

/**
 * Creates an endpoint: the URL is checked and pinged at once (the endpoint is enabled only when it answers
 * `{pong}`, unless created with `enabled: false`), and gets a secret of its own.
 * @throws CoreError `WEBHOOK_URL_INVALID`, `WEBHOOK_EVENT_TYPE_UNKNOWN`, `WEBHOOK_ENDPOINT_LIMIT` (the account has
 * `MAX_WEBHOOK_ENDPOINTS` already).
 */
export async function createEndpoint(
  deps: EndpointDeps,
  accountId: string,
  input: { url: string; description?: string | undefined; eventTypes?: string[] | undefined; enabled?: boolean | undefined },
): Promise<WebhookEndpoint> {
  const url = validateWebhookUrl(input.url, { allowPrivate: deps.config.webhookAllowPrivate });
  const eventTypes = validateEventTypes(input.eventTypes ?? []);
  if ((await deps.storage.webhookEndpoints.count(accountId)) >= MAX_WEBHOOK_ENDPOINTS) {
    throw new CoreError('WEBHOOK_ENDPOINT_LIMIT', `an account has at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints besides webhookUrl; delete one first`, {
      details: { max: MAX_WEBHOOK_ENDPOINTS },
    });
  }
  const secret = webhookSigningSecret(deps.secrets.randomToken(32));
  const wanted = input.enabled ?? true;
  const pinged = wanted ? await ping(deps, url, secret) : undefined;
  const now = nowIso(deps.clock);
  const endpoint: WebhookEndpoint = {
    id: deps.ids.next(),
    accountId,
    url,
    description: input.description ?? '',
    enabled: pinged?.ok ?? false,
    eventTypes,
    secret,
    statusDetail: pinged?.detail ?? null,
    createdAt: now,
    updatedAt: now,
  };
  await deps.storage.webhookEndpoints.insert(endpoint);
  return endpoint;
}

/** The account's endpoints besides the default one, oldest first (ties by id); empty when it has none. Throws nothing. */
export async function listEndpoints(deps: Pick<CoreDeps, 'storage'>, accountId: string): Promise<WebhookEndpoint[]> {
  return deps.storage.webhookEndpoints.list(accountId);
}

/** @throws CoreError `WEBHOOK_ENDPOINT_NOT_FOUND` when missing or another account's. */
export async function getEndpoint(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string): Promise<WebhookEndpoint> {
  const endpoint = await deps.storage.webhookEndpoints.get(accountId, id);
  if (!endpoint) throw new CoreError('WEBHOOK_ENDPOINT_NOT_FOUND', 'No webhook endpoint with this id in your account');
  return endpoint;
}

/**
 * Changes an endpoint. A new URL is pinged like a new endpoint. `enabled: true` (or a new URL that answers)
 * turns it on, resets its failure clock and makes the deliveries waiting for it due at once; `enabled:
 * false` turns it off.
 * @throws CoreError `WEBHOOK_ENDPOINT_NOT_FOUND`, `WEBHOOK_URL_INVALID`, `WEBHOOK_EVENT_TYPE_UNKNOWN`.
 */
export async function updateEndpoint(
  deps: EndpointDeps,
  accountId: string,
  id: string,
  input: { url?: string | undefined; description?: string | undefined; eventTypes?: string[] | undefined; enabled?: boolean | undefined },
): Promise<WebhookEndpoint> {
  const current = await getEndpoint(deps, accountId, id);
  const url = input.url === undefined ? current.url : validateWebhookUrl(input.url, { allowPrivate: deps.config.webhookAllowPrivate });
  const eventTypes = input.eventTypes === undefined ? current.eventTypes : validateEventTypes(input.eventTypes);
  let enabled = input.enabled ?? current.enabled;
  let statusDetail = current.statusDetail;
  if (url !== current.url && enabled) {
    const pinged = await ping(deps, url, current.secret);
    enabled = pinged.ok;
    statusDetail = pinged.detail;
  } else if (input.enabled === true && !current.enabled) {
    statusDetail = `Enabled at ${nowIso(deps.clock)}`;
  } else if (input.enabled === false && current.enabled) {
    statusDetail = `Disabled by the account at ${nowIso(deps.clock)}`;
  }
  const updated = await deps.storage.webhookEndpoints.update({
    ...current,
    url,
    description: input.description ?? current.description,
    eventTypes,
    enabled,
    statusDetail,
    updatedAt: nowIso(deps.clock),
  });
  if (!updated) throw new CoreError('WEBHOOK_ENDPOINT_NOT_FOUND', 'No webhook endpoint with this id in your account');
  if (updated.enabled && (!current.enabled || url !== current.url)) {
    // Enabled again, or a new receiver that answered: its failure clock starts afresh.
    await deps.storage.webhookEndpoints.setFailingSince(accountId, id, null);
    delete updated.failingSince;
  }
  if (updated.enabled && !current.enabled) await resumeEndpointDeliveries(deps, accountId, id);
  return updated;
}

/** How long the old secret keeps signing after a rotation, unless the rotation says otherwise. */
export const DEFAULT_SECRET_GRACE_MS = 24 * 3_600_000;
/** The longest grace period a rotation may ask for. */
export const MAX_SECRET_GRACE_MS = 7 * 24 * 3_600_000;

/**
 * Gives the endpoint a new secret. Until `graceMs` from now (default 24 h), messages are signed with both
 * the new and the old secret (two `v1,` values in `webhook-signature`), so receivers switch without
 * missing one; after it, with the new one only. A rotation during a grace period ends that one: the
 * secret replaced now is the one kept. @throws CoreError `WEBHOOK_ENDPOINT_NOT_FOUND`.
 */
export async function rotateEndpointSecret(
  deps: Pick<CoreDeps, 'storage' | 'clock' | 'secrets'>,
  accountId: string,
  id: string,
  graceMs: number = DEFAULT_SECRET_GRACE_MS,
): Promise<WebhookEndpoint> {
  const current = await getEndpoint(deps, accountId, id);
  const now = deps.clock.now();
  const rotated: WebhookEndpoint = {
    ...current,
    secret: webhookSigningSecret(deps.secrets.randomToken(32)),
    previousSecret: current.secret,
    previousSecretUntil: new Date(now.getTime() + Math.min(Math.max(0, graceMs), MAX_SECRET_GRACE_MS)).toISOString(),
    updatedAt: now.toISOString(),
  };
  const updated = await deps.storage.webhookEndpoints.update(rotated);
  if (!updated) throw new CoreError('WEBHOOK_ENDPOINT_NOT_FOUND', 'No webhook endpoint with this id in your account');
  return updated;
}

/** Deletes the endpoint and every delivery stored for it. @throws CoreError `WEBHOOK_ENDPOINT_NOT_FOUND`. */
export async function removeEndpoint(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string): Promise<void> {
  const removed = await deps.storage.transaction(async (tx) => {
    if (!(await tx.webhookEndpoints.remove(accountId, id))) return false;
    await tx.outbox.removeEndpointDeliveries(accountId, id);
    return true;
  });
  if (!removed) throw new CoreError('WEBHOOK_ENDPOINT_NOT_FOUND', 'No webhook endpoint with this id in your account');
}

/** Makes the pending deliveries of one endpoint due now (it was just enabled). Attempts are kept. */
async function resumeEndpointDeliveries(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string, endpointId: string): Promise<void> {
  const now = nowIso(deps.clock);
  const waiting = (await deps.storage.outbox.list(accountId, 'pending')).filter((m) => m.endpointId === endpointId && m.nextAttemptAt > now);
  await deps.storage.outbox.updateMany(waiting.map((m) => ({ ...m, nextAttemptAt: now })));
}
