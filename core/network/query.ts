/**
 * Network query (`POST /medical/v1/network/query`, `GET /medical/v1/network/query/{requestId}`): one
 * request asks any of three kinds of network for the patient's data. Each source runs as a queued job of
 * its own and ends with its own `network-query.<source>` webhook:
 *
 * - `hie`: a document query (documents fetched, converted and folded into the consolidated store); the
 *   source ends when that document query does, which also sends its own document webhooks.
 * - `pharmacy`, `lab`: the pharmacy and laboratory networks answer FHIR resources, kept as a Bundle document
 *   of the patient and folded into the consolidated store, deduplicated with what documents brought.
 *
 * Jobs are idempotent (a retried one finds its source ended, or stores the same answer under the same
 * file name), and they live in the durable queue, so a query survives a restart.
 */
import type { CoreDeps } from '../deps.js';
import { NETWORK_SOURCES, networkQueryStatus, type Account, type NetworkQuery, type NetworkSource, type Patient } from '../domain/types.js';
import { canonicalJson } from '../documents/dedupe.js';
import { digest } from '../documents/digest.js';
import { storeFhirBundleDocument } from '../documents/fhir-documents.js';
import { assertNotOptedOut, documentQueryForNetwork, isRunning, toHieQuery } from '../documents/query.js';
import { getPatient } from '../entities/patients.js';
import { CoreError } from '../errors.js';
import type { DataNetworkPort } from '../ports/data-network.port.js';
import { nowIso } from '../time.js';
import { validateMetadata } from '../../contract/metadata.js';
import { endNetworkSource, HIE_SOURCE_NAME } from './sources.js';
import { endingOnLastAttempt, newJob, runningOrStarted, type GivesUp, type JobHandlers } from '../job-catalogue.js';


function invalidSources(message: string): CoreError {
  return new CoreError('VALIDATION_FAILED', `sources: ${message}`, { details: { field: 'sources' } });
}

/**
 * The sources asked for, in the public API's two forms: a list (`["hie", "lab"]`) or an object
 * (`{ hie: { enabled: true }, pharmacy: { enabled: false } }`). At least one; each once, in the order
 * hie, pharmacy, lab. Throws VALIDATION_FAILED naming `sources`.
 */
export function checkSources(input: unknown): NetworkSource[] {
  let wanted: Set<string>;
  if (Array.isArray(input)) {
    wanted = new Set();
    for (const value of input) {
      if (typeof value !== 'string' || !NETWORK_SOURCES.includes(value as NetworkSource)) throw invalidSources('each must be hie, pharmacy or lab');
      wanted.add(value);
    }
  } else if (typeof input === 'object' && input !== null) {
    wanted = new Set();
    for (const [name, config] of Object.entries(input)) {
      if (!NETWORK_SOURCES.includes(name as NetworkSource)) throw invalidSources(`unknown source "${name.slice(0, 40)}"; use hie, pharmacy or lab`);
      const enabled = (config as { enabled?: unknown } | null)?.enabled;
      if (typeof enabled !== 'boolean') throw invalidSources(`${name}.enabled must be true or false`);
      if (enabled) wanted.add(name);
    }
  } else {
    throw invalidSources('must be a list of sources (hie, pharmacy, lab) or an object of them');
  }
  const sources = NETWORK_SOURCES.filter((source) => wanted.has(source));
  if (sources.length === 0) throw invalidSources('ask for at least one source');
  return sources;
}

function networkOf(deps: Pick<CoreDeps, 'pharmacy' | 'lab'>, source: 'pharmacy' | 'lab'): DataNetworkPort {
  return source === 'pharmacy' ? deps.pharmacy : deps.lab;
}

/**
 * Starts a network query of the patient, or returns the one still running (the networks are asked once at
 * a time per patient, as for document queries). The query runs under the patient's first facility.
 * Throws PATIENT_NOT_FOUND, PATIENT_OPTED_OUT (nothing is recorded or queued), VALIDATION_FAILED
 * (sources), METADATA_INVALID.
 */
