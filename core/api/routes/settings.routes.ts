import { z } from 'zod';
import { getSettings, getWebhookStatus, retryWebhookMessages, settingsToWire, updateSettings } from '../../settings.js';
import { defineRoute, json } from '../router.js';
import { settingsUpdateSchema } from '../schemas.js';
import { parkedMessagesResponse, settingsResponse, webhookRetryResponse, webhookStatusResponse } from '../../../contract/responses.js';

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
];
