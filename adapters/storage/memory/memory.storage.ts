import { documentQueryState, networkQueryStatus } from '../../../core/domain/types.js';
import { CoreError } from '../../../core/errors.js';
import { matchesPatientSearch } from '../../../core/entities/patient-search.js';
import type {
  BulkQueriesProgress,
  Account,
  BulkRequest,
  BulkRowOutcome,
  Cohort,
  ConsolidatedQuery,
  NetworkQuery,
  DocumentQuery,
  DocumentRecord,
  Facility,
  FhirResourceRecord,
  Organization,
  OutboxMessage,
  EndpointMessageCounts,
  WebhookAttempt,
  WebhookEndpoint,
  Patient,
  WebhookSettings,
} from '../../../core/domain/types.js';
import type {
  AccountRepository,
  BulkRequestRepository,
  BulkRowRepository,
  CohortRepository,
  ConsolidatedQueryRepository,
  NetworkQueryRepository,
  DocumentQueryRepository,
  DocumentRepository,
  FacilityRepository,
  FhirResourceRepository,
  OrganizationRepository,
  OutboxRepository,
  PatientListOptions,
  PatientRepository,
  StoragePort,
  WebhookSettingsRepository,
  WebhookEndpointRepository,
  WebhookAttemptRepository,
} from '../../../core/ports/storage.port.js';
import { Mutex } from '../mutex.js';
import { Table, TableOverlay, type IndexSpec, type TableView } from './table.js';

/** Joins key parts; NUL never occurs in ids, so the joined key is unambiguous. */
const key = (...parts: (string | number)[]): string => parts.join('\u0000');

/**
 * A deep copy of a stored record. Records are plain data (objects, arrays, strings, numbers, booleans,
 * null; timestamps are ISO strings), so a recursive copy does what structuredClone did, at a fraction of
 * the cost: structuredClone took ~15 µs per patient, most of an in-memory bulk import's storage time.
 */
function copy<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const array: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) array[i] = copy(value[i]);
    return array as T;
  }
  const object: Record<string, unknown> = {};
  for (const key in value) {
    const field = copy((value as Record<string, unknown>)[key]);
    // A JSON-parsed FHIR resource may own a `__proto__` key: keep it a key, as structuredClone did.
    if (key === '__proto__') Object.defineProperty(object, key, { value: field, enumerable: true, writable: true, configurable: true });
    else object[key] = field;
  }
  return object as T;
}

/** The account's patient revision (see PatientRepository.revision), keyed by account id. */
interface PatientRevision {
  accountId: string;
  revision: number;
}

interface Timestamped {
  id: string;
  createdAt: string;
}

const byId = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const oldestFirst = (a: Timestamped, b: Timestamped): number =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : byId(a, b);
const newestFirst = (a: Timestamped, b: Timestamped): number => oldestFirst(b, a);

const byAccount = (row: { accountId: string }) => [row.accountId];
/** An endpoint of an account as the outbox indexes it: an extra endpoint's id, or '' for the default one. */
const endpointKey = (accountId: string, endpointId: string | null): string => key(accountId, endpointId ?? '');
const byPatient = (row: { accountId: string; patientId: string }) => [key(row.accountId, row.patientId)];

const INDEXES = {
  accounts: { all: () => [''], byApiKeyHash: (row: Account) => [row.apiKeyHash] } satisfies IndexSpec<Account>,
  webhookSettings: {} satisfies IndexSpec<WebhookSettings>,
  webhookEndpoints: { byAccount } satisfies IndexSpec<WebhookEndpoint>,
  organizations: { byAccount } satisfies IndexSpec<Organization>,
  facilities: { byAccount } satisfies IndexSpec<Facility>,
  cohorts: { byAccount } satisfies IndexSpec<Cohort>,
  patients: {
    byAccount,
    byExternalId: (row: Patient) => (row.externalId === undefined ? [] : [key(row.accountId, row.externalId)]),
    byMatchKey: (row: Patient) => [...new Set(row.matchKeys)].map((matchKey) => key(row.accountId, matchKey)),
  } satisfies IndexSpec<Patient>,
  bulkRequests: { byAccount, byStatus: (row: BulkRequest) => [row.status] } satisfies IndexSpec<BulkRequest>,
  bulkRows: { byRequest: (row: BulkRowOutcome) => [row.requestId] } satisfies IndexSpec<BulkRowOutcome>,
  documents: {
    byPatient,
    byFileName: (row: DocumentRecord) => [key(row.accountId, row.fileName)],
  } satisfies IndexSpec<DocumentRecord>,
  documentQueries: {
    byPatient,
    byBulkRequest: (row: DocumentQuery) => (row.bulkRequestId === undefined ? [] : [key(row.accountId, row.bulkRequestId)]),
  } satisfies IndexSpec<DocumentQuery>,
  fhirResources: { byPatient } satisfies IndexSpec<FhirResourceRecord>,
  consolidatedQueries: { byPatient } satisfies IndexSpec<ConsolidatedQuery>,
  networkQueries: {
    byPatient,
    byState: (row: NetworkQuery) => [networkQueryStatus(row) === 'processing' ? 'processing' : 'finished'],
  } satisfies IndexSpec<NetworkQuery>,
  outbox: {
    byAccount,
    byStatus: (row: OutboxMessage) => [row.status],
    // What a claim reads: the pending messages of each endpoint ('' the default one), and of each stream
    // (whose waiting or claimed messages hold the others back). Both hold pending messages only, so they
    // shrink as messages are delivered or parked.
    pendingByEndpoint: (row: OutboxMessage) => (row.status === 'pending' ? [endpointKey(row.accountId, row.endpointId ?? null)] : []),
    pendingByStream: (row: OutboxMessage) => (row.status === 'pending' ? [key(row.accountId, row.streamKey)] : []),
  } satisfies IndexSpec<OutboxMessage>,
  webhookAttempts: { byAccount, all: () => [''] } satisfies IndexSpec<WebhookAttempt>,
  patientRevisions: {} satisfies IndexSpec<PatientRevision>,
};

