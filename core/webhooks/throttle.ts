/*
 * What holds delivery to one endpoint back besides its failures: the pauses it asked for and its rate limit.
 * Both are plain records the host makes and passes in `DeliveryDeps`; the lanes go through these functions.
 */

/**
 * Endpoints that asked to be left alone (429 or 503 with Retry-After): endpoint key (`endpointKeyOf`) -> epoch ms until which
 * nothing is sent to it. The host keeps one across dispatchers so the pause also covers messages created later.
 */
export type EndpointPauses = Map<string, number>;

/**
 * A per-endpoint throttle (messages per second), a token bucket per endpoint (`endpointKeyOf`) holding up to one second's
 * worth, taken one token per attempt. The host keeps the buckets across dispatchers. Messages over the budget
 * are not attempted: they stay pending and due, and a later poll takes them once the bucket has refilled.
 */
export interface EndpointRateLimit {
  perSecond: number;
  buckets: Map<string, { tokens: number; atMs: number }>;
}

/**
 * Until when (epoch ms) the endpoint asked to be left alone; undefined when it did not, or when that time
 * has come, and then the pause is forgotten.
 */
export function pausedUntil(pauses: EndpointPauses | undefined, key: string, nowMs: number): number | undefined {
  const until = pauses?.get(key);
  if (until === undefined) return undefined;
  if (until > nowMs) return until;
  pauses!.delete(key);
  return undefined;
}

/** The endpoint asked for a pause until `untilMs`: a longer one it asked for before stands. */
export function pauseEndpoint(pauses: EndpointPauses | undefined, key: string, untilMs: number): void {
  pauses?.set(key, Math.max(pauses.get(key) ?? 0, untilMs));
}

/**
 * Takes one message's worth of the endpoint's budget. Without one left, says when the bucket is full again
 * (epoch ms): the endpoint rests until then.
 */
export function takeToken(limit: EndpointRateLimit, key: string, nowMs: number): { taken: true } | { taken: false; fullAtMs: number } {
  const bucket = limit.buckets.get(key) ?? { tokens: limit.perSecond, atMs: nowMs };
  const tokens = Math.min(limit.perSecond, bucket.tokens + ((nowMs - bucket.atMs) * limit.perSecond) / 1000);
  if (tokens >= 1) {
    limit.buckets.set(key, { tokens: tokens - 1, atMs: nowMs });
    return { taken: true };
  }
  limit.buckets.set(key, { tokens, atMs: nowMs });
  // The bucket holds a second's worth at most: waiting until it is full loses nothing.
  return { taken: false, fullAtMs: nowMs + Math.ceil(((limit.perSecond - tokens) * 1000) / limit.perSecond) };
}
