import { z } from 'zod';
import { CoreError } from './errors.js';
import { webhookMetadataSchema } from './metadata.js';

/** Every `meta.type` a webhook message may carry. */
export type WebhookMessageType =
  | 'medical.document-download'
  | 'medical.document-conversion'
  | 'medical.document-bulk-download-urls'
  | 'medical.consolidated-data'
  | 'medical.bulk-patient-create'
  | 'network-query.hie'
  | 'network-query.pharmacy'
  | 'network-query.lab'
  | 'webhook.endpoint-disabled'
  | 'ping';

/*
 * The webhook messages of the legacy document flow and of bulk patient create (Webhook envelope,
 * Events, Patient entries in webhook messages): `{ meta: {messageId, requestId?, when, type, data?}, ...payload }`.
 * The schemas are exported so the client library parses exactly what the builders produce.
 */

const isoUtcSchema = z.iso.datetime();

function metaSchema<T extends Exclude<WebhookMessageType, 'ping'>>(type: T) {
  return z.object({
    messageId: z.string().min(1),
    requestId: z.string().min(1).optional(),
    when: isoUtcSchema,
    type: z.literal(type),
    data: webhookMetadataSchema.optional(),
    /**
     * Present (true) only on a test event (`POST /settings/webhook/endpoints/{id}/test`): a sample payload
     * whose ids and URLs lead nowhere. Absent on every real message.
     */
    test: z.literal(true).optional(),
  });
}

export const codeableConceptSchema = z.object({
  coding: z
    .array(z.object({ system: z.string().optional(), code: z.string().optional(), display: z.string().optional() }))
    .optional(),
  text: z.string().optional(),
});

/** Document reference in `medical.document-download` (size is a string there). */
export const webhookDocumentSchema = z.object({
  id: z.string().min(1),
  fileName: z.string().min(1),
  description: z.string().optional(),
  status: z.string().optional(),
  indexed: z.string().optional(),
  mimeType: z.string().optional(),
  size: z.string().optional(),
  type: codeableConceptSchema.optional(),
});

export const organizationIdentifierSchema = z.object({
  name: z.string(),
  identifierValues: z.array(z.string()),
});

/** Document reference in `medical.document-bulk-download-urls` (size is a number there, plus url). */
export const webhookBulkDocumentSchema = webhookDocumentSchema.extend({
  size: z.number().optional(),
  url: z.string().min(1),
  organizationIdentifiers: z.array(organizationIdentifierSchema).optional(),
});

const patientEntryBaseSchema = z.object({
  patientId: z.string().min(1),
  externalId: z.string().optional(),
  additionalIds: z.record(z.string(), z.array(z.string())).optional(),
  status: z.enum(['completed', 'failed']),
});

export const documentDownloadPatientSchema = patientEntryBaseSchema.extend({
  type: z.literal('document-download'),
  documents: z.array(webhookDocumentSchema),
});

export const documentConversionPatientSchema = patientEntryBaseSchema.extend({
  type: z.literal('document-conversion'),
});

export const documentBulkDownloadPatientSchema = patientEntryBaseSchema.extend({
  documents: z.array(webhookBulkDocumentSchema),
});

export const consolidatedFiltersSchema = z.object({
  resources: z.string().optional(),
  dateFrom: z.iso.date().optional(),
  dateTo: z.iso.date().optional(),
});

/** A FHIR Bundle of type collection holding one DocumentReference. */
export const fhirBundleSchema = z.looseObject({
  resourceType: z.literal('Bundle'),
  type: z.string(),
  total: z.number().int().nonnegative().optional(),
  entry: z.array(z.looseObject({})).optional(),
});

export const consolidatedDataPatientSchema = patientEntryBaseSchema.extend({
  filters: consolidatedFiltersSchema,
  bundle: fhirBundleSchema,
});

export const bulkPatientCreateSchema = z
  .object({
    requestId: z.string().min(1),
    status: z.enum(['processing', 'failed', 'completed']),
    reason: z.string().optional(),
    result: z.string().optional(),
    /** Rows that created a patient and rows that updated one (in a dry run: that would have). */
    created: z.number().int().nonnegative().optional(),
    updated: z.number().int().nonnegative().optional(),
  })
  .superRefine((value, ctx) => {
    // Reason only when failed; result and the counts only when completed.
    if (value.reason !== undefined && value.status !== 'failed') {
      ctx.addIssue({ code: 'custom', path: ['reason'], message: 'reason is only sent with status failed' });
    }
    for (const key of ['result', 'created', 'updated'] as const) {
      if (value[key] !== undefined && value.status !== 'completed') {
        ctx.addIssue({ code: 'custom', path: [key], message: `${key} is only sent with status completed` });
      }
    }
  });

