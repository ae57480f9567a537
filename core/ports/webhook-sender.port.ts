export interface WebhookDelivery {
  url: string;
  /** meta.messageId, also sent as the Standard Webhooks `webhook-id`. */
  messageId: string;
  /** The exact bytes to POST (JSON text). */
  body: string;
  /** The account's webhook key the body is signed with. */
  signingKey: string;
  /**
   * Older keys still valid (a rotation's grace period): `webhook-signature` then carries one space-separated
   * `v1,` value per key, `signingKey`'s first. `x-metriport-signature` is always `signingKey`'s.
   */
  previousSigningKeys?: readonly string[];
  /** Unix seconds for `webhook-timestamp`. */
  timestamp: number;
  /** Abort after this many milliseconds (the receiver has 4 s). */
  timeoutMs: number;
}

export type WebhookDeliveryResult =
  | { outcome: 'delivered'; status: number; durationMs: number; responseBody?: string }
  | {
      outcome: 'failed';
      /** HTTP status when one came back; absent on timeout or network error. */
      status?: number;
      /** Wait the receiver asked for (Retry-After on 429/503), in milliseconds. */
      retryAfterMs?: number;
      /** The receiver said the endpoint is gone for good (410). */
      gone: boolean;
      /** No answer came within `timeoutMs`. */
      timedOut?: boolean;
      /**
       * What went wrong, for the operator's logs: it may name addresses, ports and system error codes of
       * the service's network, so it is never shown to the customer (the core words its own text).
       */
      error: string;
      durationMs: number;
    };

/**
 * Sends one signed webhook POST. Never throws for anything the receiver does (timeouts, refusals,
 * redirects, non-2xx): those are `failed` results. Redirects are not followed (they count as failures).
 */
export interface WebhookSenderPort {
  send(delivery: WebhookDelivery): Promise<WebhookDeliveryResult>;
}
