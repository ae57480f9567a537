import type { ConsolidatedFilters, DocumentRecord, WebhookMessageType } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { validateMetadata, type WebhookMetadata } from '../../contract/metadata.js';
import {
  isWebhookMessageOfType,
  webhookMessageSchemas,
  type NetworkQueryHieMessage,
  type NetworkQueryLabMessage,
  type NetworkQueryPharmacyMessage,
  type WebhookMessage,
  type BulkPatientCreateMessage,
  type BulkPatientCreatePayload,
  type ConsolidatedDataMessage,
  type ConsolidatedDataPatient,
  type DocumentBulkDownloadPatient,
  type DocumentBulkDownloadUrlsMessage,
  type DocumentConversionMessage,
  type DocumentConversionPatient,
  type DocumentDownloadMessage,
  type DocumentDownloadPatient,
  type EndpointDisabledMessage,
  type EndpointDisabledPayload,
  type NetworkQueryPayload,
  type PingMessage,
  type WebhookBulkDocument,
  type WebhookDocument,
  type WebhookMessageOf,
} from '../../contract/webhooks.js';

/*
 * The builders of the webhook messages: each message is checked against its schema in the wire contract
 * (contract/webhooks.ts) before it is stored, so a receiver validating with the same schemas accepts it.
 */

export * from '../../contract/webhooks.js';

export interface MessageMetaInput {
  /** From the ids port; the same on every delivery attempt. */
  messageId: string;
  /** The request that caused the message (bulk request, document query, consolidated query...). */
  requestId?: string;
  /** From the clock port; serialised as UTC ISO 8601. */
  when: Date;
  /** The metadata of the originating request, echoed as `meta.data`. */
  data?: WebhookMetadata;
  /** A test event's sample (`meta.test: true`); never set on a real message. */
  test?: boolean;
}

function buildMeta<T extends WebhookMessageType>(type: T, input: MessageMetaInput) {
  const meta: { messageId: string; requestId?: string; when: string; type: T; data?: WebhookMetadata; test?: true } = {
    messageId: input.messageId,
    when: input.when.toISOString(),
    type,
  };
  if (input.requestId !== undefined) meta.requestId = input.requestId;
  const data = validateMetadata(input.data);
  if (data !== undefined && Object.keys(data).length > 0) meta.data = data;
  if (input.test) meta.test = true;
  return meta;
}

/**
 * Builders check their own output against the schema: a malformed message is a bug of the caller, and it
 * must surface where it is made, not days later at a customer's parser.
 */
function checked<T extends WebhookMessageType>(type: T, message: unknown): WebhookMessageOf<T> {
  const parsed = webhookMessageSchemas[type].safeParse(message);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CoreError('INTERNAL', `built an invalid ${type} message: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? ''}`, {
      cause: parsed.error,
    });
  }
  return parsed.data as WebhookMessageOf<T>;
}

export function documentDownloadMessage(meta: MessageMetaInput, patients: DocumentDownloadPatient[]): DocumentDownloadMessage {
  return checked('medical.document-download', { meta: buildMeta('medical.document-download', meta), patients });
}

export function documentConversionMessage(meta: MessageMetaInput, patients: DocumentConversionPatient[]): DocumentConversionMessage {
  return checked('medical.document-conversion', { meta: buildMeta('medical.document-conversion', meta), patients });
}

export function documentBulkDownloadUrlsMessage(
  meta: MessageMetaInput,
  patients: DocumentBulkDownloadPatient[],
): DocumentBulkDownloadUrlsMessage {
  return checked('medical.document-bulk-download-urls', { meta: buildMeta('medical.document-bulk-download-urls', meta), patients });
}

export function consolidatedDataMessage(meta: MessageMetaInput, patients: ConsolidatedDataPatient[]): ConsolidatedDataMessage {
  return checked('medical.consolidated-data', { meta: buildMeta('medical.consolidated-data', meta), patients });
}