export const documentDownloadMessageSchema = z.object({
  meta: metaSchema('medical.document-download'),
  patients: z.array(documentDownloadPatientSchema),
});

export const documentConversionMessageSchema = z.object({
  meta: metaSchema('medical.document-conversion'),
  patients: z.array(documentConversionPatientSchema),
});

export const documentBulkDownloadUrlsMessageSchema = z.object({
  meta: metaSchema('medical.document-bulk-download-urls'),
  patients: z.array(documentBulkDownloadPatientSchema),
});

export const consolidatedDataMessageSchema = z.object({
  meta: metaSchema('medical.consolidated-data'),
  patients: z.array(consolidatedDataPatientSchema),
});

export const bulkPatientCreateMessageSchema = z.object({
  meta: metaSchema('medical.bulk-patient-create'),
  bulkPatientCreate: bulkPatientCreateSchema,
});

/**
 * One source of a network query has ended: the consolidated data (all sources so far) is at
 * `consolidatedDataUrl`, a pre-signed URL valid 10 minutes.
 */
export const networkQueryPayloadSchema = z.object({
  patientId: z.string().min(1),
  externalId: z.string().optional(),
  consolidatedDataUrl: z.string().min(1),
  source: z.object({
    type: z.enum(['hie', 'pharmacy', 'lab']),
    source: z.string().optional(),
    status: z.enum(['completed', 'failed']),
    completedAt: isoUtcSchema,
  }),
});

export const networkQueryHieMessageSchema = z.object({ meta: metaSchema('network-query.hie'), payload: networkQueryPayloadSchema });
export const networkQueryPharmacyMessageSchema = z.object({ meta: metaSchema('network-query.pharmacy'), payload: networkQueryPayloadSchema });
export const networkQueryLabMessageSchema = z.object({ meta: metaSchema('network-query.lab'), payload: networkQueryPayloadSchema });

/**
 * One of the account's endpoints was turned off by the service, not by the account: every attempt to it
 * failed for the configured time (`WEBHOOK_DISABLE_AFTER_DAYS`, 5 days by default), or its receiver
 * answered 410 Gone. Sent once per disabling, to the account's other endpoints (the default one and every
 * enabled endpoint whose filter takes it), never to the endpoint it is about. `PATCH` the endpoint with
 * `enabled: true` (for `default`, set the webhook URL again) to turn it back on.
 */
export const endpointDisabledSchema = z.object({
  /** The endpoint turned off: its id, or `default` for the account's `webhookUrl`. */
  endpointId: z.string().min(1),
  url: z.string(),
  description: z.string(),
  /** `failing`: no attempt succeeded for the configured time; `gone`: the receiver answered 410. */
  reason: z.enum(['failing', 'gone']),
  /** The first failed attempt after its last success (or since it was last enabled). */
  failingSince: isoUtcSchema,
  disabledAt: isoUtcSchema,
  /** The endpoint's `statusDetail`: what happened, in words. */
  statusDetail: z.string(),
});

export const endpointDisabledMessageSchema = z.object({ meta: metaSchema('webhook.endpoint-disabled'), endpoint: endpointDisabledSchema });

/** The ping carries no requestId and no data. */
export const pingMessageSchema = z.object({
  ping: z.string().min(1),
  meta: z.object({ messageId: z.string().min(1), when: isoUtcSchema, type: z.literal('ping') }),
});

export type WebhookDocument = z.infer<typeof webhookDocumentSchema>;
export type WebhookBulkDocument = z.infer<typeof webhookBulkDocumentSchema>;
export type DocumentDownloadPatient = z.infer<typeof documentDownloadPatientSchema>;
export type DocumentConversionPatient = z.infer<typeof documentConversionPatientSchema>;
export type DocumentBulkDownloadPatient = z.infer<typeof documentBulkDownloadPatientSchema>;
export type ConsolidatedDataPatient = z.infer<typeof consolidatedDataPatientSchema>;
export type BulkPatientCreatePayload = z.infer<typeof bulkPatientCreateSchema>;
export type NetworkQueryPayload = z.infer<typeof networkQueryPayloadSchema>;
export type EndpointDisabledPayload = z.infer<typeof endpointDisabledSchema>;