type TableName = keyof typeof INDEXES;
type RowOf = {
  accounts: Account;
  webhookSettings: WebhookSettings;
  webhookEndpoints: WebhookEndpoint;
  organizations: Organization;
  facilities: Facility;
  cohorts: Cohort;
  patients: Patient;
  bulkRequests: BulkRequest;
  bulkRows: BulkRowOutcome;
  documents: DocumentRecord;
  documentQueries: DocumentQuery;
  fhirResources: FhirResourceRecord;
  consolidatedQueries: ConsolidatedQuery;
  networkQueries: NetworkQuery;
  outbox: OutboxMessage;
  webhookAttempts: WebhookAttempt;
  patientRevisions: PatientRevision;
};
type TableSet = { [N in TableName]: Table<RowOf[N]> };
type OverlaySet = { [N in TableName]: TableOverlay<RowOf[N]> };
type ViewSet = { [N in TableName]: TableView<RowOf[N]> };

const TABLE_NAMES = Object.keys(INDEXES) as TableName[];

function createTables(): TableSet {
  return Object.fromEntries(TABLE_NAMES.map((name) => [name, new Table(INDEXES[name] as IndexSpec<never>)])) as unknown as TableSet;
}

function createOverlays(tables: TableSet): OverlaySet {
  return Object.fromEntries(TABLE_NAMES.map((name) => [name, new TableOverlay(tables[name] as unknown as Table<never>)])) as unknown as OverlaySet;
}

function rowsOf<T>(view: TableView<T>, keys: Iterable<string>): T[] {
  const rows: T[] = [];
  for (const k of keys) {
    const row = view.get(k);
    if (row !== undefined) rows.push(row);
  }
  return rows;
}

function alreadyExists(entity: string, id: string): CoreError {
  return new CoreError('CONFLICT', `${entity} ${id} already exists`, { details: { id } });
}

/** The account's row with this id, or undefined when missing or another account's. */
function owned<T extends { accountId: string }>(view: TableView<T>, accountId: string, id: string): T | undefined {
  const row = view.get(id);
  return row !== undefined && row.accountId === accountId ? row : undefined;
}

function insertNew<T extends { id: string }>(view: TableView<T>, entity: string, row: T): void {
  if (view.get(row.id) !== undefined) throw alreadyExists(entity, row.id);
  view.set(row.id, copy(row));
}

/** A copy of `row` with `failingSince` set to `at`, or without it when `at` is undefined. */
function withFailingSince<T extends { failingSince?: string }>(row: T, at: string | undefined): T {
  const { failingSince: _dropped, ...rest } = copy(row);
  return (at === undefined ? rest : { ...rest, failingSince: at }) as T;
}

/** Whether a failure clock that started at `failingSince` has run since `atMost` (always, without a condition). */
function failingLongEnough(failingSince: string | undefined, atMost: string | undefined): boolean {
  return atMost === undefined || (failingSince !== undefined && failingSince <= atMost);
}

/** Replaces the account's row; undefined when missing or another account's. */
function replaceOwned<T extends { id: string; accountId: string }>(view: TableView<T>, row: T): T | undefined {
  if (owned(view, row.accountId, row.id) === undefined) return undefined;
  view.set(row.id, copy(row));
  return copy(row);
}

/**
 * The `limit` smallest ids greater than `after`, without sorting the whole account: a page costs one pass
 * over the account's keys plus a small sorted buffer.
 */
function smallestIds(ids: Iterable<string>, after: string | undefined, limit: number): string[] {
  const page: string[] = [];
  for (const id of ids) {
    if (after !== undefined && id <= after) continue;
    if (page.length === limit && id >= page[limit - 1]!) continue;
    let low = 0;
    let high = page.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (page[middle]! < id) low = middle + 1;
      else high = middle;
    }
    page.splice(low, 0, id);
    if (page.length > limit) page.pop();
  }
  return page;
}

/**
 * The `limit` oldest of `rows` (createdAt, ties by id), oldest first, without sorting them all: a claim takes
 * a few hundred of an endpoint's thousands.
 */
function oldest<T extends Timestamped>(rows: readonly T[], limit: number): T[] {
  if (limit <= 0) return [];
  if (rows.length <= limit) return [...rows].sort(oldestFirst);
  const page: T[] = [];
  for (const row of rows) {
    if (page.length === limit && oldestFirst(row, page[limit - 1]!) >= 0) continue;
    let low = 0;
    let high = page.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (oldestFirst(page[middle]!, row) < 0) low = middle + 1;
      else high = middle;
    }
    page.splice(low, 0, row);
    if (page.length > limit) page.pop();
  }
  return page;
}

/** Whether no id of `ids` comes after `id`. */
function isLast(ids: Iterable<string>, id: string): boolean {
  for (const other of ids) if (other > id) return false;
  return true;
}

/** Live outbox claims by message id; a lease is not transactional data, so it sits beside the tables. */
type OutboxLeases = Map<string, { owner: string; until: string }>;

/**
 * The repositories over `views` (the tables, or a transaction's overlays). `locked`: the accounts whose
 * patients this transaction holds, with the revision each had when taken.
 */
