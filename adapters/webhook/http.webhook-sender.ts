import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { WebhookDelivery, WebhookDeliveryResult, WebhookSenderPort } from '../../core/ports/webhook-sender.port.js';
import { isNonPublicAddress, validateWebhookUrl } from '../../core/webhooks/url.js';
import { signStandardWebhook, signWebhookBody } from '../../contract/signature.js';
import { packageVersion as readPackageVersion } from '../package-root.js';

const packageVersion = readPackageVersion();

/** Enough for a `{ pong }` answer or an error text; the rest of a large answer is not read. */
const RESPONSE_BODY_LIMIT_BYTES = 64 * 1024;

export interface HttpWebhookSenderOptions {
  /** Allow loopback/private/link-local destinations (development and tests: `WEBHOOK_ALLOW_PRIVATE=true`). */
  allowPrivate: boolean;
  /** Default `carebridge-webhooks/<package version>`. */
  userAgent?: string;
  /** Unix ms, for turning a Retry-After date into a wait. The system clock when absent. */
  now?: () => number;
  /** Name resolution, `dns.lookup` when absent; tests inject one to prove the SSRF guard without real DNS. */
  lookup?: typeof dnsLookup;
  /** Gets each attempt that got no HTTP answer, with the network detail (message id and origin, never the body). */
  logger?: Logger;
}

/** Raised inside the connect lookup; its code is what the failure reports. */
class PrivateAddressError extends Error {
  readonly code = 'EWEBHOOKPRIVATE';
}

/**
 * Resolves like `dns.lookup` but refuses a hostname that resolves to any non-public address. It runs on
 * the connection actually made (undici passes it to net/tls.connect), so a DNS answer that changes between
 * a check and the connect (rebinding) cannot slip through.
 */
function publicOnlyLookup(resolve: typeof dnsLookup) {
  return (
    hostname: string,
    options: LookupOptions,
    callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const refused = addresses.find((a) => isNonPublicAddress(a.address) !== false);
      if (refused) {
        return callback(new PrivateAddressError(`${hostname} resolves to a loopback, private or link-local address`), []);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(new Error(`${hostname} did not resolve`), []);
      callback(null, first.address, first.family);
    });
  };
}

/** Retry-After is either delta-seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Every HTTP-date form names the weekday and month; without letters it is junk Date.parse would accept.
  if (!/[A-Za-z]{3}/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

function errorText(error: unknown, timeoutMs: number, timedOut: boolean): string {
  if (timedOut) return `no answer within ${timeoutMs} ms (aborted)`;
  const withCause = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const root = withCause.cause ?? withCause;
  if (root instanceof PrivateAddressError || withCause instanceof PrivateAddressError) return `refused: ${(root as Error).message}`;
  const code = root.code ?? withCause.code;
  const message = root.message ?? withCause.message ?? String(error);
  return code ? `${code}: ${message}` : message;
}

/** Scheme, host and port of a URL: its path and query may carry the customer's tokens. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(not a URL)';
  }
}

async function readLimited(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= RESPONSE_BODY_LIMIT_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT_BYTES).toString('utf8');
}

/**
 * Delivers webhooks over HTTP with undici: POST of the exact body, signed twice (see ./signature.ts),
 * aborted after `timeoutMs`, redirects not followed, never throws for what the receiver does.
 * Keeps connections alive per origin; `close()` releases them.
 */
export class HttpWebhookSender implements WebhookSenderPort {
  private readonly allowPrivate: boolean;
  private readonly userAgent: string;
  private readonly now: () => number;
  private readonly agent: Agent;
  private readonly logger: Logger | undefined;

  constructor(options: HttpWebhookSenderOptions) {
    this.allowPrivate = options.allowPrivate;
    this.logger = options.logger;
    this.userAgent = options.userAgent ?? `carebridge-webhooks/${packageVersion}`;
    this.now = options.now ?? Date.now;
    this.agent = new Agent({
      connect: this.allowPrivate ? {} : { lookup: publicOnlyLookup(options.lookup ?? dnsLookup) },
      pipelining: 1,
    });
  }

  async send(delivery: WebhookDelivery): Promise<WebhookDeliveryResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);

    try {
      // Literal IPs never reach the lookup above, so they are checked here; and bad URLs become failures.
      validateWebhookUrl(delivery.url, { allowPrivate: this.allowPrivate });
    } catch (error) {
      return this.unanswered(delivery, { outcome: 'failed', gone: false, error: `refused: ${(error as Error).message}`, durationMs: elapsed() });
    }

    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, delivery.timeoutMs);

    try {
      const response = await request(delivery.url, {
        method: 'POST',
        dispatcher: this.agent,
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': this.userAgent,
          'x-metriport-signature': signWebhookBody(delivery.body, delivery.signingKey),
          'webhook-id': delivery.messageId,
          'webhook-timestamp': String(delivery.timestamp),
          'webhook-signature': [delivery.signingKey, ...(delivery.previousSigningKeys ?? [])]
            .map((key) => signStandardWebhook(delivery.messageId, delivery.timestamp, delivery.body, key))
            .join(' '),
        },
        body: delivery.body,
      });
      // The 4 s cover the whole answer, body included (answer within 4 seconds).
      const responseBody = await readLimited(response.body);
      const status = response.statusCode;
      if (status >= 200 && status < 300) {
        return { outcome: 'delivered', status, durationMs: elapsed(), responseBody };
      }
      const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after'], this.now()) : undefined;
      const error =
        status >= 300 && status < 400 ? `redirect to ${String(response.headers.location ?? '(no location)')} not followed` : `receiver answered ${status}`;
      const failure: WebhookDeliveryResult = { outcome: 'failed', status, gone: status === 410, error, durationMs: elapsed() };
      if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
      return failure;
    } catch (error) {
      return this.unanswered(delivery, {
        outcome: 'failed',
        gone: false,
        ...(timedOut ? { timedOut } : {}),
        error: errorText(error, delivery.timeoutMs, timedOut),
        durationMs: elapsed(),
      });
    } finally {
      clearTimeout(timer);
    }
  }

  private unanswered(delivery: WebhookDelivery, result: WebhookDeliveryResult): WebhookDeliveryResult {
    if (result.outcome === 'failed') {
      this.logger?.info({ messageId: delivery.messageId, origin: originOf(delivery.url), error: result.error }, 'webhook attempt got no answer');
    }
    return result;
  }

  /** Closes kept-alive connections. Idempotent. */
  async close(): Promise<void> {
    if (!this.agent.closed && !this.agent.destroyed) await this.agent.close();
  }
}