export async function startNetworkQuery(
  deps: CoreDeps,
  account: Account,
  input: { patientId: string; sources: unknown; metadata?: unknown },
): Promise<NetworkQuery> {
  const sources = checkSources(input.sources);
  const metadata = validateMetadata(input.metadata);
  const patient = await getPatient(deps, account.id, input.patientId);
  assertNotOptedOut(patient);
  const [running] = await deps.storage.networkQueries.listProcessing(account.id, patient.id);
  return runningOrStarted(running, {
    make: (): NetworkQuery => {
      const now = nowIso(deps.clock);
      return {
        id: deps.ids.next(),
        accountId: account.id,
        patientId: patient.id,
        facilityId: patient.facilityIds[0]!,
        sources: sources.map((type) => ({ type, status: 'processing', startedAt: now })),
        ...(metadata && Object.keys(metadata).length > 0 ? { metadata } : {}),
        createdAt: now,
        updatedAt: now,
      };
    },
    store: (query) => deps.storage.networkQueries.insert(query),
    enqueue: (query) => enqueueSources(deps, query),
  });
}

async function enqueueSources(deps: Pick<CoreDeps, 'queue'>, query: NetworkQuery): Promise<void> {
  for (const source of query.sources) {
    if (source.status !== 'processing') continue;
    await deps.queue.enqueue(newJob('network.source', { accountId: query.accountId, queryId: query.id, source: source.type }, { lane: 'interactive', fairnessKey: query.accountId }));
  }
}

/** One network query of the account. Throws NOT_FOUND (also for another account's, or one pruned by retention). */
export async function getNetworkQuery(deps: Pick<CoreDeps, 'storage'>, accountId: string, requestId: string): Promise<NetworkQuery> {
  const query = await deps.storage.networkQueries.get(accountId, requestId);
  if (!query) throw new CoreError('NOT_FOUND', 'No network query with this id in your account');
  return query;
}

/** The public API's status shape. */
export function networkQueryToWire(query: NetworkQuery) {
  return {
    requestId: query.id,
    startedAt: query.createdAt,
    status: networkQueryStatus(query),
    sources: query.sources.map((source) => ({
      type: source.type,
      status: source.status,
      startedAt: source.startedAt,
      ...(source.completedAt ? { completedAt: source.completedAt } : {}),
    })),
  };
}

/**
 * The job of one source. A patient removed or opted out since the start ends the source `failed` without
 * asking any network. Network and storage failures are thrown for the queue to retry; the last attempt
 * ends the source `failed` (see `failNetworkSource`).
 */
export async function runNetworkSource(deps: CoreDeps, accountId: string, queryId: string, type: NetworkSource): Promise<void> {
  const query = await deps.storage.networkQueries.get(accountId, queryId);
  const source = query?.sources.find((candidate) => candidate.type === type);
  if (!query || source?.status !== 'processing') return;
  const patient = await deps.storage.patients.get(accountId, query.patientId);
  if (!patient || patient.hieOptOut) {
    await failNetworkSource(deps, query, type);
    return;
  }
  if (type === 'hie') await runHieSource(deps, query, patient);
  else await runDataSource(deps, query, patient, type);
}

async function runHieSource(deps: CoreDeps, query: NetworkQuery, patient: Patient): Promise<void> {
  const hie = query.sources.find((source) => source.type === 'hie')!;
  let documentQueryId = hie.documentQueryId;
  if (documentQueryId === undefined) {
    const facilityId = patient.facilityIds.includes(query.facilityId) ? query.facilityId : patient.facilityIds[0]!;
    documentQueryId = (await documentQueryForNetwork(deps, patient, facilityId, query.metadata)).id;
    await deps.storage.transaction(async (tx) => {
      const current = await tx.networkQueries.get(query.accountId, query.id);
      if (!current) return;
      await tx.networkQueries.update({
        ...current,
        sources: current.sources.map((source) => (source.type === 'hie' && source.status === 'processing' ? { ...source, documentQueryId } : source)),
      });
    });
  }
  // The document query may have ended before its id was recorded here: then nothing else ends the source.
  const documentQuery = await deps.storage.documentQueries.get(query.accountId, documentQueryId);
  if (!documentQuery) {
    await failNetworkSource(deps, query, 'hie');
    return;
  }
  if (!isRunning(documentQuery)) {
    const failed = documentQuery.download.status === 'failed' || documentQuery.convert.status === 'failed';
    await deps.storage.transaction((tx) => endNetworkSource(deps, tx, query.accountId, query.id, 'hie', failed ? 'failed' : 'completed', HIE_SOURCE_NAME, patient));
  }
}

