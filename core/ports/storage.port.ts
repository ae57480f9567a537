import type {
  Account,
  BulkRequest,
  BulkRowOutcome,
  BulkStatus,
  Cohort,
  ConsolidatedQuery,
  BulkQueriesProgress,
  DocumentQuery,
  DocumentRecord,
  Facility,
  FhirResourceJson,
  FhirResourceRecord,
  NetworkQuery,
  Organization,
  OutboxMessage,
  Patient,
  EndpointMessageCounts,
  WebhookAttempt,
  WebhookAttemptFilter,
  WebhookEndpoint,
  WebhookSettings,
} from '../domain/types.js';

/**
 * Persistence of every record of the service. Every method that reads or writes tenant data takes the
 * accountId and never returns another account's record: a record of another account is "missing".
 *
 * Common contract, unless a method says otherwise:
 * - `get*` returns `undefined` when the record is missing (never throws for that).
 * - `insert*` of an id that already exists throws (adapters may surface their own error); callers generate ids.
 * - `update*` replaces the whole record and returns `undefined` when it is missing (patients: see
 *   PatientRepository, whose updates are compare-and-set on a version).
 * - Records come back as copies: mutating a returned object never changes what is stored.
 * - List order is stated per method; ties break by id ascending.
 */
export interface StoragePort {
  accounts: AccountRepository;
  webhookSettings: WebhookSettingsRepository;
  webhookEndpoints: WebhookEndpointRepository;
  organizations: OrganizationRepository;
  facilities: FacilityRepository;
  cohorts: CohortRepository;
  patients: PatientRepository;
  bulkRequests: BulkRequestRepository;
  bulkRows: BulkRowRepository;
  documents: DocumentRepository;
  documentQueries: DocumentQueryRepository;
  fhirResources: FhirResourceRepository;
  consolidatedQueries: ConsolidatedQueryRepository;
  networkQueries: NetworkQueryRepository;
  outbox: OutboxRepository;
  webhookAttempts: WebhookAttemptRepository;

  /**
   * Runs `work` atomically: every write made through the `tx` storage handed to it commits together or not
   * at all. Writes through `this` (not `tx`) inside `work` are not part of the transaction. Nested calls on
   * `tx` join the outer transaction. Throws what `work` throws, after rolling back.
   * Calls on `tx` may overlap (independent writes started together, e.g. through `settleAll`): they belong
   * to the same transaction, in no promised order. `work` must not settle before every call it started on
   * `tx` has: a call still running at the commit or rollback is not part of the transaction.
   */
  transaction<T>(work: (tx: StoragePort) => Promise<T>): Promise<T>;

  /** Releases connections. Idempotent. */
  close(): Promise<void>;
}

export interface AccountRepository {
  insert(account: Account): Promise<void>;
  get(id: string): Promise<Account | undefined>;
  /** Looks an account up by the SHA-256 hex of its API key; `undefined` when no account has it. */
  getByApiKeyHash(apiKeyHash: string): Promise<Account | undefined>;
  /** Every account, oldest first. For operators (CLI), never exposed through the API. */
  list(): Promise<Account[]>;
  /**
   * Gives the account a new API key (its hash and visible prefix); the old key's hash no longer finds it.
   * Returns false when there is no such account. A hash another account has is a CONFLICT.
   */
  replaceApiKey(id: string, apiKeyHash: string, apiKeyPrefix: string): Promise<boolean>;
}

/** What turns an endpoint off (`disable`): why, when, and the condition it is turned off on. */
export interface EndpointDisabling {
  /** The endpoint's status detail from now on: why it is off. */
  statusDetail: string;
  updatedAt: string;
  /** Only when its failure clock started at this instant or earlier (it has been failing at least so long). */
  failingSinceAtMost?: string;
}

/*
 * The failure clock and status of an endpoint (the default one in WebhookSettingsRepository, the extra ones
 * in WebhookEndpointRepository) are written by the delivery passes of every instance at once, and by the
 * account: so each is its own atomic write that leaves the other fields as stored, never a read-modify-write.
 */

