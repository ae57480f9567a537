import type { CoreDeps } from '../deps.js';
import type { OutboxMessage, WebhookSettings } from '../domain/types.js';
import type { StoragePort } from '../ports/storage.port.js';
import type { WebhookDeliveryResult } from '../ports/webhook-sender.port.js';
import { pingMessage, type PingMessage, type WebhookMessage } from './envelope.js';
import { defaultRetrySchedule, type RetrySchedule } from './retry-schedule.js';

/** PRODUCT (Webhook receiver): the receiver must answer within 4 seconds. */
export const DEFAULT_DELIVERY_TIMEOUT_MS = 4_000;
/** Issue 7: the ping expects its pong within 2 seconds. */
export const PING_TIMEOUT_MS = 2_000;
/** See `DeliveryDeps.holdBackAttempts`. */
export const DEFAULT_HOLD_BACK_ATTEMPTS = 3;
/** See `DeliveryDeps.holdMs`. */
export const DEFAULT_HOLD_MS = 15 * 60_000;
/** How many of an account's oldest pending messages are looked at to find one that holds the others back. */
const HEAD_WINDOW = 8;
/** `due` with this instant lists pending messages whatever their next attempt: the account's oldest pending. */
const END_OF_TIME = '9999-12-31T23:59:59.999Z';

/** Prefixes of the status details this module writes, so it only ever clears its own. */
export const UNHEALTHY_DETAIL_PREFIX = 'Unhealthy:';
export const DISABLED_DETAIL_PREFIX = 'Disabled:';

export interface DeliveryDeps extends Pick<CoreDeps, 'storage' | 'webhookSender' | 'clock'> {
  /** Uniform in [0, 1): jitter of the retry schedule. The core has no randomness of its own. */
  random: () => number;
  /** Abort an attempt after this long. Default 4 s (PRODUCT). */
  timeoutMs?: number;
  schedule?: RetrySchedule;
  /**
   * How many failed attempts a message may spend holding back the later messages of its account. Past
   * that it stops blocking: the others flow and it retries on its own schedule. Default 3 (about 36 min
   * with the default schedule: 1 + 5 + 30 min).
   */
  holdBackAttempts?: number;
  /** How long messages of an account without a usable endpoint are set aside before being looked at again. */
  holdMs?: number;
  /** Accounts delivered in parallel (each account is always sequential). Default 8. */
  concurrency?: number;
}

export interface DeliveryOptions {
  /** Most messages taken in this pass. */
  limit: number;
  /** Only this account's messages. */
  accountId?: string;
}

export interface DeliveryReport {
  /** Acknowledged with a 2xx. */
  delivered: number;
  /** Failed attempts that were rescheduled. */
  failed: number;
  /** Failed for the last time (schedule spent, or 410): parked until `retryParked`. */
  parked: number;
  /** Not attempted: the account has no enabled endpoint, or an older message of the account is still failing. */
  deferred: number;
}

function compareCreation(a: OutboxMessage, b: OutboxMessage): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

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

async function runPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  });
  await Promise.all(lanes);
}

/**
 * One delivery pass: takes up to `limit` due messages of the outbox and POSTs each to its account's
 * endpoint. 2xx: delivered. Failure: rescheduled on the retry schedule (Retry-After honoured), parked when
 * the schedule is spent (the endpoint is then marked unhealthy). 410: the endpoint is disabled and the
 * message parked. An account without an enabled endpoint keeps its messages pending (set aside for
 * `holdMs`), never drops them.
 *
 * Order: issue 7 wants delivery per account in creation order, so a receiver that applies messages as they
 * come (e.g. bulk `processing` then `completed`) never sees them swapped. So within an account, messages go
 * one at a time, oldest first, and while an older message is failing the later ones wait for it (they are
 * set aside until its next attempt, so they also stop filling every pass and starving other accounts).
 * The wait is capped by `holdBackAttempts`: a receiver that is down fails everything anyway, so waiting
 * costs nothing there and keeps order, but one message a receiver keeps rejecting must not hold its
 * account hostage for the 3 days of its schedule. Past the cap, order is given up for that message only.
 *
 * Safe to call from one worker at a time per account (the outbox port does not claim messages).
 */
