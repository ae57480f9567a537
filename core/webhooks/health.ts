/*
 * Endpoint health (the default endpoint and the extra ones alike). Each endpoint has a failure clock,
 * `failingSince`: the first failed attempt since its last successful delivery, or since it was last enabled.
 * A delivered attempt stops it; enabling the endpoint again (PATCH enabled:true, a new URL that answers the
 * ping, the webhook URL set again) resets it. An endpoint whose clock has run for the configured time
 * (`WEBHOOK_DISABLE_AFTER_DAYS`, 5 days as Svix does) is disabled at its next failed attempt, and the account
 * told with a `webhook.endpoint-disabled` message on its other endpoints. Test events and pings go beside
 * the outbox and move no clock.
 */

/** An endpoint failing this long is disabled: 5 days, as Svix does. */
export const DEFAULT_DISABLE_AFTER_MS = 5 * 24 * 3_600_000;

export type EndpointHealth = 'healthy' | 'failing' | 'disabled';

/** `disabled` when off (whoever turned it off), `failing` while its failure clock runs, else `healthy`. */
export function healthOf(enabled: boolean, failingSince: string | undefined): EndpointHealth {
  if (!enabled) return 'disabled';
  return failingSince === undefined ? 'healthy' : 'failing';
}

/** How long a failure clock has run, in words for a status detail: `5 days`, `36 hours`, `12 minutes`. */
export function describeDuration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 120) return `${minutes} minute${minutes === 1 ? '' : 's'}`;
  const hours = Math.floor(minutes / 60);
  if (hours < 72) return `${hours} hours`;
  return `${Math.floor(hours / 24)} days`;
}