export type DocumentDownloadMessage = z.infer<typeof documentDownloadMessageSchema>;
export type DocumentConversionMessage = z.infer<typeof documentConversionMessageSchema>;
export type DocumentBulkDownloadUrlsMessage = z.infer<typeof documentBulkDownloadUrlsMessageSchema>;
export type ConsolidatedDataMessage = z.infer<typeof consolidatedDataMessageSchema>;
export type BulkPatientCreateMessage = z.infer<typeof bulkPatientCreateMessageSchema>;
export type PingMessage = z.infer<typeof pingMessageSchema>;
export type NetworkQueryHieMessage = z.infer<typeof networkQueryHieMessageSchema>;
export type NetworkQueryPharmacyMessage = z.infer<typeof networkQueryPharmacyMessageSchema>;
export type NetworkQueryLabMessage = z.infer<typeof networkQueryLabMessageSchema>;
export type EndpointDisabledMessage = z.infer<typeof endpointDisabledMessageSchema>;

/** Every message the service sends, told apart by `meta.type`. */
export type WebhookMessage =
  | DocumentDownloadMessage
  | DocumentConversionMessage
  | DocumentBulkDownloadUrlsMessage
  | ConsolidatedDataMessage
  | BulkPatientCreateMessage
  | NetworkQueryHieMessage
  | NetworkQueryPharmacyMessage
  | NetworkQueryLabMessage
  | EndpointDisabledMessage
  | PingMessage;

export type WebhookMessageOf<T extends WebhookMessageType> = Extract<WebhookMessage, { meta: { type: T } }>;

export const webhookMessageSchemas = {
  'medical.document-download': documentDownloadMessageSchema,
  'medical.document-conversion': documentConversionMessageSchema,
  'medical.document-bulk-download-urls': documentBulkDownloadUrlsMessageSchema,
  'medical.consolidated-data': consolidatedDataMessageSchema,
  'medical.bulk-patient-create': bulkPatientCreateMessageSchema,
  'network-query.hie': networkQueryHieMessageSchema,
  'network-query.pharmacy': networkQueryPharmacyMessageSchema,
  'network-query.lab': networkQueryLabMessageSchema,
  'webhook.endpoint-disabled': endpointDisabledMessageSchema,
  ping: pingMessageSchema,
} as const satisfies Record<WebhookMessageType, z.ZodType>;

export const WEBHOOK_MESSAGE_TYPES = Object.keys(webhookMessageSchemas) as WebhookMessageType[];

/** The message types an endpoint's filter may name (a ping is never stored, so never filtered). */
export const FILTERABLE_EVENT_TYPES = Object.keys(webhookMessageSchemas).filter((type) => type !== 'ping') as [
  Exclude<WebhookMessageType, 'ping'>,
  ...Exclude<WebhookMessageType, 'ping'>[],
];

/** Any message; prefer `parseWebhookMessage`, whose errors name the part of the one matching type that is wrong. */
export const webhookMessageSchema = z.union([
  documentDownloadMessageSchema,
  documentConversionMessageSchema,
  documentBulkDownloadUrlsMessageSchema,
  consolidatedDataMessageSchema,
  bulkPatientCreateMessageSchema,
  networkQueryHieMessageSchema,
  networkQueryPharmacyMessageSchema,
  networkQueryLabMessageSchema,
  endpointDisabledMessageSchema,
  pingMessageSchema,
]);

/**
 * Narrows a message by its type. TypeScript does not narrow a union through a nested discriminant
 * (`msg.meta.type`), hence the guard.
 */
export function isWebhookMessageOfType<T extends WebhookMessageType>(message: WebhookMessage, type: T): message is WebhookMessageOf<T> {
  return message.meta.type === type;
}

/**
 * Parses a received body (already JSON-decoded) into a typed message, choosing the schema by `meta.type`.
 * @throws CoreError `VALIDATION_FAILED` naming the type and the first problem when it is not a valid message.
 */
export function parseWebhookMessage(input: unknown): WebhookMessage {
  const type = (input as { meta?: { type?: unknown } } | null)?.meta?.type;
  if (typeof type !== 'string' || !(type in webhookMessageSchemas)) {
    throw new CoreError('VALIDATION_FAILED', `not a webhook message: unknown meta.type ${JSON.stringify(type)}`);
  }
  const schema: z.ZodType<WebhookMessage> = webhookMessageSchemas[type as WebhookMessageType];
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'message';
    throw new CoreError('VALIDATION_FAILED', `invalid ${type} message: ${where}: ${issue?.message ?? 'invalid'}`, { cause: parsed.error });
  }
  return parsed.data;
}

/** What the caller supplies for `meta`; `type` is set by the builder. */