async function runDataSource(deps: CoreDeps, query: NetworkQuery, patient: Patient, type: 'pharmacy' | 'lab'): Promise<void> {
  const network = networkOf(deps, type);
  const answer = await network.fetchRecords(toHieQuery(patient));
  if (answer.resources.length > 0) {
    // Named by its content: the same answer again (a retried job, a later query) is recognised as held.
    const fileName = `${patient.id}_${digest(canonicalJson(answer.resources))}_${type}-records.json`;
    await storeFhirBundleDocument(deps, {
      accountId: query.accountId,
      patientId: patient.id,
      source: type,
      fileName,
      description: type === 'pharmacy' ? `${network.name}: prescriptions and dispensed medications` : `${network.name}: laboratory results`,
      type: type === 'pharmacy' ? { text: 'Medication history' } : { text: 'Laboratory results' },
      organizationIdentifiers: answer.organizations,
      resources: answer.resources,
    });
  }
  await deps.storage.transaction((tx) => endNetworkSource(deps, tx, query.accountId, query.id, type, 'completed', network.name, patient));
}

/** Ends a source that cannot go on (patient opted out or removed, the last attempt failed), with its `failed` message. */
export async function failNetworkSource(deps: CoreDeps, query: NetworkQuery, type: NetworkSource): Promise<void> {
  const name = type === 'hie' ? HIE_SOURCE_NAME : networkOf(deps, type).name;
  await deps.storage.transaction((tx) => endNetworkSource(deps, tx, query.accountId, query.id, type, 'failed', name));
}

/** The network query's job handler (the queue delivers at least once; the handler is idempotent). */
export function networkJobHandlers(deps: CoreDeps, givesUp: GivesUp): Pick<JobHandlers, 'network.source'> {
  return {
    'network.source': ({ accountId, queryId, source }, job) =>
      endingOnLastAttempt(
        job,
        givesUp,
        () => runNetworkSource(deps, accountId, queryId, source),
        async () => {
          const query = await deps.storage.networkQueries.get(accountId, queryId);
          if (query) await failNetworkSource(deps, query, source);
        },
      ),
  };
}

/**
 * The directory of the networks carebridge reaches (`GET /network-entry`): every network's organizations,
 * filtered, sorted by name then OID, paged by OID (`fromItem` inclusive).
 */
export async function listNetworkEntries(
  deps: Pick<CoreDeps, 'hie' | 'pharmacy' | 'lab'>,
  options: { filter?: string; npi?: string; oid?: string; supportsMessaging?: boolean; active?: boolean; fromItem?: string; count: number },
) {
  const all = [...(await deps.hie.directory()), ...(await deps.pharmacy.directory()), ...(await deps.lab.directory())].sort((a, b) =>
    a.name === b.name ? (a.oid < b.oid ? -1 : 1) : a.name.localeCompare(b.name),
  );
  const words = (options.filter ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const matching = all.filter((entry) => {
    if (options.npi !== undefined && entry.npi !== options.npi) return false;
    if (options.oid !== undefined && entry.oid !== options.oid) return false;
    if (options.supportsMessaging === true && !entry.supportsMessaging) return false;
    if (options.active !== undefined && entry.active !== options.active) return false;
    const text = [entry.name, entry.city, entry.state, entry.zipCode, entry.npi, entry.oid, entry.rootOrganization].filter(Boolean).join(' ').toLowerCase();
    return words.every((word) => text.includes(word));
  });
  const start = options.fromItem === undefined ? 0 : Math.max(0, matching.findIndex((entry) => entry.oid === options.fromItem));
  const page = matching.slice(start, start + options.count);
  const next = matching[start + options.count];
  return { networkEntries: page.map((entry) => ({ ...entry, ...(entry.zipCode ? { zip: entry.zipCode } : {}) })), next: next?.oid };
}
