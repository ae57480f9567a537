/**
 * The end of one source of a network query: its status, and its `network-query.<source>` webhook with a
 * short-lived URL to the patient's consolidated data, written together in the caller's transaction. Kept
 * apart from the query's use cases so the document query (the hie source runs as one) can end its
 * network queries' hie source in its own transaction without importing them.
 */
import type { CoreDeps } from '../deps.js';
import { documentQueryState, type DocumentQuery, type NetworkQuery, type NetworkSource, type Patient } from '../domain/types.js';
import type { StoragePort } from '../ports/storage.port.js';
import { issueSignedUrl } from '../signed-urls.js';
import { MINUTE_MS, nowIso } from '../time.js';
import { enqueueMessage } from '../webhooks/enqueue.js';
import { networkQueryMessage } from '../webhooks/envelope.js';
import { requestTo } from '../../contract/endpoints.js';

/** Consolidated data URLs in network query messages are valid 10 minutes. */
export const NETWORK_DATA_URL_VALIDITY_MS = 10 * MINUTE_MS;

export function networkDataPath(query: Pick<NetworkQuery, 'id'>): string {
  return requestTo('downloadNetworkQueryConsolidated', { requestId: query.id }).path;
}

type EndDeps = Pick<CoreDeps, 'ids' | 'clock' | 'urlSigner' | 'config'>;

/**
 * Ends `type` of the query as `status` and stores its message, in `tx`. A source that has ended already
 * (another worker, a retried job) is left alone: one message per source. Returns whether it ended it.
 * `sourceName` names the network that answered (the message's `source.source`). `patient` is the query's
 * patient as the caller's job read it, when it did (the message carries its external id): it is not read
 * again.
 */
export async function endNetworkSource(
  deps: EndDeps,
  tx: StoragePort,
  accountId: string,
  queryId: string,
  type: NetworkSource,
  status: 'completed' | 'failed',
  sourceName?: string,
  patient?: Patient,
): Promise<boolean> {
  // Held until the transaction ends: two sources ending at once must not overwrite each other's status.
  const query = await tx.networkQueries.getForUpdate(accountId, queryId);
  const source = query?.sources.find((candidate) => candidate.type === type);
  if (!query || !source || source.status !== 'processing') return false;
  const now = nowIso(deps.clock);
  await tx.networkQueries.update({
    ...query,
    sources: query.sources.map((candidate) => (candidate.type === type ? { ...candidate, status, completedAt: now } : candidate)),
    updatedAt: now,
  });
  const owner = patient?.id === query.patientId ? patient : await tx.patients.get(accountId, query.patientId);
  const { url } = issueSignedUrl(deps, { method: 'GET', path: networkDataPath(query), accountId }, NETWORK_DATA_URL_VALIDITY_MS);
  await enqueueMessage(
    tx,
    accountId,
    networkQueryMessage(
      { messageId: deps.ids.next(), requestId: query.id, when: deps.clock.now(), ...(query.metadata ? { data: query.metadata } : {}) },
      `network-query.${type}`,
      {
        patientId: query.patientId,
        ...(owner?.externalId ? { externalId: owner.externalId } : {}),
        consolidatedDataUrl: url,
        source: { type, ...(sourceName ? { source: sourceName } : {}), status, completedAt: now },
      },
    ),
  );
  return true;
}

/** The name the hie source's messages carry. */
export const HIE_SOURCE_NAME = 'Sandbox HIE Network';

/**
 * A document query has ended (in `tx`): the hie source of every network query of the patient that runs as
 * this document query ends with it, `failed` when the document query failed. `patient` as for
 * `endNetworkSource`.
 */
export async function endHieSourcesOf(deps: EndDeps, tx: StoragePort, documentQuery: DocumentQuery, patient?: Patient): Promise<void> {
  const state = documentQueryState(documentQuery);
  if (state === 'processing') return;
  for (const query of await tx.networkQueries.listProcessing(documentQuery.accountId, documentQuery.patientId)) {
    const hie = query.sources.find((source) => source.type === 'hie');
    if (hie?.status === 'processing' && hie.documentQueryId === documentQuery.id) {
      await endNetworkSource(deps, tx, query.accountId, query.id, 'hie', state === 'failed' ? 'failed' : 'completed', HIE_SOURCE_NAME, patient);
    }
  }
}