function repositories(views: ViewSet, leases: OutboxLeases, locked: Map<string, number>): Omit<StoragePort, 'transaction' | 'close'> {
  const accounts: AccountRepository = {
    async insert(account) {
      // One key hash per account: a key that authenticated as two accounts would be ambiguous.
      if (views.accounts.countBy('byApiKeyHash', account.apiKeyHash) > 0) {
        throw new CoreError('CONFLICT', 'an account with this API key hash already exists', { details: { id: account.id } });
      }
      insertNew(views.accounts, 'account', account);
    },
    async get(id) {
      const row = views.accounts.get(id);
      return row && copy(row);
    },
    async getByApiKeyHash(apiKeyHash) {
      const [row] = rowsOf(views.accounts, views.accounts.keysBy('byApiKeyHash', apiKeyHash));
      return row && copy(row);
    },
    async list() {
      return rowsOf(views.accounts, views.accounts.keysBy('all', '')).sort(oldestFirst).map(copy);
    },
    async replaceApiKey(id, apiKeyHash, apiKeyPrefix) {
      const row = views.accounts.get(id);
      if (!row) return false;
      const [holder] = rowsOf(views.accounts, views.accounts.keysBy('byApiKeyHash', apiKeyHash));
      if (holder && holder.id !== id) throw new CoreError('CONFLICT', 'an account with this API key hash already exists', { details: { id } });
      views.accounts.set(id, { ...copy(row), apiKeyHash, apiKeyPrefix });
      return true;
    },
  };

  const webhookSettings: WebhookSettingsRepository = {
    async get(accountId) {
      const row = views.webhookSettings.get(accountId);
      return row && copy(row);
    },
    async put(settings) {
      const stored = views.webhookSettings.get(settings.accountId);
      views.webhookSettings.set(settings.accountId, withFailingSince(settings, stored ? stored.failingSince : settings.failingSince));
    },
    async setFailingSince(accountId, at) {
      const row = views.webhookSettings.get(accountId);
      if (!row) return undefined;
      const next = at === null ? undefined : (row.failingSince ?? at);
      views.webhookSettings.set(accountId, withFailingSince(row, next));
      return next ?? null;
    },
    async setStatusDetail(accountId, statusDetail, updatedAt) {
      const row = views.webhookSettings.get(accountId);
      if (!row || !row.webhookEnabled) return false;
      views.webhookSettings.set(accountId, { ...copy(row), webhookStatusDetail: statusDetail, updatedAt });
      return true;
    },
    async disable(accountId, change) {
      const row = views.webhookSettings.get(accountId);
      if (!row || !row.webhookEnabled || !failingLongEnough(row.failingSince, change.failingSinceAtMost)) return undefined;
      const disabled = { ...copy(row), webhookEnabled: false, webhookStatusDetail: change.statusDetail, updatedAt: change.updatedAt };
      views.webhookSettings.set(accountId, disabled);
      return copy(disabled);
    },
  };

  const webhookEndpoints: WebhookEndpointRepository = {
    async insert(endpoint) {
      insertNew(views.webhookEndpoints, 'webhook endpoint', endpoint);
    },
    async get(accountId, id) {
      const row = owned(views.webhookEndpoints, accountId, id);
      return row && copy(row);
    },
    async list(accountId) {
      return rowsOf(views.webhookEndpoints, views.webhookEndpoints.keysBy('byAccount', accountId)).sort(oldestFirst).map(copy);
    },
    async count(accountId) {
      return views.webhookEndpoints.countBy('byAccount', accountId);
    },
    async update(endpoint) {
      const stored = owned(views.webhookEndpoints, endpoint.accountId, endpoint.id);
      if (stored === undefined) return undefined;
      // The failure clock is not the caller's to write here (see the port).
      const row = withFailingSince(endpoint, stored.failingSince);
      views.webhookEndpoints.set(endpoint.id, row);
      return copy(row);
    },
    async remove(accountId, id) {
      if (owned(views.webhookEndpoints, accountId, id) === undefined) return false;
      views.webhookEndpoints.delete(id);
      return true;
    },
    async setFailingSince(accountId, id, at) {
      const row = owned(views.webhookEndpoints, accountId, id);
      if (!row) return undefined;
      const next = at === null ? undefined : (row.failingSince ?? at);
      views.webhookEndpoints.set(id, withFailingSince(row, next));
      return next ?? null;
    },
    async setStatusDetail(accountId, id, statusDetail, updatedAt) {
      const row = owned(views.webhookEndpoints, accountId, id);
      if (!row || !row.enabled) return false;
      views.webhookEndpoints.set(id, { ...copy(row), statusDetail, updatedAt });
      return true;
    },
    async disable(accountId, id, change) {
      const row = owned(views.webhookEndpoints, accountId, id);
      if (!row || !row.enabled || !failingLongEnough(row.failingSince, change.failingSinceAtMost)) return undefined;
      const disabled = { ...copy(row), enabled: false, statusDetail: change.statusDetail, updatedAt: change.updatedAt };
      views.webhookEndpoints.set(id, disabled);
      return copy(disabled);
    },
  };

  const organizations: OrganizationRepository = {
    async insert(org) {
      if (views.organizations.countBy('byAccount', org.accountId) > 0) {
        throw new CoreError('CONFLICT', `account ${org.accountId} already has an organization`, { details: { id: org.id } });
      }
      insertNew(views.organizations, 'organization', org);
    },
    async getByAccount(accountId) {
      const [row] = rowsOf(views.organizations, views.organizations.keysBy('byAccount', accountId));
      return row && copy(row);
    },
    async update(org) {
      return replaceOwned(views.organizations, org);
    },
  };

  const facilities: FacilityRepository = {
    async insert(facility) {
      insertNew(views.facilities, 'facility', facility);
    },
    async get(accountId, id) {
      const row = owned(views.facilities, accountId, id);
      return row && copy(row);
    },
    async list(accountId) {
      return rowsOf(views.facilities, views.facilities.keysBy('byAccount', accountId)).sort(oldestFirst).map(copy);
    },
    async update(facility) {
      return replaceOwned(views.facilities, facility);
    },
    async remove(accountId, id) {
      return owned(views.facilities, accountId, id) !== undefined && views.facilities.delete(id);
    },
  };

  const cohorts: CohortRepository = {
    async insert(cohort) {
      insertNew(views.cohorts, 'cohort', cohort);
    },
    async get(accountId, id) {
      const row = owned(views.cohorts, accountId, id);
      return row && copy(row);
    },
    async existingIds(accountId, ids) {
      return [...new Set(ids)].filter((id) => owned(views.cohorts, accountId, id) !== undefined);
    },
    async list(accountId) {
      return rowsOf(views.cohorts, views.cohorts.keysBy('byAccount', accountId)).sort(oldestFirst).map(copy);
    },
    async update(cohort) {
      return replaceOwned(views.cohorts, cohort);
    },
    async remove(accountId, id) {
      return owned(views.cohorts, accountId, id) !== undefined && views.cohorts.delete(id);
    },
  };

  /**
   * Takes the account's patients for this transaction. Transactions run one at a time and patient writes
   * outside one are made transactions of their own (see MemoryStorage), so holding is bookkeeping: the
   * revision advances once per transaction, in its overlay, so a rollback leaves it as it was.
   */
  const lockAccount = (accountId: string): number => {
    let held = locked.get(accountId);
    if (held === undefined) {
      held = views.patientRevisions.get(accountId)?.revision ?? 0;
      views.patientRevisions.set(accountId, { accountId, revision: held + 1 });
      locked.set(accountId, held);
    }
    return held;
  };
  const lockAccountsOf = (batch: readonly Patient[]) => {
    for (const accountId of new Set(batch.map((patient) => patient.accountId))) lockAccount(accountId);
  };

  const patients: PatientRepository = {
    async insert(patient) {
      lockAccount(patient.accountId);
      insertNew(views.patients, 'patient', patient);
    },
    async insertMany(batch) {
      lockAccountsOf(batch);
      // Check the whole batch first, so a failure leaves nothing behind.
      const seen = new Set<string>();
      for (const patient of batch) {
        if (seen.has(patient.id) || views.patients.get(patient.id) !== undefined) throw alreadyExists('patient', patient.id);
        seen.add(patient.id);
      }
      for (const patient of batch) views.patients.set(patient.id, copy(patient));
    },
    async get(accountId, id) {
      const row = owned(views.patients, accountId, id);
      return row && copy(row);
    },
    async findByExternalId(accountId, externalId) {
      return rowsOf(views.patients, views.patients.keysBy('byExternalId', key(accountId, externalId))).sort(oldestFirst).map(copy);
    },
    async findByMatchKeys(accountId, matchKeys) {
      const ids = new Set<string>();
      for (const matchKey of new Set(matchKeys)) {
        for (const id of views.patients.keysBy('byMatchKey', key(accountId, matchKey))) ids.add(id);
      }
      return rowsOf(views.patients, ids).sort(oldestFirst).map(copy);
    },
    async list(accountId, options: PatientListOptions = {}) {
      const { facilityId, cohortId, after, limit } = options;
      let ids: Iterable<string> = views.patients.keysBy('byAccount', accountId);
      if (facilityId !== undefined || cohortId !== undefined) {
        ids = rowsOf(views.patients, ids)
          .filter((p) => (facilityId === undefined || p.facilityIds.includes(facilityId)) && (cohortId === undefined || p.cohortIds.includes(cohortId)))
          .map((p) => p.id);
      }
      const page = limit === undefined ? [...ids].filter((id) => after === undefined || id > after).sort() : smallestIds(ids, after, limit);
      return rowsOf(views.patients, page).map(copy);
    },
    async search(accountId, search, { after, limit, scan }) {
      const candidates = search.externalId !== undefined ? views.patients.keysBy('byExternalId', key(accountId, search.externalId)) : views.patients.keysBy('byAccount', accountId);
      const examined = smallestIds(candidates, after, scan);
      const patients: Patient[] = [];
      for (let i = 0; i < examined.length; i++) {
        const patient = views.patients.get(examined[i]!)!;
        if (!matchesPatientSearch(search, patient)) continue;
        patients.push(copy(patient));
        if (patients.length === limit) return { patients, ...(isLast(candidates, patient.id) ? {} : { next: patient.id }) };
      }
      const last = examined.at(-1);
      return last === undefined || isLast(candidates, last) ? { patients } : { patients, next: last };
    },
    async update(patient) {
      lockAccount(patient.accountId);
      const stored = owned(views.patients, patient.accountId, patient.id);
      if (stored === undefined) return undefined;
      if (stored.version !== patient.version) return 'stale';
      const next = { ...copy(patient), version: patient.version + 1 };
      views.patients.set(patient.id, next);
      return copy(next);
    },
    async updateMany(batch) {
      lockAccountsOf(batch);
      const last = [...new Map(batch.map((patient) => [patient.id, patient] as const)).values()];
      for (const patient of last) {
        if (owned(views.patients, patient.accountId, patient.id) === undefined) {
          throw new CoreError('PATIENT_NOT_FOUND', `patient ${patient.id} not found`, { details: { id: patient.id } });
        }
      }
      const stale = last.filter((patient) => views.patients.get(patient.id)!.version !== patient.version).map((patient) => patient.id);
      if (stale.length > 0) return stale;
      for (const patient of last) views.patients.set(patient.id, { ...copy(patient), version: patient.version + 1 });
      return [];
    },
    async remove(accountId, id) {
      lockAccount(accountId);
      return owned(views.patients, accountId, id) !== undefined && views.patients.delete(id);
    },
    async revision(accountId) {
      return views.patientRevisions.get(accountId)?.revision ?? 0;
    },
    async lockAccount(accountId) {
      return lockAccount(accountId);
    },
  };

  const bulkRequests: BulkRequestRepository = {
    async insert(request) {
      insertNew(views.bulkRequests, 'bulk request', request);
    },
    async get(accountId, id) {
      const row = owned(views.bulkRequests, accountId, id);
      return row && copy(row);
    },
    async getById(id) {
      const row = views.bulkRequests.get(id);
      return row && copy(row);
    },
    async updateIfStatus(request, expected) {
      // Check and write happen in one synchronous step, so no other caller can interleave between them.
      const stored = owned(views.bulkRequests, request.accountId, request.id);
      if (stored === undefined || stored.status !== expected) return undefined;
      views.bulkRequests.set(request.id, copy(request));
      return copy(request);
    },
    async listByStatus(status, limit) {
      return rowsOf(views.bulkRequests, views.bulkRequests.keysBy('byStatus', status)).sort(oldestFirst).slice(0, limit).map(copy);
    },
    async list(accountId, limit) {
      const rows = rowsOf(views.bulkRequests, views.bulkRequests.keysBy('byAccount', accountId)).sort(newestFirst);
      return (limit === undefined ? rows : rows.slice(0, limit)).map(copy);
    },
  };

  const bulkRows: BulkRowRepository = {
    async putMany(outcomes) {
      for (const outcome of outcomes) views.bulkRows.set(key(outcome.requestId, outcome.rowIndex), copy(outcome));
    },
    async range(requestId, from, to) {
      const stored = views.bulkRows.countBy('byRequest', requestId);
      // Probe each index of a narrow range directly; a wide one is cheaper as a pass over the request's rows.
      if (to - from <= stored) {
        const keys: string[] = [];
        for (let rowIndex = Math.max(0, from); rowIndex < to; rowIndex++) keys.push(key(requestId, rowIndex));
        return rowsOf(views.bulkRows, keys).map(copy);
      }
      return rowsOf(views.bulkRows, views.bulkRows.keysBy('byRequest', requestId))
        .filter((row) => row.rowIndex >= from && row.rowIndex < to)
        .sort((a, b) => a.rowIndex - b.rowIndex)
        .map(copy);
    },
    async nextRowIndex(requestId) {
      let next = 0;
      for (const row of rowsOf(views.bulkRows, views.bulkRows.keysBy('byRequest', requestId))) next = Math.max(next, row.rowIndex + 1);
      return next;
    },
  };

  const documents: DocumentRepository = {
    async insert(document) {
      insertNew(views.documents, 'document', document);
    },
    async get(accountId, id) {
      const row = owned(views.documents, accountId, id);
      return row && copy(row);
    },
    async getByFileName(accountId, fileName) {
      const [row] = rowsOf(views.documents, views.documents.keysBy('byFileName', key(accountId, fileName))).sort(oldestFirst);
      return row && copy(row);
    },
    async listByPatient(accountId, patientId) {
      return rowsOf(views.documents, views.documents.keysBy('byPatient', key(accountId, patientId))).sort(oldestFirst).map(copy);
    },
    async update(document) {
      return replaceOwned(views.documents, document);
    },
    async insertMany(list) {
      const seen = new Set<string>();
      for (const document of list) {
        if (seen.has(document.id) || views.documents.get(document.id) !== undefined) throw alreadyExists('document', document.id);
        seen.add(document.id);
      }
      for (const document of list) views.documents.set(document.id, copy(document));
    },
    async updateMany(list) {
      for (const document of list) replaceOwned(views.documents, document);
    },
  };

  const documentQueries: DocumentQueryRepository = {
    async insert(query) {
      insertNew(views.documentQueries, 'document query', query);
    },
    async get(accountId, id) {
      const row = owned(views.documentQueries, accountId, id);
      return row && copy(row);
    },
    async latestForPatient(accountId, patientId) {
      const [row] = rowsOf(views.documentQueries, views.documentQueries.keysBy('byPatient', key(accountId, patientId))).sort(newestFirst);
      return row && copy(row);
    },
    async update(query) {
      return replaceOwned(views.documentQueries, query);
    },
    async progressOfBulkRequest(accountId, bulkRequestId) {
      const progress: BulkQueriesProgress = { total: 0, processing: 0, completed: 0, failed: 0 };
      for (const row of rowsOf(views.documentQueries, views.documentQueries.keysBy('byBulkRequest', key(accountId, bulkRequestId)))) {
        progress.total += 1;
        progress[documentQueryState(row)] += 1;
      }
      return progress;
    },
  };

  const fhirKey = (r: { accountId: string; patientId: string; resourceType: string; id: string }) =>
    key(r.accountId, r.patientId, r.resourceType, r.id);

  /** The patient's stored resources, by type then id (the stored rows themselves: copy before handing out). */
  const fhirRowsOf = (accountId: string, patientId: string) =>
    rowsOf(views.fhirResources, views.fhirResources.keysBy('byPatient', key(accountId, patientId))).sort((a, b) =>
      a.resourceType < b.resourceType ? -1 : a.resourceType > b.resourceType ? 1 : byId(a, b),
    );

  const fhirResources: FhirResourceRepository = {
    async putMany(resources) {
      for (const resource of resources) views.fhirResources.set(fhirKey(resource), copy(resource));
    },
    async listByPatient(accountId, patientId, resourceTypes) {
      const wanted = resourceTypes && new Set(resourceTypes);
      return fhirRowsOf(accountId, patientId)
        .filter((row) => wanted === undefined || wanted.has(row.resourceType))
        .map(copy);
    },
    // The text is a copy already: the rest of the record is copied, the resource only written out or parsed.
    async listByPatientJson(accountId, patientId) {
      return fhirRowsOf(accountId, patientId).map(({ resource, ...rest }) => ({ ...copy(rest), resourceJson: JSON.stringify(resource) }));
    },
    async putManyJson(resources) {
      const records = resources.map(({ resourceJson, ...rest }) => ({ ...copy(rest), resource: JSON.parse(resourceJson) as Record<string, unknown> }));
      for (const record of records) views.fhirResources.set(fhirKey(record), record);
    },
    async removeMany(accountId, patientId, keys) {
      for (const k of keys) views.fhirResources.delete(fhirKey({ accountId, patientId, ...k }));
    },
  };

  const consolidatedQueries: ConsolidatedQueryRepository = {
    async insert(query) {
      insertNew(views.consolidatedQueries, 'consolidated query', query);
    },
    async get(accountId, id) {
      const row = owned(views.consolidatedQueries, accountId, id);
      return row && copy(row);
    },
    async listProcessing(accountId, patientId) {
      return rowsOf(views.consolidatedQueries, views.consolidatedQueries.keysBy('byPatient', key(accountId, patientId)))
        .filter((row) => row.status === 'processing')
        .sort(oldestFirst)
        .map(copy);
    },
    async listByPatient(accountId, patientId) {
      return rowsOf(views.consolidatedQueries, views.consolidatedQueries.keysBy('byPatient', key(accountId, patientId))).sort(newestFirst).map(copy);
    },
    async update(query) {
      return replaceOwned(views.consolidatedQueries, query);
    },
  };

  const networkQueries: NetworkQueryRepository = {
    async insert(query) {
      insertNew(views.networkQueries, 'network query', query);
    },
    async get(accountId, id) {
      const row = owned(views.networkQueries, accountId, id);
      return row && copy(row);
    },
    // Transactions run one at a time here: a read inside one is already held until it ends.
    async getForUpdate(accountId, id) {
      const row = owned(views.networkQueries, accountId, id);
      return row && copy(row);
    },
    async listProcessing(accountId, patientId) {
      return rowsOf(views.networkQueries, views.networkQueries.keysBy('byPatient', key(accountId, patientId)))
        .filter((row) => networkQueryStatus(row) === 'processing')
        .sort(oldestFirst)
        .map(copy);
    },
    async update(query) {
      return replaceOwned(views.networkQueries, query);
    },
    async pruneFinished(before, limit) {
      const expired = rowsOf(views.networkQueries, views.networkQueries.keysBy('byState', 'finished'))
        .filter((row) => row.updatedAt < before)
        .sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : byId(a, b)))
        .slice(0, limit);
      for (const row of expired) views.networkQueries.delete(row.id);
      return expired.length;
    },
  };

  /**
   * What `claim` takes (see its contract), the stored rows themselves, oldest first, at
   * most `limit`. It reads the pending messages of the endpoints in scope and of the streams they are in,
   * nothing else: endpoints left out (`except`) cost nothing, as the busy ones of a poll must not.
   * `endpointId` counts with `accountId` only. Streams with a live claim are left out.
   */
  const sendableNow = (
    now: string,
    limit: number,
    scope: { accountId?: string | undefined; endpointId?: string | null | undefined; except?: ReadonlySet<string>; perEndpoint?: number | undefined },
  ): OutboxMessage[] => {
    let endpoints: string[];
    if (scope.accountId === undefined) endpoints = views.outbox.indexKeys('pendingByEndpoint');
    else if (scope.endpointId !== undefined) endpoints = [endpointKey(scope.accountId, scope.endpointId)];
    else {
      const prefix = key(scope.accountId, '');
      endpoints = views.outbox.indexKeys('pendingByEndpoint').filter((endpoint) => endpoint.startsWith(prefix));
    }
    /** Per stream: its oldest waiting (not yet due) message, behind which nothing may go, and whether it is claimed. */
    const streams = new Map<string, { waiting: OutboxMessage | undefined; claimed: boolean }>();
    const streamOf = (row: OutboxMessage) => {
      const stream = key(row.accountId, row.streamKey);
      let state = streams.get(stream);
      if (state) return state;
      state = { waiting: undefined, claimed: false };
      for (const other of rowsOf(views.outbox, views.outbox.keysBy('pendingByStream', stream))) {
        if (other.nextAttemptAt > now && (!state.waiting || oldestFirst(other, state.waiting) < 0)) state.waiting = other;
        if (!state.claimed) state.claimed = (leases.get(other.id)?.until ?? '') > now;
      }
      streams.set(stream, state);
      return state;
    };
    const chosen: OutboxMessage[] = [];
    for (const endpoint of endpoints) {
      if (scope.except?.has(endpoint)) continue;
      const sendable = rowsOf(views.outbox, views.outbox.keysBy('pendingByEndpoint', endpoint)).filter((row) => {
        if (row.nextAttemptAt > now) return false;
        const stream = streamOf(row);
        return !stream.claimed && (!stream.waiting || oldestFirst(row, stream.waiting) < 0);
      });
      for (const row of oldest(sendable, Math.min(limit, scope.perEndpoint ?? limit))) chosen.push(row);
    }
    return oldest(chosen, limit);
  };

  const outbox: OutboxRepository = {
    async add(message) {
      insertNew(views.outbox, 'outbox message', message);
    },
    async get(accountId, id) {
      const row = owned(views.outbox, accountId, id);
      return row && copy(row);
    },
    async claim(now, limit, lease) {
      // No await from here to the leases being set: concurrent claims must not interleave.
      const available = sendableNow(now, limit, {
        accountId: lease.accountId,
        endpointId: lease.endpointId,
        except: new Set((lease.exceptEndpoints ?? []).map((e) => endpointKey(e.accountId, e.endpointId))),
        perEndpoint: lease.perEndpoint,
      });
      const until = new Date(Date.parse(now) + lease.leaseMs).toISOString();
      for (const row of available) leases.set(row.id, { owner: lease.owner, until });
      return available.map(copy);
    },
    async releaseClaims(owner, ids) {
      if (ids === undefined) {
        for (const [id, lease] of leases) if (lease.owner === owner) leases.delete(id);
        return;
      }
      for (const id of ids) if (leases.get(id)?.owner === owner) leases.delete(id);
    },
    async update(message) {
      if (replaceOwned(views.outbox, message)) leases.delete(message.id);
    },
    async updateMany(messages) {
      for (const message of messages) {
        if (replaceOwned(views.outbox, message)) leases.delete(message.id);
      }
    },
    async pruneDelivered(before, limit) {
      const expired = rowsOf(views.outbox, views.outbox.keysBy('byStatus', 'delivered'))
        .filter((row) => row.deliveredAt !== undefined && row.deliveredAt !== null && row.deliveredAt < before)
        .sort((a, b) => (a.deliveredAt! < b.deliveredAt! ? -1 : a.deliveredAt! > b.deliveredAt! ? 1 : byId(a, b)))
        .slice(0, limit);
      for (const row of expired) views.outbox.delete(row.id);
      return expired.length;
    },
    async list(accountId, status, limit) {
      return rowsOf(views.outbox, views.outbox.keysBy('byAccount', accountId))
        .filter((row) => status === undefined || row.status === status)
        .sort(oldestFirst)
        .slice(0, limit)
        .map(copy);
    },
    async counts(accountId) {
      const counts: Record<OutboxMessage['status'], number> = { pending: 0, delivered: 0, parked: 0 };
      for (const row of rowsOf(views.outbox, views.outbox.keysBy('byAccount', accountId))) counts[row.status] += 1;
      return counts;
    },
    async countsByEndpoint(accountId) {
      const counts = new Map<string | null, EndpointMessageCounts>();
      for (const row of rowsOf(views.outbox, views.outbox.keysBy('byAccount', accountId))) {
        const endpointId = row.endpointId ?? null;
        let entry = counts.get(endpointId);
        if (!entry) counts.set(endpointId, (entry = { endpointId, pending: 0, failing: 0, delivered: 0, parked: 0 }));
        entry[row.status] += 1;
        if (row.status === 'pending' && row.attempts > 0) entry.failing += 1;
      }
      return [...counts.values()];
    },
    async listForEndpoint(accountId, endpointId, filter, limit) {
      return rowsOf(views.outbox, views.outbox.keysBy('byAccount', accountId))
        .filter(
          (row) =>
            (row.endpointId ?? null) === endpointId &&
            (filter.status === undefined || row.status === filter.status) &&
            (filter.since === undefined || row.createdAt >= filter.since) &&
            (filter.until === undefined || row.createdAt < filter.until),
        )
        .sort(oldestFirst)
        .slice(0, limit)
        .map(copy);
    },
    async removeEndpointDeliveries(accountId, endpointId) {
      const rows = rowsOf(views.outbox, views.outbox.keysBy('byAccount', accountId)).filter((row) => row.endpointId === endpointId);
      for (const row of rows) {
        views.outbox.delete(row.id);
        leases.delete(row.id);
      }
      return rows.length;
    },
  };

  const newestAttemptFirst = (a: WebhookAttempt, b: WebhookAttempt): number =>
    a.attemptedAt < b.attemptedAt ? 1 : a.attemptedAt > b.attemptedAt ? -1 : -byId(a, b);
  const webhookAttempts: WebhookAttemptRepository = {
    async addMany(attempts) {
      for (const attempt of attempts) if (views.webhookAttempts.get(attempt.id) !== undefined) throw alreadyExists('webhook attempt', attempt.id);
      for (const attempt of attempts) views.webhookAttempts.set(attempt.id, copy(attempt));
    },
    async list(accountId, filter, limit, after) {
      return rowsOf(views.webhookAttempts, views.webhookAttempts.keysBy('byAccount', accountId))
        .filter(
          (row) =>
            (filter.endpointId === undefined || (row.endpointId ?? null) === filter.endpointId) &&
            (filter.type === undefined || row.type === filter.type) &&
            (filter.patientId === undefined || row.patientId === filter.patientId) &&
            (filter.outcome === undefined || row.outcome === filter.outcome) &&
            (filter.since === undefined || row.attemptedAt >= filter.since) &&
            (filter.until === undefined || row.attemptedAt < filter.until) &&
            (after === undefined || row.attemptedAt < after.attemptedAt || (row.attemptedAt === after.attemptedAt && row.id < after.id)),
        )
        .sort(newestAttemptFirst)
        .slice(0, limit)
        .map(copy);
    },
    async prune(before, limit) {
      const expired = rowsOf(views.webhookAttempts, views.webhookAttempts.keysBy('all', ''))
        .filter((row) => row.attemptedAt < before)
        .sort((a, b) => -newestAttemptFirst(a, b))
        .slice(0, limit);
      for (const row of expired) views.webhookAttempts.delete(row.id);
      return expired.length;
    },
  };

  return {
    accounts,
    webhookSettings,
    webhookEndpoints,
    organizations,
    facilities,
    cohorts,
    patients,
    bulkRequests,
    bulkRows,
    documents,
    documentQueries,
    fhirResources,
    consolidatedQueries,
    networkQueries,
    outbox,
    webhookAttempts,
  };
}

