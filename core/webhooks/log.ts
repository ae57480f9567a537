import type { CoreDeps } from '../deps.js';
import type { EndpointMessageCounts, WebhookAttempt, WebhookAttemptFilter } from '../domain/types.js';
import { CoreError } from '../errors.js';

/*
 * The delivery log: every attempt to deliver a message to an endpoint (default or extra), newest first,
 * filtered by endpoint, event type, patient, outcome and time window, paged by cursor. Pages are bounded
 * (`MAX_ATTEMPTS_PAGE`) and rows are deleted by the retention like delivered messages.
 */

export const MAX_ATTEMPTS_PAGE = 100;
export const DEFAULT_ATTEMPTS_PAGE = 50;
/** The `endpointId` that names the default endpoint (`webhookUrl`) in the log's filter and rows. */
export const DEFAULT_ENDPOINT_ID = 'default';

/** A cursor names the last attempt of a page: `<attemptedAt>~<id>`. Opaque to clients. */
const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)~(.+)$/;

export interface AttemptLogQuery {
  endpointId?: string | undefined;
  type?: WebhookAttempt['type'] | undefined;
  patientId?: string | undefined;
  status?: WebhookAttempt['outcome'] | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

export function attemptToWire(attempt: WebhookAttempt) {
  return {
    id: attempt.id,
    messageId: attempt.messageId,
    endpointId: attempt.endpointId ?? DEFAULT_ENDPOINT_ID,
    type: attempt.type,
    patientId: attempt.patientId ?? null,
    attemptedAt: attempt.attemptedAt,
    status: attempt.outcome,
    statusCode: attempt.statusCode ?? null,
    latencyMs: attempt.latencyMs,
    error: attempt.error ?? null,
    test: attempt.test ?? false,
  };
}

/**
 * A page of the account's delivery log, newest attempt first, and the cursor of the next page (`null` on
 * the last). @throws CoreError `VALIDATION_FAILED` for a cursor this service did not hand out,
 * `PATIENT_NOT_FOUND` for a patient that is not the account's (whose existence is never revealed).
 */
export async function listAttempts(deps: Pick<CoreDeps, 'storage'>, accountId: string, query: AttemptLogQuery) {
  if (query.patientId !== undefined && !(await deps.storage.patients.get(accountId, query.patientId))) {
    throw new CoreError('PATIENT_NOT_FOUND', 'No patient with this id in your account');
  }
  const limit = Math.min(query.limit ?? DEFAULT_ATTEMPTS_PAGE, MAX_ATTEMPTS_PAGE);
  let after: { attemptedAt: string; id: string } | undefined;
  if (query.cursor !== undefined) {
    const match = CURSOR.exec(query.cursor);
    if (!match) throw new CoreError('VALIDATION_FAILED', 'cursor: not one this service handed out; use nextCursor of the previous page', { details: { field: 'cursor' } });
    after = { attemptedAt: match[1]!, id: match[2]! };
  }
  const filter: WebhookAttemptFilter = {};
  if (query.endpointId !== undefined) filter.endpointId = query.endpointId === DEFAULT_ENDPOINT_ID ? null : query.endpointId;
  if (query.type !== undefined) filter.type = query.type;
  if (query.patientId !== undefined) filter.patientId = query.patientId;
  if (query.status !== undefined) filter.outcome = query.status;
  if (query.since !== undefined) filter.since = query.since;
  if (query.until !== undefined) filter.until = query.until;
  // One more than the page tells whether there is a next one.
  const rows = await deps.storage.webhookAttempts.list(accountId, filter, limit + 1, after);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { attempts: page.map(attemptToWire), nextCursor: rows.length > limit && last ? `${last.attemptedAt}~${last.id}` : null };
}

/** Message counts of one endpoint (extra endpoint id, or null for the default), zero when it has none. */
export function countsOf(all: readonly EndpointMessageCounts[], endpointId: string | null) {
  const found = all.find((entry) => entry.endpointId === endpointId);
  return { pending: found?.pending ?? 0, failing: found?.failing ?? 0, delivered: found?.delivered ?? 0, parked: found?.parked ?? 0 };
}
