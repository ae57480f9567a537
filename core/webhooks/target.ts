import type { DeliveryDeps } from './delivery.js';
import { enqueueMessage } from './enqueue.js';
import { endpointDisabledMessage } from './envelope.js';
import { DEFAULT_ENDPOINT_ID } from './log.js';

/** Runs a storage write after the ones chained before it. */
export type Chain = <T>(write: () => Promise<T>) => Promise<T>;

/** One endpoint as a lane sends to it: the default endpoint (the account's settings) or an extra one. */
export interface Target {
  url: string;
  signingKey: string;
  /** Keys of a rotation's grace period, signing beside `signingKey`. */
  previousSigningKeys: string[];
  statusDetail(): string | null;
  /**
   * Notes the state of a working endpoint in words (`Unhealthy: ...`, or null once it works again); never
   * written over why an endpoint is off. Writes reach the storage in the order made.
   */
  note(detail: string | null, nowIso: string): Promise<void>;
  /**
   * Moves the failure clock: a delivered attempt stops it, a failed one starts it unless it runs. Returns
   * when it started (null: not failing). Kept for the pass, so it costs a write only when it changes.
   */
  clock(outcome: 'delivered' | 'failed', atIso: string): Promise<string | null>;
  /**
   * Turns the endpoint off with `detail`, and in the same transaction stores a `webhook.endpoint-disabled`
   * message for the account's other endpoints. With `failingSinceAtMost`, only when its clock started then
   * or earlier. False when it was off already (another lane or instance did it) or not failing so long.
   */
  disable(reason: 'failing' | 'gone', detail: string, nowIso: string, failingSinceAtMost?: string): Promise<boolean>;
}

/**
 * The endpoint's target, or `undefined` when it cannot be sent to now (no URL, disabled, deleted). Its
 * writes go through `chain`, the lane's, so they reach the storage in the order made.
 */
export async function loadTarget(deps: DeliveryDeps, accountId: string, endpointId: string | undefined, now: Date, chain: Chain): Promise<Target | undefined> {
  const { storage } = deps;
  let described: { url: string; description: string; signingKey: string; previousSigningKeys: string[]; statusDetail: string | null; failingSince: string | null };
  if (endpointId === undefined) {
    const settings = await storage.webhookSettings.get(accountId);
    if (!settings || !settings.webhookUrl || !settings.webhookEnabled) return undefined;
    described = {
      url: settings.webhookUrl,
      description: '',
      signingKey: settings.webhookKey,
      previousSigningKeys: [],
      statusDetail: settings.webhookStatusDetail,
      failingSince: settings.failingSince ?? null,
    };
  } else {
    const endpoint = await storage.webhookEndpoints.get(accountId, endpointId);
    if (!endpoint || !endpoint.enabled) return undefined;
    const inGrace = endpoint.previousSecret !== undefined && endpoint.previousSecretUntil !== undefined && endpoint.previousSecretUntil > now.toISOString();
    described = {
      url: endpoint.url,
      description: endpoint.description,
      signingKey: endpoint.secret,
      previousSigningKeys: inGrace ? [endpoint.previousSecret!] : [],
      statusDetail: endpoint.statusDetail,
      failingSince: endpoint.failingSince ?? null,
    };
  }
  let { statusDetail, failingSince } = described;
  return {
    url: described.url,
    signingKey: described.signingKey,
    previousSigningKeys: described.previousSigningKeys,
    statusDetail: () => statusDetail,
    note(detail, nowIso) {
      statusDetail = detail;
      return chain(async () => {
        if (endpointId === undefined) await storage.webhookSettings.setStatusDetail(accountId, detail, nowIso);
        else await storage.webhookEndpoints.setStatusDetail(accountId, endpointId, detail, nowIso);
      });
    },
    async clock(outcome, atIso) {
      const wanted = outcome === 'delivered' ? null : atIso;
      if ((wanted === null) === (failingSince === null)) return failingSince;
      failingSince = wanted;
      const stored = await chain(() =>
        endpointId === undefined ? storage.webhookSettings.setFailingSince(accountId, wanted) : storage.webhookEndpoints.setFailingSince(accountId, endpointId, wanted),
      );
      // Another instance's earlier failure is kept; a deleted endpoint has no clock.
      if (stored !== undefined) failingSince = stored;
      return failingSince;
    },
    disable(reason, detail, nowIso, failingSinceAtMost) {
      statusDetail = detail;
      const change = { statusDetail: detail, updatedAt: nowIso, ...(failingSinceAtMost === undefined ? {} : { failingSinceAtMost }) };
      return chain(() =>
        storage.transaction(async (tx) => {
          const off = endpointId === undefined ? await tx.webhookSettings.disable(accountId, change) : await tx.webhookEndpoints.disable(accountId, endpointId, change);
          if (!off) return false;
          const notice = endpointDisabledMessage(
            { messageId: deps.ids.next(), when: deps.clock.now() },
            {
              endpointId: endpointId ?? DEFAULT_ENDPOINT_ID,
              url: described.url,
              description: described.description,
              reason,
              failingSince: off.failingSince ?? failingSince ?? nowIso,
              disabledAt: nowIso,
              statusDetail: detail,
            },
          );
          await enqueueMessage(tx, accountId, notice, { except: endpointId ?? null });
          return true;
        }),
      );
    },
  };
}
