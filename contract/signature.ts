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
 *      bytes, the same key material as signature 1.
 *    The settings hand these bytes out ready for a Standard Webhooks library as `webhookSigningSecret`
 *    (`whsec_` + base64 of the bytes, see `webhookSigningSecret`), so no receiver has to know this rule.
 *
 * The verifiers take either form, the webhook key or the signing secret: a key written `whsec_` may be
 * either, so both readings are tried. Both come from the one secret, so accepting either gives nothing
 * away.
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

/**
 * The Standard Webhooks secret of a webhook key: `whsec_` + base64 of the exact HMAC key bytes of the
 * `webhook-signature` header, which `new Webhook(secret)` of the Standard Webhooks and Svix libraries
 * accepts as it is. Re-encoded rather than passed through, so a `whsec_` key with loose base64 (no
 * padding, stray characters) still comes out as strict base64 those libraries decode to the same bytes.
 */
export function webhookSigningSecret(webhookKey: string): string {
  return `${STANDARD_SECRET_PREFIX}${standardKeyBytes(webhookKey).toString('base64')}`;
}

/** Equal-length compare in constant time; a length mismatch is an early `false` (lengths are not secret). */
function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function bodyHmacHex(rawBody: RawBody, keyBytes: Buffer): string {
  return createHmac('sha256', keyBytes).update(bodyBuffer(rawBody)).digest('hex');
}

/** The `x-metriport-signature` value: hex HMAC-SHA256 of the raw body. */
export function signWebhookBody(rawBody: RawBody, key: string): string {
  return bodyHmacHex(rawBody, Buffer.from(key, 'utf8'));
}

/**
 * Checks an `x-metriport-signature` value against the raw body, in constant time. `key` is the account's
 * `webhookKey`, or its `webhookSigningSecret` (whose decoded bytes are the UTF-8 bytes of the key).
 */
export function verifyWebhookSignature(rawBody: RawBody, signature: string, key: string): boolean {
  if (typeof signature !== 'string' || !/^[0-9a-fA-F]{64}$/.test(signature.trim())) return false;
  const received = Buffer.from(signature.trim(), 'hex');
  const keys = key.startsWith(STANDARD_SECRET_PREFIX) ? [Buffer.from(key, 'utf8'), standardKeyBytes(key)] : [Buffer.from(key, 'utf8')];
  let matched = false;
  // Every reading is compared, so the time spent does not say which one matched.
  for (const keyBytes of keys) if (safeEqual(Buffer.from(bodyHmacHex(rawBody, keyBytes), 'hex'), received)) matched = true;
  return matched;
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
 * `headers` may be Node's lower-cased incoming headers. `key` is the account's `webhookSigningSecret` or
 * its `webhookKey`: both name the same HMAC key.
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