export interface WebhookSettingsRepository {
  /** `undefined` when the account never saved settings. */
  get(accountId: string): Promise<WebhookSettings | undefined>;
  /**
   * Inserts or replaces the account's settings. `failingSince` is written only when the row is new: the
   * failure clock has its own method (`setFailingSince`).
   */
  put(settings: WebhookSettings): Promise<void>;
  /**
   * The default endpoint's failure clock, atomically: with an instant, sets `failingSince` to it unless it
   * is set already (the earlier failure is kept); with null, clears it. Returns `failingSince` as stored
   * after (null when not failing), or `undefined` when the account has no settings.
   */
  setFailingSince(accountId: string, at: string | null): Promise<string | null | undefined>;
  /**
   * Writes `webhookStatusDetail` and `updatedAt` of an enabled default endpoint, the rest as stored. False,
   * and nothing written, when the account has no settings or its endpoint is off: the delivery pass's notes
   * never overwrite why an endpoint was turned off.
   */
  setStatusDetail(accountId: string, statusDetail: string | null, updatedAt: string): Promise<boolean>;
  /**
   * Turns the default endpoint off (`webhookEnabled` false) with `change.statusDetail`, atomically, the rest
   * as stored: only when it is on and, with `failingSinceAtMost`, its failure clock started then or earlier.
   * Returns the settings as stored after when this call turned it off; `undefined` otherwise (no settings,
   * already off, not failing that long). Of several callers at once, exactly one gets the settings back.
   */
  disable(accountId: string, change: EndpointDisabling): Promise<WebhookSettings | undefined>;
}

/** The account's extra webhook endpoints (the default one is in WebhookSettings). */
export interface WebhookEndpointRepository {
  /** Adds an endpoint; an id that exists already throws (CONFLICT on the memory adapter). */
  insert(endpoint: WebhookEndpoint): Promise<void>;
  /** `undefined` when missing or another account's. */
  get(accountId: string, id: string): Promise<WebhookEndpoint | undefined>;
  /**
   * The account's endpoints, oldest createdAt first (ties by id). Unpaged: the use cases cap the endpoints
   * of an account (`MAX_WEBHOOK_ENDPOINTS`), so the list is bounded.
   */
  list(accountId: string): Promise<WebhookEndpoint[]>;
  /** How many endpoints the account has. */
  count(accountId: string): Promise<number>;
  /**
   * Replaces the endpoint but its `failingSince` (the failure clock has its own method); returns the stored
   * copy, or `undefined` when missing or another account's.
   */
  update(endpoint: WebhookEndpoint): Promise<WebhookEndpoint | undefined>;
  /** Deletes the endpoint; false when missing or another account's. Idempotent. */
  remove(accountId: string, id: string): Promise<boolean>;
  /**
   * The endpoint's failure clock, atomically: with an instant, sets `failingSince` to it unless it is set
   * already (the earlier failure is kept); with null, clears it. Returns `failingSince` as stored after
   * (null when not failing), or `undefined` when the endpoint is missing or another account's.
   */
  setFailingSince(accountId: string, id: string, at: string | null): Promise<string | null | undefined>;
  /**
   * Writes `statusDetail` and `updatedAt` of an enabled endpoint, the rest as stored. False, and nothing
   * written, when it is missing, another account's or off: the delivery pass's notes never overwrite why an
   * endpoint was turned off.
   */
  setStatusDetail(accountId: string, id: string, statusDetail: string | null, updatedAt: string): Promise<boolean>;
  /**
   * Turns the endpoint off with `change.statusDetail`, atomically, the rest as stored: only when it is on
   * and, with `failingSinceAtMost`, its failure clock started then or earlier. Returns the endpoint as stored
   * after when this call turned it off; `undefined` otherwise (missing, another account's, already off, not
   * failing that long). Of several callers at once, exactly one gets the endpoint back.
   */
  disable(accountId: string, id: string, change: EndpointDisabling): Promise<WebhookEndpoint | undefined>;
}

export interface OrganizationRepository {
  insert(org: Organization): Promise<void>;
  /** The account's one organization, or `undefined`. */
  getByAccount(accountId: string): Promise<Organization | undefined>;
  update(org: Organization): Promise<Organization | undefined>;
}

export interface FacilityRepository {
  insert(facility: Facility): Promise<void>;
  get(accountId: string, id: string): Promise<Facility | undefined>;
  /** Oldest first. */
  list(accountId: string): Promise<Facility[]>;
  update(facility: Facility): Promise<Facility | undefined>;
  /** `true` when something was removed; removing a missing facility is `false`, not an error. */
  remove(accountId: string, id: string): Promise<boolean>;
}