/** What a storage and the transactions opened from it share. */
interface Engine {
  tables: TableSet;
  /** One transaction at a time, so two never interleave their reads and writes. */
  transactions: Mutex;
  outboxLeases: OutboxLeases;
}

/**
 * The storage port on in-process Maps: the sandbox host's storage and the reference the contract suite is
 * written against. Every record goes in and out as a deep copy.
 *
 * `transaction(work)` runs `work` against a copy-on-write overlay of every table: nothing it writes is
 * visible outside until it returns, and a throw drops the overlay, so rollback costs nothing. Transactions
 * are serialised; writes outside a transaction are not blocked (as on a database with row locks), except
 * patient writes, which wait as those of a database wait for the account lock (see `patientsOutsideTransactions`).
 */
export class MemoryStorage implements StoragePort {
  readonly accounts!: AccountRepository;
  readonly webhookSettings!: WebhookSettingsRepository;
  readonly webhookEndpoints!: WebhookEndpointRepository;
  readonly organizations!: OrganizationRepository;
  readonly facilities!: FacilityRepository;
  readonly cohorts!: CohortRepository;
  readonly patients!: PatientRepository;
  readonly bulkRequests!: BulkRequestRepository;
  readonly bulkRows!: BulkRowRepository;
  readonly documents!: DocumentRepository;
  readonly documentQueries!: DocumentQueryRepository;
  readonly fhirResources!: FhirResourceRepository;
  readonly consolidatedQueries!: ConsolidatedQueryRepository;
  readonly networkQueries!: NetworkQueryRepository;
  readonly outbox!: OutboxRepository;
  readonly webhookAttempts!: WebhookAttemptRepository;

