import { z } from 'zod';
import { getSettings, getWebhookStatus, retryWebhookMessages, settingsToWire, updateSettings } from '../../settings.js';
import { createEndpoint, endpointToWire, getEndpoint, removeEndpoint, updateEndpoint } from '../../webhooks/endpoints.js';
import { defineRoute, json, noContent } from '../router.js';
import { settingsUpdateSchema, webhookEndpointCreateSchema, webhookEndpointUpdateSchema } from '../schemas.js';
import {
  parkedMessagesResponse,
  settingsResponse,
  webhookEndpointListResponse,
  webhookEndpointResponse,
  webhookRetryResponse,
  webhookStatusResponse,
} from '../../../contract/responses.js';

/** Parked messages listed at once, at most: support needs the oldest first, not all of them. */
const PARKED_PAGE_MAX = 100;

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
    method: 'GET',
    path: '/settings/webhook',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Webhook delivery status: enabled, detail, and the account\'s messages by state (pending, delivered, parked)',
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
    summary: 'Parked webhook messages (every attempt failed), oldest first, with their last error',
    query: z.object({ limit: z.coerce.number().int().min(1).max(PARKED_PAGE_MAX).optional() }),
    success: { status: 200, schema: parkedMessagesResponse },
    async handle({ deps, account, query }) {
      const parked = await deps.storage.outbox.list(account.id, 'parked', query.limit ?? PARKED_PAGE_MAX);
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
    summary: 'Redeliver every parked webhook message (same messageId)',
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
      return json(201, endpointToWire(await createEndpoint(deps, account.id, body)));
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
      return json(200, { endpoints: (await deps.storage.webhookEndpoints.list(account.id)).map(endpointToWire) });
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
      return json(200, endpointToWire(await getEndpoint(deps, account.id, params.id!)));
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
      return json(200, endpointToWire(await updateEndpoint(deps, account.id, params.id!, body)));
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
      await removeEndpoint(deps, account.id, params.id!);
      return noContent();
    },
  }),
];
