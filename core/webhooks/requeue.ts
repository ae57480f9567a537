import type { CoreDeps } from '../deps.js';

/* The default endpoint's messages put back in line at the account's word: parked ones retried, waiting ones made due. */

/** Parked messages put back per storage round by `retryParked`. */
const RETRY_PAGE = 500;

/**
 * Puts every parked message of the account's default endpoint (`webhookUrl`) back to pending, due now,
 * with a fresh attempt budget: same messageId, same body bytes (`POST /settings/webhook/retry`). Returns
 * how many. The other endpoints' parked messages are theirs to replay (`replayMessages` with `parked`).
 * A disabled endpoint stays disabled: the messages then wait, pending, until the URL is set again.
 */
export async function retryParked(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string): Promise<{ retried: number }> {
  const now = deps.clock.now().toISOString();
  let retried = 0;
  for (;;) {
    // Each round's messages are parked no longer, so the next round finds the next ones.
    const parked = await deps.storage.outbox.listForEndpoint(accountId, null, { status: 'parked' }, RETRY_PAGE);
    await deps.storage.outbox.updateMany(parked.map((message) => ({ ...message, status: 'pending', attempts: 0, nextAttemptAt: now })));
    retried += parked.length;
    if (parked.length < RETRY_PAGE) return { retried };
  }
}

/**
 * Makes every pending message of the account's default endpoint due now. Call it when the webhook URL is set or re-enabled:
 * messages set aside while there was no usable endpoint (and those waiting on a backoff) get an immediate
 * try at the new one. Attempts are kept. Returns how many were moved.
 */
export async function resumePendingMessages(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string): Promise<{ resumed: number }> {
  const now = deps.clock.now().toISOString();
  let resumed = 0;
  for (const message of await deps.storage.outbox.list(accountId, 'pending')) {
    // The other endpoints' deliveries keep their own schedule.
    if (message.endpointId === undefined && message.nextAttemptAt > now) {
      await deps.storage.outbox.update({ ...message, nextAttemptAt: now });
      resumed += 1;
    }
  }
  return { resumed };
}
