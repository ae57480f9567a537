import { CoreError } from '../contract/errors.js';
import { isWebhookMessageOfType, parseWebhookMessage, WEBHOOK_MESSAGE_TYPES, type WebhookMessage } from '../contract/webhooks.js';
import { CarebridgeWebhookError } from './errors.js';

/*
 * Receiving webhooks: the message types and their parser are the service's own (core/webhooks/envelope.ts),
 * so a receiver validates exactly what the service builds; the signature checks are the ones the sender's
 * signatures are tested against.
 */

export type {
  BulkPatientCreateMessage,
  BulkPatientCreatePayload,
  ConsolidatedDataMessage,
  ConsolidatedDataPatient,
  DocumentBulkDownloadPatient,
  DocumentBulkDownloadUrlsMessage,
  DocumentConversionMessage,
  DocumentConversionPatient,
  DocumentDownloadMessage,
  DocumentDownloadPatient,
  EndpointDisabledMessage,
  EndpointDisabledPayload,
  NetworkQueryHieMessage,
  NetworkQueryLabMessage,
  NetworkQueryPayload,
  NetworkQueryPharmacyMessage,
  PingMessage,
  WebhookBulkDocument,
  WebhookDocument,
  WebhookMessage,
  WebhookMessageOf,
} from '../contract/webhooks.js';
export type { WebhookMessageType } from '../contract/webhooks.js';
export {
  signWebhookBody,
  verifyStandardWebhook,
  verifyWebhookSignature,
  webhookSigningSecret,
  type StandardWebhookHeaders,
  type VerifyStandardWebhookOptions,
} from '../contract/signature.js';
export { isWebhookMessageOfType, WEBHOOK_MESSAGE_TYPES };

/** The header carrying the hex HMAC-SHA256 of the raw body (`verifyWebhookSignature`). */
export const WEBHOOK_SIGNATURE_HEADER = 'x-metriport-signature';

/**
 * A received webhook body as a typed message, validated with the service's schemas and told apart by
 * `meta.type` (every message type in `WEBHOOK_MESSAGE_TYPES`, `ping` included). Takes the raw body (string or bytes, parsed as JSON) or
 * an already parsed object. Verify the signature on the raw body first.
 * @throws CarebridgeWebhookError naming the type and the first wrong field when it is not a valid message.
 */
export function parseWebhook(body: unknown): WebhookMessage {
  let value = body;
  if (typeof body === 'string' || body instanceof Uint8Array) {
    const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
    try {
      value = JSON.parse(text);
    } catch (error) {
      // The parser's message quotes the body, which carries PHI: say what is wrong, not what was sent.
      throw new CarebridgeWebhookError('The webhook body is not valid JSON', { cause: error });
    }
  }
  try {
    return parseWebhookMessage(value);
  } catch (error) {
    if (error instanceof CoreError) throw new CarebridgeWebhookError(error.message, { cause: error.cause ?? error });
    throw error;
  }
}
