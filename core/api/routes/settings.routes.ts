import { getSettings, getWebhookStatus, retryWebhookMessages, settingsToWire, updateSettings } from '../../settings.js';
import { defineRoute, json } from '../router.js';
import { settingsUpdateSchema } from '../schemas.js';

/** Settings live outside /medical/v1, as in the public Metriport API. */
export const settingsRoutes = [
  defineRoute({
    method: 'GET',
    path: '/settings',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Webhook settings of the account (URL, signing key, status)',
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
    async handle({ deps, account, body }) {
      return json(200, settingsToWire(await updateSettings(deps, account.id, body)));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/settings/webhook',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Webhook delivery status: enabled, detail, messages in flight and parked',
    async handle({ deps, account }) {
      return json(200, await getWebhookStatus(deps, account.id));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/settings/webhook/retry',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Redeliver every parked webhook message (same messageId)',
    async handle({ deps, account }) {
      return json(200, await retryWebhookMessages(deps, account.id));
    },
  }),
];