export function bulkPatientCreateMessage(meta: MessageMetaInput, bulkPatientCreate: BulkPatientCreatePayload): BulkPatientCreateMessage {
  return checked('medical.bulk-patient-create', { meta: buildMeta('medical.bulk-patient-create', meta), bulkPatientCreate });
}

/** `network-query.<source>`: one source of a network query has ended. */
export function networkQueryMessage(
  meta: MessageMetaInput,
  type: 'network-query.hie' | 'network-query.pharmacy' | 'network-query.lab',
  payload: NetworkQueryPayload,
): NetworkQueryHieMessage | NetworkQueryPharmacyMessage | NetworkQueryLabMessage {
  return checked(type, { meta: buildMeta(type, meta), payload });
}

/** `webhook.endpoint-disabled`: the service turned one of the account's endpoints off (see the schema). */
export function endpointDisabledMessage(meta: MessageMetaInput, endpoint: EndpointDisabledPayload): EndpointDisabledMessage {
  return checked('webhook.endpoint-disabled', { meta: buildMeta('webhook.endpoint-disabled', meta), endpoint });
}

/** `{ ping: <random>, meta: { messageId, when, type: 'ping' } }`; the receiver answers `{ pong: <same> }`. */
export function pingMessage(meta: Pick<MessageMetaInput, 'messageId' | 'when'>, ping: string): PingMessage {
  return checked('ping', { ping, meta: { messageId: meta.messageId, when: meta.when.toISOString(), type: 'ping' } });
}

/** The wire shape of a stored document in a `medical.document-download` message (size as a string). */
export function toWebhookDocument(document: DocumentRecord): WebhookDocument {
  return {
    id: document.id,
    fileName: document.fileName,
    description: document.description,
    status: document.status,
    indexed: document.indexed,
    mimeType: document.mimeType,
    size: String(document.size),
    type: document.type,
  };
}

/** The wire shape of a stored document in a `medical.document-bulk-download-urls` message (size as a number, with url). */
export function toWebhookBulkDocument(document: DocumentRecord, url: string): WebhookBulkDocument {
  return {
    ...toWebhookDocument(document),
    size: document.size,
    url,
    organizationIdentifiers: document.organizationIdentifiers,
  };
}

/** Filters as echoed in a consolidated data message: only the ones given. */
export function toWebhookFilters(filters: ConsolidatedFilters): ConsolidatedFilters {
  const out: ConsolidatedFilters = {};
  if (filters.resources !== undefined) out.resources = filters.resources;
  if (filters.dateFrom !== undefined) out.dateFrom = filters.dateFrom;
  if (filters.dateTo !== undefined) out.dateTo = filters.dateTo;
  return out;
}

/**
 * The stream a message belongs to: messages of one stream reach the receiver in creation order, messages
 * of different streams independently. A stream is what a receiver applies in sequence: one bulk import
 * (`processing` before `completed`), one patient's document query (`document-download` before the same
 * query's `document-conversion`), one consolidated query. Anything else is a stream of its own.
 */
/** The patient a message is about, when it is about one (bulk messages are about an import). */
export function patientIdOf(message: Exclude<WebhookMessage, PingMessage>): string | undefined {
  if ('patients' in message) return message.patients[0]?.patientId;
  if ('payload' in message) return message.payload.patientId;
  return undefined;
}

export function streamKeyOf(message: Exclude<WebhookMessage, PingMessage>): string {
  const { meta } = message;
  if (isWebhookMessageOfType(message, 'medical.bulk-patient-create')) return `bulk:${message.bulkPatientCreate.requestId}`;
  if (isWebhookMessageOfType(message, 'medical.document-download') || isWebhookMessageOfType(message, 'medical.document-conversion')) {
    const patientId = message.patients[0]?.patientId;
    if (patientId !== undefined && meta.requestId !== undefined) return `document:${patientId}:${meta.requestId}`;
  }
  if (isWebhookMessageOfType(message, 'medical.consolidated-data') && meta.requestId !== undefined) return `consolidated:${meta.requestId}`;
  // The sources of one network query end independently: each message is a stream of its own.
  return `message:${meta.messageId}`;
}
