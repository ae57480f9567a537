import type { CoreDeps } from '../deps.js';
import type { WebhookDeliveryResult } from '../ports/webhook-sender.port.js';
import { pingMessage } from './envelope.js';

/** The ping expects its pong within 2 seconds. */
export const PING_TIMEOUT_MS = 2_000;

/**
 * A failed attempt in the customer's words. The sender's own error text stays in the operator's logs: it
 * can name the service's network (addresses, ports, resolver answers), which is none of a customer's business.
 */
export function describeFailure(result: Extract<WebhookDeliveryResult, { outcome: 'failed' }>, timeoutMs: number): string {
  if (result.status !== undefined) {
    if (result.status >= 300 && result.status < 400) return `the receiver answered HTTP ${result.status}, a redirect, which is not followed`;
    return `the receiver answered HTTP ${result.status}`;
  }
  if (result.timedOut) return `no answer within ${timeoutMs} ms`;
  return 'the URL is not reachable from the service';
}

export interface PingRequest {
  url: string;
  /** The account's webhook key: the ping is signed like every message. */
  key: string;
  /** Random text (from the secrets port) the receiver must echo as `pong`. */
  token: string;
  timeoutMs?: number;
}

export interface PingResult {
  ok: boolean;
  /** For `webhookStatusDetail`: what happened, in words. */
  detail: string;
  messageId: string;
}

/**
 * Sends a `ping` straight to `url` (not through the outbox: it checks the endpoint now, and is worthless
 * later) and expects `{ pong: <token> }` within 2 s. Never throws for receiver behaviour.
 */
export async function pingWebhook(deps: Pick<CoreDeps, 'webhookSender' | 'clock' | 'ids'>, request: PingRequest): Promise<PingResult> {
  const when = deps.clock.now();
  const message = pingMessage({ messageId: deps.ids.next(), when }, request.token);
  const timeoutMs = request.timeoutMs ?? PING_TIMEOUT_MS;
  let result: WebhookDeliveryResult;
  try {
    result = await deps.webhookSender.send({
      url: request.url,
      messageId: message.meta.messageId,
      body: JSON.stringify(message),
      signingKey: request.key,
      timestamp: Math.floor(when.getTime() / 1000),
      timeoutMs,
    });
  } catch (error) {
    result = { outcome: 'failed', gone: false, error: error instanceof Error ? error.message : String(error), durationMs: 0 };
  }
  const messageId = message.meta.messageId;
  if (result.outcome === 'failed') {
    return { ok: false, messageId, detail: `Ping failed: ${describeFailure(result, timeoutMs)}` };
  }
  let pong: unknown;
  try {
    pong = (JSON.parse(result.responseBody ?? '') as { pong?: unknown } | null)?.pong;
  } catch {
    pong = undefined;
  }
  if (pong !== request.token) {
    return { ok: false, messageId, detail: `Ping failed: HTTP ${result.status} but the answer was not {"pong": "<the ping value>"}` };
  }
  return { ok: true, messageId, detail: `Ping answered at ${deps.clock.now().toISOString()}` };
}