  private readonly engine: Engine;
  /** Set on the storage handed to a transaction's work: nested calls join it. */
  private readonly inTransaction: boolean;

  /** Call with no argument; the argument is how a transaction builds its own view of the same engine. */
  constructor(internal?: { engine: Engine; views: ViewSet }) {
    this.engine = internal?.engine ?? { tables: createTables(), transactions: new Mutex(), outboxLeases: new Map() };
    this.inTransaction = internal !== undefined;
    Object.assign(this, repositories(internal?.views ?? this.engine.tables, this.engine.outboxLeases, new Map()));
    if (!this.inTransaction) Object.assign(this, { patients: this.patientsOutsideTransactions(this.patients) });
  }

  /**
   * Patient writes outside a transaction run as transactions of their own, as a database runs a lone
   * statement: they wait for the transaction running (an import's batch) instead of writing under it, where
   * its commit would put back what it read before them, and each advances the account's revision once.
   */
  private patientsOutsideTransactions(patients: PatientRepository): PatientRepository {
    return {
      ...patients,
      insert: (patient) => this.transaction((tx) => tx.patients.insert(patient)),
      insertMany: (batch) => this.transaction((tx) => tx.patients.insertMany(batch)),
      update: (patient) => this.transaction((tx) => tx.patients.update(patient)),
      updateMany: (batch) => this.transaction((tx) => tx.patients.updateMany(batch)),
      remove: (accountId, id) => this.transaction((tx) => tx.patients.remove(accountId, id)),
      lockAccount: async () => {
        throw new Error('lockAccount holds the account for a transaction: call it on the storage the transaction hands its work');
      },
    };
  }

  async transaction<T>(work: (tx: StoragePort) => Promise<T>): Promise<T> {
    if (this.inTransaction) return work(this);
    return this.engine.transactions.run(async () => {
      const overlays = createOverlays(this.engine.tables);
      const result = await work(new MemoryStorage({ engine: this.engine, views: overlays }));
      const conflicts = TABLE_NAMES.flatMap((name) => overlays[name].insertConflicts());
      if (conflicts.length > 0) {
        throw new CoreError('CONFLICT', 'records created in the transaction were created outside it meanwhile', {
          details: { count: conflicts.length },
        });
      }
      for (const name of TABLE_NAMES) overlays[name].commit();
      return result;
    });
  }

  /**
   * What the outbox's claims rest on: endpoints and streams with pending messages (the indexes a claim
   * reads) and claims not yet ended. Each follows the pending messages, emptied as they are delivered,
   * parked or deleted; for the test that holds them to it.
   */
  outboxFootprint(): { endpoints: number; streams: number; claims: number } {
    const { outbox } = this.engine.tables;
    return { endpoints: outbox.indexKeys('pendingByEndpoint').length, streams: outbox.indexKeys('pendingByStream').length, claims: this.engine.outboxLeases.size };
  }

  async close(): Promise<void> {}
}