export interface CohortRepository {
  insert(cohort: Cohort): Promise<void>;
  get(accountId: string, id: string): Promise<Cohort | undefined>;
  /** Of the given ids, those that exist in the account (any order, no duplicates). */
  existingIds(accountId: string, ids: readonly string[]): Promise<string[]>;
  /** Oldest first. */
  list(accountId: string): Promise<Cohort[]>;
  update(cohort: Cohort): Promise<Cohort | undefined>;
  remove(accountId: string, id: string): Promise<boolean>;
}

export interface PatientListOptions {
  facilityId?: string;
  cohortId?: string;
  /** Opaque cursor from a previous page (the last id seen). */
  after?: string;
  limit?: number;
}

/** What `PatientRepository.search` looks for: a patient must meet every criterion given. */
export interface PatientSearch {
  /** Folded name words (`nameSearchTerms`): each must begin one of the patient's names (`matchesPatientSearch`). */
  nameTerms?: readonly string[];
  /** Date of birth, `YYYY-MM-DD`, equal. */
  dob?: string;
  /** Equal to the patient's `externalId`. */
  externalId?: string;
  /** One of the patient's facilities. */
  facilityId?: string;
}

/** Where a search resumes and how much one call may do. */
export interface PatientSearchWindow {
  /** The `next` of the previous call: examine patients after this id only. */
  after?: string;
  /** At most this many patients are returned. */
  limit: number;
  /** At most this many patients are examined, matching or not: what bounds the cost of one call. */
  scan: number;
}

/** One call's findings: the patients found, by id ascending, and where to resume when the scan stopped early. */
export interface PatientSearchPage {
  patients: Patient[];
  /** The id of the last patient examined, when patients after it were left unexamined; absent when none were. */
  next?: string;
}

/**
 * Patients, with two guarantees for writers that run at once (requests, imports, several instances on one
 * database), so that no accepted write is lost and no person is created twice:
 *
 * - Versions. Every patient has a `version` (1 when inserted). `update` and `updateMany` are compare-and-set:
 *   they state the version the caller read, and a write made from a stale read is refused (`'stale'`) rather
 *   than undoing the write that came first. The caller reads again and redoes its change.
 * - The account lock. Every write of patients (insert, update, remove) holds the account's patients until
 *   its transaction ends (see `lockAccount`): writes of one account's patients happen one after the other,
 *   and each committed transaction that wrote them advances the account's `revision` by one. A reader that
 *   noted the revision before looking patients up can tell, once it holds the lock, whether anyone wrote any
 *   of them since: creating a patient after matching is then safe.
 */
export interface PatientRepository {
  /** Stores a new patient as given (callers create it at version 1). Takes the account lock. */
  insert(patient: Patient): Promise<void>;
  /** Inserts all, or none when one fails. Order of the input is kept for ids. Takes the account lock of each account. */
  insertMany(patients: readonly Patient[]): Promise<void>;
  get(accountId: string, id: string): Promise<Patient | undefined>;
  /** Patients of the account whose `externalId` equals the given one, oldest first. */
  findByExternalId(accountId: string, externalId: string): Promise<Patient[]>;
  /**
   * Every patient of the account holding at least one of the given blocking keys, each once, oldest first.
   * Cost grows with the number of keys and of candidates found, not with the size of the account.
   */
  findByMatchKeys(accountId: string, matchKeys: readonly string[]): Promise<Patient[]>;
  /** Ordered by id ascending (ids are time-ordered), paged with `after`. */
  list(accountId: string, options?: PatientListOptions): Promise<Patient[]>;
  /**
   * Patients of the account meeting `search` (as `matchesPatientSearch` decides, the one rule every adapter
   * applies), found by a bounded scan in id order after `window.after`: at most `window.scan` patients are
   * examined and at most `window.limit` returned, so one call costs the same whatever the account's size.
   * With `externalId`, only the patients holding it are examined (an index look-up). A page may hold fewer
   * than `limit` patients, even none, and still have a `next`; following `next` until it is absent finds
   * every match exactly once, by id ascending.
   */
  search(accountId: string, search: PatientSearch, window: PatientSearchWindow): Promise<PatientSearchPage>;
  /**
   * Compare-and-set on the version: replaces the whole patient (blocking keys included) when the stored one
   * still has `patient.version`, the version the caller read; what is stored then has `version + 1` and is
   * returned. Returns `'stale'` when the stored version differs (another write came first; nothing is
   * written), `undefined` when the patient is missing or another account's. So of two writers that read the
   * same version, the second is refused, and its retry (read again, change again) keeps both changes.
   * Takes the account lock.
   */
  update(patient: Patient): Promise<Patient | 'stale' | undefined>;
  /**
   * `update` of many patients at once, all or none: returns the ids of those whose stored version is not the
   * given one (then nothing at all is written), or `[]` when every one was replaced (each stored at
   * `version + 1`). A patient missing or another account's throws PATIENT_NOT_FOUND, writing nothing. A
   * patient given twice counts once, as its last version. Takes the account lock of each account.
   */
  updateMany(patients: readonly Patient[]): Promise<string[]>;
  /** `true` when something was removed; missing or another account's is `false`. Takes the account lock. */
  remove(accountId: string, id: string): Promise<boolean>;
  /**
   * The account's patient revision: how many transactions that held the account lock (every write of the
   * account's patients does) have committed; 0 for an account never written. Waits for no lock. Read it
   * before looking patients up; `lockAccount` later tells whether it moved, i.e. whether anyone wrote the
   * account's patients since.
   */
  revision(accountId: string): Promise<number>;
  /**
   * Takes the account lock for the rest of the transaction; call it on the storage a transaction hands its
   * work. Waits while another transaction holds it (in this process or another sharing the database), then
   * makes every other write of the account's patients wait until this transaction ends. Returns the
   * revision as last committed before it (so reads made after it see every write that revision counts);
   * the revision is one more once this transaction commits, unchanged if it rolls back. Called again in the
   * same transaction (or after one of its writes took the lock), returns the same number and changes
   * nothing. Throws outside a transaction, where there is nothing to hold it for.
   */
  lockAccount(accountId: string): Promise<number>;
}

