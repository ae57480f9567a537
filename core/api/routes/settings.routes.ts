import { z } from 'zod';
import { getSettings, getWebhookStatus, retryWebhookMessages, settingsToWire, updateSettings } from '../../settings.js';
import { rotateApiKey } from '../../accounts.js';
import type { CoreDeps } from '../../deps.js';
import type { WebhookEndpoint } from '../../domain/types.js';
import { createEndpoint, endpointToWire, FILTERABLE_EVENT_TYPES, getEndpoint, removeEndpoint, rotateEndpointSecret, updateEndpoint } from '../../webhooks/endpoints.js';
import { countsOf, listAttempts, MAX_ATTEMPTS_PAGE } from '../../webhooks/log.js';
import { replayMessages, type ReplayRequest } from '../../webhooks/replay.js';
import { sendTestEvent } from '../../webhooks/test-event.js';
import { CoreError } from '../../errors.js';
import { defineRoute, json, noContent } from '../router.js';
import {
  settingsUpdateSchema,
  webhookEndpointCreateSchema,
  webhookEndpointUpdateSchema,
  webhookReplaySchema,
  webhookSecretRotationSchema,
  webhookTestEventSchema,
} from '../schemas.js';
import {
  apiKeyRotationResponse,
  parkedMessagesResponse,
  settingsResponse,
  webhookAttemptPageResponse,
  webhookEndpointListResponse,
  webhookEndpointResponse,
  webhookReplayResponse,
  webhookRetryResponse,
  webhookStatusResponse,
  webhookTestEventResponse,
} from '../../../contract/responses.js';

/** Parked messages listed at once, at most: support needs the oldest first, not all of them. */
const PARKED_PAGE_MAX = 100;

/** Endpoints as answered, with their message counts. */
async function endpointsToWire(deps: Pick<CoreDeps, 'storage'>, accountId: string, endpoints: readonly WebhookEndpoint[]) {
  const counts = await deps.storage.outbox.countsByEndpoint(accountId);
  return endpoints.map((endpoint) => endpointToWire(endpoint, countsOf(counts, endpoint.id)));
}

const instantQuery = z.string().datetime({ offset: false }).describe('ISO 8601 instant, UTC (`Z`)');

/** The one replay a request asks for. @throws CoreError `VALIDATION_FAILED` unless exactly one mode is given. */
function replayRequestOf(body: z.output<typeof webhookReplaySchema>): ReplayRequest {
  const modes = [body.messageId !== undefined, body.parked === true, body.since !== undefined || body.until !== undefined].filter(Boolean).length;
  if (modes === 1) {
    if (body.messageId !== undefined) return { messageId: body.messageId };
    if (body.parked === true) return { parked: true };
    if (body.since !== undefined && body.until !== undefined) return { since: body.since, until: body.until };
  }
  throw new CoreError('VALIDATION_FAILED', 'give exactly one of: messageId; parked: true; since and until together', { details: { field: 'body' } });
}