export async function deliverDueMessages(deps: DeliveryDeps, options: DeliveryOptions): Promise<DeliveryReport> {
  const report: DeliveryReport = { delivered: 0, failed: 0, parked: 0, deferred: 0 };
  if (options.limit <= 0) return report;
  const passStart = deps.clock.now();
  const due = await deps.storage.outbox.due(passStart.toISOString(), options.limit, options.accountId);

  const byAccount = new Map<string, OutboxMessage[]>();
  for (const message of due) {
    const list = byAccount.get(message.accountId);
    if (list) list.push(message);
    else byAccount.set(message.accountId, [message]);
  }
  await runPool([...byAccount.entries()], deps.concurrency ?? 8, async ([accountId, messages]) => {
    messages.sort(compareCreation);
    await deliverAccount(deps, accountId, messages, passStart, report);
  });
  return report;
}

async function deliverAccount(
  deps: DeliveryDeps,
  accountId: string,
  messages: OutboxMessage[],
  passStart: Date,
  report: DeliveryReport,
): Promise<void> {
  const { storage } = deps;
  const schedule = deps.schedule ?? defaultRetrySchedule;
  const holdBackAttempts = deps.holdBackAttempts ?? DEFAULT_HOLD_BACK_ATTEMPTS;
  const nowIso = passStart.toISOString();

  const setAside = async (rest: OutboxMessage[], until: string): Promise<void> => {
    for (const message of rest) {
      await storage.outbox.update({ ...message, nextAttemptAt: until });
      report.deferred += 1;
    }
  };

  let settings = await storage.webhookSettings.get(accountId);
  if (!settings || !settings.webhookUrl || !settings.webhookEnabled) {
    await setAside(messages, new Date(passStart.getTime() + (deps.holdMs ?? DEFAULT_HOLD_MS)).toISOString());
    return;
  }

  // An older message that is not due yet (failing, or set aside) and still within its hold-back allowance.
  const oldest = await storage.outbox.due(END_OF_TIME, HEAD_WINDOW, accountId);
  const blocker = oldest.find((m) => m.nextAttemptAt > nowIso && m.attempts <= holdBackAttempts);

  const saveSettings = async (next: WebhookSettings): Promise<void> => {
    settings = next;
    await storage.webhookSettings.put(next);
  };

  for (const [index, message] of messages.entries()) {
    if (blocker && compareCreation(message, blocker) > 0) {
      await setAside(messages.slice(index), blocker.nextAttemptAt);
      return;
    }
    const current: WebhookSettings = settings;
    const result = await attempt(deps, current, message);
    const now = deps.clock.now();

    if (result.outcome === 'delivered') {
      await storage.outbox.update({ ...message, status: 'delivered', attempts: message.attempts + 1, deliveredAt: now.toISOString() });
      report.delivered += 1;
      if (current.webhookStatusDetail?.startsWith(UNHEALTHY_DETAIL_PREFIX)) {
        // The endpoint evidently works again; the parked messages still show in the `failed` count.
        await saveSettings({ ...current, webhookStatusDetail: null, updatedAt: now.toISOString() });
      }
      continue;
    }

    const attempts = message.attempts + 1;
    const lastError = describeFailure(result, deps.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS);
    if (result.gone) {
      await storage.outbox.update({ ...message, status: 'parked', attempts, lastError });
      report.parked += 1;
      await saveSettings({
        ...current,
        webhookEnabled: false,
        webhookStatusDetail: `${DISABLED_DETAIL_PREFIX} the receiver answered 410 Gone at ${now.toISOString()} (message ${message.id}); set the webhook URL again to re-enable`,
        updatedAt: now.toISOString(),
      });
      await setAside(messages.slice(index + 1), new Date(now.getTime() + (deps.holdMs ?? DEFAULT_HOLD_MS)).toISOString());
      return;
    }

    const nextAt = schedule.nextAttemptAt(attempts, now, deps.random(), result.retryAfterMs);
    if (!nextAt) {
      await storage.outbox.update({ ...message, status: 'parked', attempts, lastError });
      report.parked += 1;
      await saveSettings({
        ...current,
        webhookStatusDetail: `${UNHEALTHY_DETAIL_PREFIX} message ${message.id} was parked after ${attempts} failed attempts (last: ${lastError})`,
        updatedAt: now.toISOString(),
      });
      continue;
    }

    await storage.outbox.update({ ...message, attempts, nextAttemptAt: nextAt.toISOString(), lastError });
    report.failed += 1;
    if (attempts <= holdBackAttempts) {
      await setAside(messages.slice(index + 1), nextAt.toISOString());
      return;
    }
  }
}