export interface BulkRequestRepository {
  insert(request: BulkRequest): Promise<void>;
  get(accountId: string, id: string): Promise<BulkRequest | undefined>;
  /** Looks a request up by id alone: for background jobs that carry only the id. */
  getById(id: string): Promise<BulkRequest | undefined>;
  /**
   * Compare-and-set on the status: replaces the record only if the stored status is `expected`.
   * Returns the stored record after the call, or `undefined` when the status did not match or it is missing.
   * This is how concurrent workers and requests agree on one transition.
   */
  updateIfStatus(request: BulkRequest, expected: BulkStatus): Promise<BulkRequest | undefined>;
  /** Requests of any account in `status`, oldest first, at most `limit`. For schedulers and resuming. */
  listByStatus(status: BulkStatus, limit: number): Promise<BulkRequest[]>;
  /** Requests of the account, newest first. */
  list(accountId: string, limit?: number): Promise<BulkRequest[]>;
}

export interface BulkRowRepository {
  /**
   * Stores outcomes; an outcome for a (requestId, rowIndex) already stored is replaced, so replaying a
   * batch after a crash is harmless.
   */
  putMany(outcomes: readonly BulkRowOutcome[]): Promise<void>;
  /** Outcomes with rowIndex in [from, to), ordered by rowIndex. */
  range(requestId: string, from: number, to: number): Promise<BulkRowOutcome[]>;
  /** Highest stored rowIndex + 1, or 0 when none: where a resumed import starts. */
  nextRowIndex(requestId: string): Promise<number>;
}

export interface DocumentRepository {
  insert(document: DocumentRecord): Promise<void>;
  get(accountId: string, id: string): Promise<DocumentRecord | undefined>;
  /** Looks a document up by its blob file name within the account. */
  getByFileName(accountId: string, fileName: string): Promise<DocumentRecord | undefined>;
  /** The patient's documents, oldest first. */
  listByPatient(accountId: string, patientId: string): Promise<DocumentRecord[]>;
  update(document: DocumentRecord): Promise<DocumentRecord | undefined>;
  /**
   * `insert` for several documents in one write, all or none (in the caller's transaction when it has one):
   * an id that exists, or that the list names twice, throws CONFLICT and none is inserted.
   */
  insertMany(documents: readonly DocumentRecord[]): Promise<void>;
  /**
   * `update` for several documents in one write: each stored document of the same account and id is
   * replaced, those missing are skipped; a document the list names twice is left as its last entry.
   */
  updateMany(documents: readonly DocumentRecord[]): Promise<void>;
}

