import { z } from 'zod';
import { getSettings, getWebhookStatus, retryWebhookMessages, settingsToWire, updateSettings } from '../../settings.js';
import { rotateApiKey } from '../../accounts.js';
import {
  createEndpoint,
  endpointsToWire,
  FILTERABLE_EVENT_TYPES,
  getEndpoint,
  listEndpoints,
  removeEndpoint,
  rotateEndpointSecret,
  updateEndpoint,
} from '../../webhooks/endpoints.js';
import { listAttempts, MAX_ATTEMPTS_PAGE } from '../../webhooks/log.js';
import { listParkedMessages, MAX_PARKED_PAGE } from '../../webhooks/status.js';
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
  defineRoute('getSettings', {
    async handle({ deps, account }) {
      return json(200, settingsToWire(await getSettings(deps, account.id)));
    },
  }),
  defineRoute('updateSettings', {
    body: settingsUpdateSchema,
    async handle({ deps, account, body }) {
      return json(200, settingsToWire(await updateSettings(deps, account.id, body)));
    },
  }),
  defineRoute('rotateApiKey', {
    async handle({ deps, account }) {
      return json(200, await rotateApiKey(deps, account.id));
    },
  }),
  defineRoute('getWebhookStatus', {
    async handle({ deps, account }) {
      return json(200, await getWebhookStatus(deps, account.id));
    },
  }),
  defineRoute('listParkedWebhookMessages', {
    query: z.object({ limit: z.coerce.number().int().min(1).max(MAX_PARKED_PAGE).optional() }),
    async handle({ deps, account, query }) {
      return json(200, await listParkedMessages(deps, account.id, query.limit));
    },
  }),
  defineRoute('retryWebhookRequests', {
    async handle({ deps, account }) {
      return json(200, await retryWebhookMessages(deps, account.id));
    },
  }),
  defineRoute('createWebhookEndpoint', {
    body: webhookEndpointCreateSchema,
    async handle({ deps, account, body }) {
      return json(201, (await endpointsToWire(deps, account.id, [await createEndpoint(deps, account.id, body)]))[0]);
    },
  }),
  defineRoute('listWebhookEndpoints', {
    async handle({ deps, account }) {
      return json(200, { endpoints: await endpointsToWire(deps, account.id, await listEndpoints(deps, account.id)) });
    },
  }),
  defineRoute('getWebhookEndpoint', {
    async handle({ deps, account, params }) {
      return json(200, (await endpointsToWire(deps, account.id, [await getEndpoint(deps, account.id, params.id)]))[0]);
    },
  }),
  defineRoute('updateWebhookEndpoint', {
    body: webhookEndpointUpdateSchema,
    async handle({ deps, account, params, body }) {
      return json(200, (await endpointsToWire(deps, account.id, [await updateEndpoint(deps, account.id, params.id, body)]))[0]);
    },
  }),
  defineRoute('removeWebhookEndpoint', {
    async handle({ deps, account, params }) {
      await removeEndpoint(deps, account.id, params.id);
      return noContent();
    },
  }),
  defineRoute('listWebhookAttempts', {
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
    async handle({ deps, account, query }) {
      return json(200, await listAttempts(deps, account.id, query));
    },
  }),
  defineRoute('replayWebhookMessages', {
    body: webhookReplaySchema,
    async handle({ deps, account, params, body }) {
      return json(200, await replayMessages(deps, account.id, params.id, replayRequestOf(body)));
    },
  }),
  defineRoute('sendWebhookTestEvent', {
    body: webhookTestEventSchema,
    async handle({ deps, account, params, body }) {
      return json(200, await sendTestEvent(deps, account.id, params.id, body.type));
    },
  }),
  defineRoute('rotateWebhookEndpointSecret', {
    body: webhookSecretRotationSchema,
    async handle({ deps, account, params, body }) {
      const graceMs = body?.graceSeconds === undefined ? undefined : body.graceSeconds * 1000;
      const rotated = await rotateEndpointSecret(deps, account.id, params.id, graceMs);
      return json(200, (await endpointsToWire(deps, account.id, [rotated]))[0]);
    },
  }),
];
