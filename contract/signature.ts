import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * Webhook signatures, for the sender and for receivers (the client library re-exports the verifiers).
 *
 * 1. `x-metriport-signature`: lower-case hex HMAC-SHA256 of the raw body, keyed with the UTF-8 bytes of
 *    the account's webhook key. Exactly what @metriport/api-sdk's `verifyWebhookSignature` checks, so
 *    existing Metriport receivers keep working.
 * 2. Standard Webhooks: `webhook-id`, `webhook-timestamp` (Unix seconds of the attempt) and
 *    `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`. The HMAC key is:
 *    - for a key written `whsec_<base64>`: the base64-decoded bytes after the prefix, as the Standard
 *      Webhooks libraries do;
 *    - for any other key (carebridge's own keys are base64url text without a prefix): the key's UTF-8
 *      bytes, the same key material as signature 1. To verify such a key with a Standard Webhooks
 *      library, give the library `whsec_` + base64(UTF-8 bytes of the key).
 */

type RawBody = string | Uint8Array;

const STANDARD_SECRET_PREFIX = 'whsec_';

/** Standard Webhooks: a signature older or newer than this, relative to the receiver's clock, is refused. */
export const DEFAULT_TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;

function bodyBuffer(body: RawBody): Buffer {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

function standardKeyBytes(key: string): Buffer {
  return key.startsWith(STANDARD_SECRET_PREFIX) ? Buffer.from(key.slice(STANDARD_SECRET_PREFIX.length), 'base64') : Buffer.from(key, 'utf8');
}

/** Equal-length compare in constant time; a length mismatch is an early `false` (lengths are not secret). */
function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The `x-metriport-signature` value: hex HMAC-SHA256 of the raw body. */
export function signWebhookBody(rawBody: RawBody, key: string): string {
  return createHmac('sha256', Buffer.from(key, 'utf8')).update(bodyBuffer(rawBody)).digest('hex');
}

/** Checks an `x-metriport-signature` value against the raw body, in constant time. */
export function verifyWebhookSignature(rawBody: RawBody, signature: string, key: string): boolean {
  if (typeof signature !== 'string' || !/^[0-9a-fA-F]{64}$/.test(signature.trim())) return false;
  const expected = Buffer.from(signWebhookBody(rawBody, key), 'hex');
  return safeEqual(expected, Buffer.from(signature.trim(), 'hex'));
}

/** The `webhook-signature` value for one attempt: `v1,<base64>`. */
export function signStandardWebhook(messageId: string, timestamp: number, rawBody: RawBody, key: string): string {
  const mac = createHmac('sha256', standardKeyBytes(key))
    .update(`${messageId}.${timestamp}.`, 'utf8')
    .update(bodyBuffer(rawBody))
    .digest('base64');
  return `v1,${mac}`;
}

export interface StandardWebhookHeaders {
  'webhook-id'?: string | string[];
  'webhook-timestamp'?: string | string[];
  'webhook-signature'?: string | string[];
}

export interface VerifyStandardWebhookOptions {
  /** Receiver's current time in Unix seconds; the system clock when absent. */
  nowSeconds?: number;
  toleranceSeconds?: number;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Verifies a Standard Webhooks request: the timestamp is within the tolerance (replay protection) and at
 * least one `v1,` signature of the space-separated list matches, compared in constant time.
 * `headers` may be Node's lower-cased incoming headers.
 */
export function verifyStandardWebhook(
  rawBody: RawBody,
  headers: StandardWebhookHeaders | Record<string, string | string[] | undefined>,
  key: string,
  options: VerifyStandardWebhookOptions = {},
): boolean {
  const h = headers as Record<string, string | string[] | undefined>;
  const id = single(h['webhook-id']);
  const timestampText = single(h['webhook-timestamp']);
  const signatures = single(h['webhook-signature']);
  if (!id || !timestampText || !signatures || !/^\d+$/.test(timestampText)) return false;
  const timestamp = Number(timestampText);
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? DEFAULT_TIMESTAMP_TOLERANCE_SECONDS)) return false;

  const expected = Buffer.from(signStandardWebhook(id, timestamp, rawBody, key).slice('v1,'.length), 'base64');
  let matched = false;
  for (const candidate of signatures.split(' ')) {
    const [version, mac] = candidate.split(',', 2);
    if (version !== 'v1' || !mac) continue;
    // Keep comparing after a match so the time spent does not say which signature matched.
    if (safeEqual(expected, Buffer.from(mac, 'base64'))) matched = true;
  }
  return matched;
}