/** Settings live outside /medical/v1, as in the public Metriport API. */
export const settingsRoutes = [
  defineRoute({
    method: 'GET',
    path: '/settings',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Webhook settings of the account (URL, signing key, status)',
    success: { status: 200, schema: settingsResponse },
    async handle({ deps, account }) {
      return json(200, settingsToWire(await getSettings(deps, account.id)));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/settings',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Set the webhook URL (pinged at once; an empty string clears it)',
    body: settingsUpdateSchema,
    success: { status: 200, schema: settingsResponse },
    async handle({ deps, account, body }) {
      return json(200, settingsToWire(await updateSettings(deps, account.id, body)));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/settings/api-key/rotate',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Give the account a new API key, answered this once; the key that made the call stops working within a few seconds',
    success: { status: 200, schema: apiKeyRotationResponse },
    async handle({ deps, account }) {
      return json(200, await rotateApiKey(deps, account.id));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/settings/webhook',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'The default endpoint (webhookUrl): enabled, detail, health, and its messages by state (pending, delivered, parked)',
    success: { status: 200, schema: webhookStatusResponse },
    async handle({ deps, account }) {
      return json(200, await getWebhookStatus(deps, account.id));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/settings/webhook/parked',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Parked messages of the default endpoint (every attempt failed), oldest first, with their last error',
    query: z.object({ limit: z.coerce.number().int().min(1).max(PARKED_PAGE_MAX).optional() }),
    success: { status: 200, schema: parkedMessagesResponse },
    async handle({ deps, account, query }) {
      const parked = await deps.storage.outbox.listForEndpoint(account.id, null, { status: 'parked' }, query.limit ?? PARKED_PAGE_MAX);
      return json(200, {
        messages: parked.map((message) => ({
          messageId: message.id,
          type: (JSON.parse(message.body) as { meta?: { type?: string } }).meta?.type ?? null,
          createdAt: message.createdAt,
          attempts: message.attempts,
          lastError: message.lastError ?? null,
        })),
      });
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/settings/webhook/retry',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Redeliver every parked message of the default endpoint (same messageId); other endpoints replay theirs',
    success: { status: 200, schema: webhookRetryResponse },
    async handle({ deps, account }) {
      return json(200, await retryWebhookMessages(deps, account.id));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/settings/webhook/endpoints',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Add a webhook endpoint beside webhookUrl, with its own secret and event type filter (pinged at once)',
    body: webhookEndpointCreateSchema,
    success: { status: 201, schema: webhookEndpointResponse },
    async handle({ deps, account, body }) {
      return json(201, (await endpointsToWire(deps, account.id, [await createEndpoint(deps, account.id, body)]))[0]);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/settings/webhook/endpoints',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'The webhook endpoints of the account besides webhookUrl, oldest first (at most 20)',
    success: { status: 200, schema: webhookEndpointListResponse },
    async handle({ deps, account }) {
      return json(200, { endpoints: await endpointsToWire(deps, account.id, await deps.storage.webhookEndpoints.list(account.id)) });
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/settings/webhook/endpoints/:id',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'One webhook endpoint',
    success: { status: 200, schema: webhookEndpointResponse },
    async handle({ deps, account, params }) {
      return json(200, (await endpointsToWire(deps, account.id, [await getEndpoint(deps, account.id, params.id)]))[0]);
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/settings/webhook/endpoints/:id',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Change a webhook endpoint (a new URL is pinged; enabled: true re-enables it)',
    body: webhookEndpointUpdateSchema,
    success: { status: 200, schema: webhookEndpointResponse },
    async handle({ deps, account, params, body }) {
      return json(200, (await endpointsToWire(deps, account.id, [await updateEndpoint(deps, account.id, params.id, body)]))[0]);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/settings/webhook/endpoints/:id',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Delete a webhook endpoint and the messages waiting for it',
    success: { status: 204 },
    async handle({ deps, account, params }) {
      await removeEndpoint(deps, account.id, params.id);
      return noContent();
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/settings/webhook/attempts',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'The delivery log: every attempt to deliver a message to an endpoint, newest first, filtered and paged by cursor',
    query: z.object({
      endpointId: z.string().trim().min(1).max(100).optional().describe('An endpoint id, or `default` for webhookUrl'),
      type: z.enum(FILTERABLE_EVENT_TYPES).optional(),
      patientId: z.string().trim().min(1).max(100).optional(),
      status: z.enum(['delivered', 'failed']).optional(),
      since: instantQuery.optional().describe('Attempts at or after this instant'),
      until: instantQuery.optional().describe('Attempts before this instant'),
      limit: z.coerce.number().int().min(1).max(MAX_ATTEMPTS_PAGE).optional().describe(`Attempts per page, at most ${MAX_ATTEMPTS_PAGE} (default 50)`),
      cursor: z.string().trim().min(1).max(200).optional().describe('nextCursor of the previous page'),
    }),
    success: { status: 200, schema: webhookAttemptPageResponse },
    async handle({ deps, account, query }) {
      return json(200, await listAttempts(deps, account.id, query));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/settings/webhook/endpoints/:id/replay',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Send messages again to one endpoint (`default`: webhookUrl), same messageId, in stream order: one message, every parked one, or a time window',
    body: webhookReplaySchema,
    success: { status: 200, schema: webhookReplayResponse },
    async handle({ deps, account, params, body }) {
      return json(200, await replayMessages(deps, account.id, params.id, replayRequestOf(body)));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/settings/webhook/endpoints/:id/test',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Send a sample message of any type to one endpoint (`default`: webhookUrl) now, signed, with meta.test: true; answers what the receiver did',
    body: webhookTestEventSchema,
    success: { status: 200, schema: webhookTestEventResponse },
    async handle({ deps, account, params, body }) {
      return json(200, await sendTestEvent(deps, account.id, params.id, body.type));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/settings/webhook/endpoints/:id/rotate-secret',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Give an endpoint a new secret; the old one keeps signing beside it for a grace period (default 24 h)',
    body: webhookSecretRotationSchema,
    success: { status: 200, schema: webhookEndpointResponse },
    async handle({ deps, account, params, body }) {
      const graceMs = body?.graceSeconds === undefined ? undefined : body.graceSeconds * 1000;
      const rotated = await rotateEndpointSecret(deps, account.id, params.id, graceMs);
      return json(200, (await endpointsToWire(deps, account.id, [rotated]))[0]);
    },
  }),
];