export interface DocumentQueryRepository {
  insert(query: DocumentQuery): Promise<void>;
  get(accountId: string, id: string): Promise<DocumentQuery | undefined>;
  /** The newest query of the patient, or `undefined`. */
  latestForPatient(accountId: string, patientId: string): Promise<DocumentQuery | undefined>;
  update(query: DocumentQuery): Promise<DocumentQuery | undefined>;
  /**
   * Counts the account's queries started by the bulk import `bulkRequestId`, by `documentQueryState`.
   * All zero for an unknown request or one that started none. Reads an index, never the queries themselves.
   */
  progressOfBulkRequest(accountId: string, bulkRequestId: string): Promise<BulkQueriesProgress>;
}

export interface FhirResourceRepository {
  /** Inserts or replaces by (accountId, patientId, resourceType, id). */
  putMany(resources: readonly FhirResourceRecord[]): Promise<void>;
  /** The patient's resources ordered by resourceType then id; optionally only the given types. */
  listByPatient(accountId: string, patientId: string, resourceTypes?: readonly string[]): Promise<FhirResourceRecord[]>;
  /**
   * `listByPatient` (every type, same order, [] for a patient with none) with each resource as the JSON
   * text stored, not parsed: for a fold made on another thread, which parses it there.
   */
  listByPatientJson(accountId: string, patientId: string): Promise<FhirResourceJson[]>;
  /**
   * `putMany` of records whose resource is JSON text of an object (`listByPatientJson` gives it back as
   * given; `listByPatient` gives the object). Inserts or replaces by key; a key given twice is written as
   * its last version.
   */
  putManyJson(resources: readonly FhirResourceJson[]): Promise<void>;
  /** Removes the patient's resources of the given (resourceType, id) pairs; missing ones are ignored. */
  removeMany(accountId: string, patientId: string, keys: readonly { resourceType: string; id: string }[]): Promise<void>;
}

export interface ConsolidatedQueryRepository {
  insert(query: ConsolidatedQuery): Promise<void>;
  get(accountId: string, id: string): Promise<ConsolidatedQuery | undefined>;
  /** The patient's queries still `processing`, oldest first. */
  listProcessing(accountId: string, patientId: string): Promise<ConsolidatedQuery[]>;
  /** The patient's queries, newest first. */
  listByPatient(accountId: string, patientId: string): Promise<ConsolidatedQuery[]>;
  update(query: ConsolidatedQuery): Promise<ConsolidatedQuery | undefined>;
}

export interface NetworkQueryRepository {
  insert(query: NetworkQuery): Promise<void>;
  get(accountId: string, id: string): Promise<NetworkQuery | undefined>;
  /**
   * `get` that also holds the query until the transaction ends: called inside a transaction before an
   * update of it, so two sources ending at once (two workers) update it one after the other and neither
   * change is lost. Undefined when missing or another account's. Outside a transaction, a plain `get`.
   */
  getForUpdate(accountId: string, id: string): Promise<NetworkQuery | undefined>;
  /** The patient's queries with a source still `processing`, oldest first. */
  listProcessing(accountId: string, patientId: string): Promise<NetworkQuery[]>;
  update(query: NetworkQuery): Promise<NetworkQuery | undefined>;
  /**
   * Deletes up to `limit` queries of any account whose every source has ended and whose last change
   * (updatedAt) is before `before`, oldest first; queries still running are never deleted. Returns how many
   * it deleted: fewer than `limit` means nothing more is due.
   */
  pruneFinished(before: string, limit: number): Promise<number>;
}

/** Who claims outbox messages, and for how long. */
export interface OutboxLease {
  /** The claiming worker, unique per process (several instances may share a database). */
  owner: string;
  /** How long the claim lives; longer than sending what it takes can last. */
  leaseMs: number;
  /** Only this account's messages. */
  accountId?: string;
  /**
   * With `accountId`: only the messages of one endpoint of that account, an extra endpoint's id, or null
   * for its default endpoint. Absent: every endpoint's.
   */
  endpointId?: string | null;
  /**
   * At most this many messages of any one endpoint (an account's default endpoint, or an extra endpoint),
   * the oldest of each, so that one endpoint's backlog cannot fill a claim. Absent: no such cap.
   */
  perEndpoint?: number;
  /**
   * Leaves these endpoints' messages out (`endpointId` null: the account's default endpoint): the claiming
   * worker is sending to them already and claims more of them on its own.
   */
  exceptEndpoints?: readonly { accountId: string; endpointId: string | null }[];
}

