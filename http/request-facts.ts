import type { Account } from '../core/domain/types.js';

/** What the access log learns about a request while the handler runs: only ids, never PHI. */
export interface RequestFacts {
  accountId?: string;
  /** The route pattern the handler matched. */
  route?: string;
}

/*
 * Keyed by the request object the translation hands to the handler (every layer passes that same object
 * on). A WeakMap rather than AsyncLocalStorage: on Node 20 the latter turns on promise hooks for the whole
 * process, a cost every promise of every request and background job pays.
 */
const factsByRequest = new WeakMap<object, RequestFacts>();

/** Starts the facts record of one request; the access log reads it once the handler has answered. */
export function trackRequestFacts(request: object): RequestFacts {
  const record: RequestFacts = {};
  factsByRequest.set(request, record);
  return record;
}

/**
 * Notes the account a request authenticated as, for its access log (the API handler's `onAuthenticated`).
 * A request no translation tracks (called in process) notes nothing.
 */
export function noteAccount(account: Account, request: object): void {
  const record = factsByRequest.get(request);
  if (record) record.accountId = account.id;
}

/** Notes the route pattern the handler matched (its `onRouted`), so the translation need not route again. */
export function noteRoute(route: string, request: object): void {
  const record = factsByRequest.get(request);
  if (record) record.route = route;
}