async function attempt(deps: DeliveryDeps, settings: WebhookSettings, message: OutboxMessage): Promise<WebhookDeliveryResult> {
  const started = deps.clock.now();
  try {
    return await deps.webhookSender.send({
      url: settings.webhookUrl!,
      messageId: message.id,
      body: message.body,
      signingKey: settings.webhookKey,
      timestamp: Math.floor(started.getTime() / 1000),
      timeoutMs: deps.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS,
    });
  } catch (error) {
    // The port promises not to throw for receiver behaviour; anything else must still not strand the message.
    return { outcome: 'failed', gone: false, error: `sender error: ${error instanceof Error ? error.message : String(error)}`, durationMs: 0 };
  }
}

/**
 * Stores a message in the outbox (pending, due at once). Call it with the `tx` of the transaction that makes
 * the change the message reports, so both commit or neither does. `meta.when` is the creation time: order
 * and `when` then stay the same on every retry. The body is serialised here, once.
 */
export async function enqueueMessage(
  tx: StoragePort,
  accountId: string,
  message: Exclude<WebhookMessage, PingMessage>,
): Promise<OutboxMessage> {
  const record: OutboxMessage = {
    id: message.meta.messageId,
    accountId,
    type: message.meta.type,
    body: JSON.stringify(message),
    status: 'pending',
    attempts: 0,
    nextAttemptAt: message.meta.when,
    createdAt: message.meta.when,
  };
  await tx.outbox.add(record);
  return record;
}

/**
 * Puts every parked message of the account back to pending, due now, with a fresh attempt budget: same
 * messageId, same body bytes (issue 7: `POST /settings/webhook/retry`). Returns how many.
 * A disabled endpoint stays disabled: the messages then wait, pending, until the URL is set again.
 */
export async function retryParked(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string): Promise<{ retried: number }> {
  const now = deps.clock.now().toISOString();
  const parked = await deps.storage.outbox.list(accountId, 'parked');
  for (const message of parked) {
    await deps.storage.outbox.update({ ...message, status: 'pending', attempts: 0, nextAttemptAt: now });
  }
  return { retried: parked.length };
}

/**
 * Makes every pending message of the account due now. Call it when the webhook URL is set or re-enabled:
 * messages set aside while there was no usable endpoint (and those waiting on a backoff) get an immediate
 * try at the new one. Attempts are kept. Returns how many were moved.
 */
export async function resumePendingMessages(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string): Promise<{ resumed: number }> {
  const now = deps.clock.now().toISOString();
  let resumed = 0;
  for (const message of await deps.storage.outbox.list(accountId, 'pending')) {
    if (message.nextAttemptAt > now) {
      await deps.storage.outbox.update({ ...message, nextAttemptAt: now });
      resumed += 1;
    }
  }
  return { resumed };
}

export interface WebhookStatus {
  webhookEnabled: boolean;
  webhookStatusDetail: string | null;
  /** Messages still pending (being delivered or waiting for a retry). */
  processing: number;
  /** Messages parked after their last failed attempt, until `retryParked`. */
  failed: number;
}

/** `GET /settings/webhook` (issue 7). An account without settings reports a disabled endpoint. */
export async function webhookStatus(deps: Pick<CoreDeps, 'storage'>, accountId: string): Promise<WebhookStatus> {
  const [settings, counts] = await Promise.all([deps.storage.webhookSettings.get(accountId), deps.storage.outbox.counts(accountId)]);
  return {
    webhookEnabled: Boolean(settings?.webhookEnabled && settings.webhookUrl),
    webhookStatusDetail: settings?.webhookStatusDetail ?? null,
    processing: counts.pending ?? 0,
    failed: counts.parked ?? 0,
  };
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
 * later) and expects `{ pong: <token> }` within 2 s (issue 7). Never throws for receiver behaviour.
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