export interface OutboxRepository {
  /** Adds a message (status `pending`). Call inside the transaction of the change that caused it. */
  add(message: OutboxMessage): Promise<void>;
  get(accountId: string, id: string): Promise<OutboxMessage | undefined>;
  /**
   * Claims what a delivery worker may send now, for `leaseMs`. A message may go now when it is pending, due
   * (nextAttemptAt <= `now`), and no older pending message of its stream (same account and streamKey) is
   * still waiting (nextAttemptAt > `now`); older means earlier createdAt, ties by id. Older messages of the
   * stream that are due themselves may go too, before it: the caller sends a stream's messages one after the
   * other. Parked and delivered messages never hold a stream back. Of these, a claim leaves out every message
   * whose stream holds a live claim (any pending message of the stream claimed by anyone, the caller
   * included, until its lease ends). Claims are atomic across workers on one database: while a lease lives,
   * no other claim returns its message nor anything of its stream, so no two workers send one message or
   * one stream at the same time. A lease ends when it expires (a crashed worker's messages are then
   * claimed again) or when `update` writes the message. Oldest createdAt first (ties by id), at most `limit`.
   */
  claim(now: string, limit: number, lease: OutboxLease): Promise<OutboxMessage[]>;
  /**
   * Ends the claims `owner` still holds (messages it claimed and did not write back): on the messages `ids`
   * names, or every one when `ids` is absent. Claims of other owners are never touched. Idempotent.
   */
  releaseClaims(owner: string, ids?: readonly string[]): Promise<void>;
  /** Replaces the message (status, attempts, nextAttemptAt, lastError, deliveredAt) and ends its claim, if any. */
  update(message: OutboxMessage): Promise<void>;
  /**
   * `update` for many messages at once, atomically (in the caller's transaction when it has one): a delivery
   * pass records its deliveries this way. A message that is missing or another account's is skipped.
   */
  updateMany(messages: readonly OutboxMessage[]): Promise<void>;
  /**
   * Deletes up to `limit` delivered messages whose deliveredAt is before `before` (pending and parked
   * messages are never pruned), oldest delivery first. Returns how many it deleted: fewer than `limit`
   * means nothing more is due for pruning.
   */
  pruneDelivered(before: string, limit: number): Promise<number>;
  /** The account's messages, oldest first (ties by id); optionally only one status; at most `limit` when given. */
  list(accountId: string, status?: OutboxMessage['status'], limit?: number): Promise<OutboxMessage[]>;
  /** Count per status for the account. */
  counts(accountId: string): Promise<Record<OutboxMessage['status'], number>>;
  /**
   * Deletes every delivery (pending, parked, delivered) of one extra endpoint of the account, when the
   * endpoint is deleted. Returns how many; 0 when there are none (idempotent). The default endpoint's
   * messages (no endpointId) are never touched.
   */
  removeEndpointDeliveries(accountId: string, endpointId: string): Promise<number>;
  /**
   * The account's message counts per endpoint (`endpointId` null: the default endpoint), one entry per
   * endpoint that has any message, in no promised order. `failing`: pending messages with at least one
   * failed attempt (also counted in `pending`).
   */
  countsByEndpoint(accountId: string): Promise<EndpointMessageCounts[]>;
  /**
   * The deliveries of one endpoint of the account (`endpointId` null: the default endpoint), optionally of
   * one status and created in [since, until), oldest createdAt first (ties by id), at most `limit`.
   */
  listForEndpoint(
    accountId: string,
    endpointId: string | null,
    filter: { status?: OutboxMessage['status']; since?: string; until?: string },
    limit: number,
  ): Promise<OutboxMessage[]>;
}

/** The delivery log: every attempt to deliver a message to an endpoint. */
export interface WebhookAttemptRepository {
  /** Adds attempts, atomically (in the caller's transaction when it has one). An id that exists throws. */
  addMany(attempts: readonly WebhookAttempt[]): Promise<void>;
  /**
   * The account's attempts that match `filter`, newest first (attemptedAt descending, ties by id
   * descending), at most `limit`, starting after the attempt `after` names (exclusive), when given: the
   * next page starts after the last attempt of the previous one. Empty when none match.
   */
  list(accountId: string, filter: WebhookAttemptFilter, limit: number, after?: { attemptedAt: string; id: string }): Promise<WebhookAttempt[]>;
  /**
   * Deletes up to `limit` attempts of any account made before `before`, oldest first. Returns how many:
   * fewer than `limit` means nothing more is due.
   */
  prune(before: string, limit: number): Promise<number>;
}
