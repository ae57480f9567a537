import { createWriteStream, openAsBlob } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { requestTo, type HttpMethod } from '../contract/endpoints.js';
import { CarebridgeApiError, CarebridgeClientError, CarebridgeNetworkError, problemFrom } from './errors.js';
import type {
  AddedResources,
  CohortMembers,
  CohortMembersChange,
  ConsolidatedCount,
  ListNetworkEntriesOptions,
  NetworkEntryPage,
  NetworkQuery,
  NetworkSource,
  PatientCohorts,
  PatientFacilities,
  BulkDocumentUrlRequest,
  ApiKeyRotation,
  BulkPatientCreate,
  BulkPatientCreateList,
  BulkPatientCreateOptions,
  BulkPatientCreateStart,
  Cohort,
  CohortCreate,
  ConsolidatedBundle,
  ConsolidatedFiltersInput,
  ConsolidatedQuery,
  ConsolidatedQueryOptions,
  ConsolidatedQueryStatus,
  ConsolidatedSearch,
  ConversionType,
  DocumentQuery,
  DocumentSummary,
  DocumentUpload,
  Facility,
  FacilityCreate,
  FhirResource,
  HieOptOutStatus,
  HieOptOutUpdate,
  ListDocumentsOptions,
  ListPatientsOptions,
  Organization,
  OrganizationCreate,
  Patient,
  PatientCreate,
  PatientPage,
  Settings,
  SettingsUpdate,
  UploadedDocument,
  WebhookAttemptPage,
  WebhookEndpoint,
  WebhookEndpointCreate,
  WebhookEndpointList,
  WebhookEndpointUpdate,
  WebhookReplay,
  WebhookReplayResult,
  WebhookSecretRotation,
  WebhookRequestMetadata,
  WebhookRetry,
  WebhookStatus,
  WebhookTestEvent,
  WebhookTestEventResult,
} from './types.js';

/** The filters and paging of `listWebhookAttempts`. */
export interface WebhookAttemptQuery {
  endpointId?: string;
  type?: string;
  patientId?: string;
  status?: 'delivered' | 'failed';
  /** ISO 8601 instant (UTC): attempts at or after it. */
  since?: string;
  /** ISO 8601 instant (UTC): attempts before it. */
  until?: string;
  limit?: number;
  cursor?: string;
}

export interface CarebridgeClientOptions {
  /** The account's API key, sent as `x-api-key`. */
  apiKey: string;
  /**
   * Where the API is served, without `/medical/v1`: `https://carebridge.example.com`, or the mount of an
   * embedded API, e.g. `http://127.0.0.1:3000/api`.
   */
  baseUrl: string;
  /** No answer within this time is a `CarebridgeNetworkError` with code `TIMEOUT`. Default 20 s. */
  timeoutMs?: number;
  /** The same for file uploads (a large CSV takes a while). Default 10 minutes. */
  uploadTimeoutMs?: number;
  /** A fetch implementation (tests, proxies, an in-process host); the global fetch when absent. */
  fetch?: typeof fetch;
  /** Extra headers on every API call (tracing, a client name). */
  headers?: Record<string, string>;
}

/**
 * A CSV (or document) to upload: its text, its bytes, a Blob/File, a web ReadableStream, a Node stream
 * or any async iterable of bytes (streamed, never buffered whole), or a file on disk as `{ path }` or a
 * `file:` URL.
 */
export type UploadSource = string | Uint8Array | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | URL | { path: string };

type Query = Record<string, string | number | boolean | undefined>;

interface CallOptions {
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A conditional write: applied only when the record is still at this version. */
export interface WriteCondition {
  /**
   * The version the change was made from: the `eTag` of the record as last read (or `*` for any). When the
   * record has changed since, the write is refused with `PRECONDITION_FAILED` (412) and nothing changes:
   * read it again and redo the change.
   */
  ifMatch?: string;
}

/** `If-Match` of a condition: the eTag as an entity tag (the service takes it bare too). */
function conditionHeaders(condition: WriteCondition): Record<string, string> {
  const tag = condition.ifMatch;
  if (tag === undefined) return {};
  return { 'if-match': tag === '*' || tag.startsWith('"') || tag.startsWith('W/') ? tag : `"${tag}"` };
}

const DEFAULT_TIMEOUT_MS = 20_000;
const DEFAULT_UPLOAD_TIMEOUT_MS = 10 * 60_000;

function resourcesParam(resources: ConsolidatedFiltersInput['resources']): string | undefined {
  if (resources === undefined) return undefined;
  return typeof resources === 'string' ? resources : resources.join(',');
}

function metadataBody(metadata: WebhookRequestMetadata | undefined): unknown {
  return metadata === undefined ? undefined : { metadata };
}

/**
 * The Node client of the carebridge API. Method names follow the API's convention:
 * `GET /` is `list<Plural>()`, `GET /:id` is `get<Entity>()`, `POST /` is `create<Entity>()`, `PUT /:id`
 * is `update<Entity>()`, `DELETE /:id` is `remove<Entity>()`. Request and response types are the service's
 * own (its zod schemas and wire builders). Failures throw `CarebridgeApiError` (the service answered with
 * an error: `status`, `code`, `title`, `detail`) or `CarebridgeNetworkError` (no answer: `TIMEOUT`,
 * `NETWORK_ERROR`, `ABORTED`).
 */
export class CarebridgeClient {
  private readonly apiKey: string;
  private readonly baseUrl: string;
  private readonly origin: string;
  private readonly timeoutMs: number;
  private readonly uploadTimeoutMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly extraHeaders: Record<string, string>;

  constructor(options: CarebridgeClientOptions) {
    if (!options.apiKey) throw new CarebridgeClientError('INVALID_OPTIONS', 'apiKey is required');
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch {
      throw new CarebridgeClientError('INVALID_OPTIONS', 'baseUrl must be an absolute http(s) URL');
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new CarebridgeClientError('INVALID_OPTIONS', 'baseUrl must be an absolute http(s) URL');
    }
    this.apiKey = options.apiKey;
    this.baseUrl = `${base.origin}${base.pathname.replace(/\/+$/, '')}`;
    this.origin = base.origin;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.uploadTimeoutMs = options.uploadTimeoutMs ?? DEFAULT_UPLOAD_TIMEOUT_MS;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.extraHeaders = options.headers ?? {};
  }

  // --- Organization (one per account) ---

  createOrganization(input: OrganizationCreate): Promise<Organization> {
    return this.call(requestTo('createOrganization'), { body: input });
  }

  /** The account's organization, or `undefined` when none was created yet. */
  getOrganization(): Promise<Organization | undefined> {
    return this.call(requestTo('getOrganization'));
  }

  updateOrganization(organizationId: string, input: OrganizationCreate): Promise<Organization> {
    return this.call(requestTo('updateOrganization', { id: organizationId }), { body: input });
  }

  // --- Facilities ---

  createFacility(input: FacilityCreate): Promise<Facility> {
    return this.call(requestTo('createFacility'), { body: input });
  }

  /** Oldest first. */
  async listFacilities(): Promise<Facility[]> {
    return (await this.call<{ facilities: Facility[] }>(requestTo('listFacilities'))).facilities;
  }

  getFacility(facilityId: string): Promise<Facility> {
    return this.call(requestTo('getFacility', { id: facilityId }));
  }

  updateFacility(facilityId: string, input: FacilityCreate): Promise<Facility> {
    return this.call(requestTo('updateFacility', { id: facilityId }), { body: input });
  }

  /** Only a facility without patients can be removed (`FACILITY_IN_USE` otherwise). */
  async removeFacility(facilityId: string): Promise<void> {
    await this.call(requestTo('removeFacility', { id: facilityId }));
  }

  // --- Cohorts ---

  createCohort(input: CohortCreate): Promise<Cohort> {
    return this.call(requestTo('createCohort'), { body: input });
  }

  /** Oldest first. */
  async listCohorts(): Promise<Cohort[]> {
    return (await this.call<{ cohorts: Cohort[] }>(requestTo('listCohorts'))).cohorts;
  }

  getCohort(cohortId: string): Promise<Cohort> {
    return this.call(requestTo('getCohort', { id: cohortId }));
  }

  updateCohort(cohortId: string, input: CohortCreate): Promise<Cohort> {
    return this.call(requestTo('updateCohort', { id: cohortId }), { body: input });
  }

  async removeCohort(cohortId: string): Promise<void> {
    await this.call(requestTo('removeCohort', { id: cohortId }));
  }

  /** Changes only the fields given (`description: null` clears it). */
  patchCohort(cohortId: string, input: { name?: string; description?: string | null }): Promise<Cohort> {
    return this.call(requestTo('patchCohort', { id: cohortId }), { body: input });
  }

  /** Adds the patients to the cohort (idempotent); every id must be a patient of the account, or nothing changes. */
  addPatientsToCohort(cohortId: string, members: CohortMembers): Promise<CohortMembersChange> {
    return this.call(requestTo('addPatientsToCohort', { id: cohortId }), { body: members });
  }

  removePatientsFromCohort(cohortId: string, members: CohortMembers): Promise<CohortMembersChange> {
    return this.call(requestTo('removePatientsFromCohort', { id: cohortId }), { body: members });
  }

  /** One page of the cohort's patients, oldest first; `nextCursor` as for `listPatients`. */
  async listCohortPatients(cohortId: string, options: Pick<ListPatientsOptions, 'count' | 'cursor'> = {}): Promise<PatientPage & { nextCursor?: string }> {
    const page = await this.call<PatientPage>(requestTo('listCohortPatients', { id: cohortId }), { query: { count: options.count, cursor: options.cursor } });
    const nextCursor = page.meta.nextPage ? (new URL(page.meta.nextPage).searchParams.get('cursor') ?? undefined) : undefined;
    return nextCursor ? { ...page, nextCursor } : page;
  }

  // --- Patients ---

  /** `facilityId` may be left out when the account has exactly one facility. */
  createPatient(input: PatientCreate, facilityId?: string): Promise<Patient> {
    return this.call(requestTo('createPatient'), { query: { facilityId }, body: input });
  }

  /**
   * One page of patients, oldest first. `nextCursor` (absent on the last page) is the `cursor` of the
   * next one; `meta.nextPage` is the same page as a URL. With `name`, `dob` or `externalId`, a page may
   * hold fewer patients than `count`, even none, and still have a `nextCursor` (the service scans a bounded
   * number of patients per request).
   */
  async listPatients(options: ListPatientsOptions = {}): Promise<PatientPage & { nextCursor?: string }> {
    const { facilityId, count, cursor, name, dob, externalId } = options;
    const page = await this.call<PatientPage>(requestTo('listPatients'), { query: { facilityId, count, cursor, name, dob, externalId } });
    const nextCursor = page.meta.nextPage ? (new URL(page.meta.nextPage).searchParams.get('cursor') ?? undefined) : undefined;
    return nextCursor ? { ...page, nextCursor } : page;
  }

  /** Every patient (of a facility, when given), page after page. */
  async *listAllPatients(options: Omit<ListPatientsOptions, 'cursor'> = {}): AsyncGenerator<Patient> {
    let cursor: string | undefined;
    do {
      const page = await this.listPatients({ ...options, ...(cursor ? { cursor } : {}) });
      yield* page.patients;
      cursor = page.nextCursor;
    } while (cursor);
  }

  getPatient(patientId: string): Promise<Patient> {
    return this.call(requestTo('getPatient', { id: patientId }));
  }

  /** The patient with this externalId; `CONFLICT` (409) when several patients share it. */
  getPatientByExternalId(externalId: string): Promise<Patient> {
    return this.call(requestTo('getPatientByExternalId'), { query: { externalId } });
  }

  /**
   * The patient whose demographics match (the bulk import's matching rule), or `undefined` when none does;
   * `CONFLICT` (409) when several do.
   */
  async matchPatient(demographics: PatientCreate): Promise<Patient | undefined> {
    try {
      return await this.call<Patient>(requestTo('matchPatient'), { body: demographics });
    } catch (error) {
      if (error instanceof CarebridgeApiError && error.code === 'PATIENT_NOT_FOUND') return undefined;
      throw error;
    }
  }

  async getPatientFacilities(patientId: string): Promise<PatientFacilities> {
    return (await this.call<{ facilities: PatientFacilities }>(requestTo('getPatientFacilities', { id: patientId }))).facilities;
  }

  /** Replaces the patient's facilities (at least one); answers them. */
  async setPatientFacilities(patientId: string, facilityIds: readonly string[]): Promise<PatientFacilities> {
    return (await this.call<{ facilities: PatientFacilities }>(requestTo('setPatientFacilities', { id: patientId }), { body: { facilityIds } })).facilities;
  }

  async getPatientCohorts(patientId: string): Promise<PatientCohorts> {
    return (await this.call<{ cohorts: PatientCohorts }>(requestTo('getPatientCohorts', { id: patientId }))).cohorts;
  }

  /** Adds the patient to the cohorts; answers every cohort the patient is in. */
  async addPatientToCohorts(patientId: string, cohortIds: readonly string[]): Promise<PatientCohorts> {
    return (await this.call<{ cohorts: PatientCohorts }>(requestTo('addPatientToCohorts', { id: patientId }), { body: { cohortIds } })).cohorts;
  }

  /**
   * Replaces the demographics; a `facilityId` is added to the patient's facilities. With
   * `{ ifMatch: patient.eTag }`, only if nobody changed the patient since it was read (`PRECONDITION_FAILED`
   * otherwise); without, the demographics are replaced whatever changed meanwhile (and nothing else is lost).
   */
  updatePatient(patientId: string, input: PatientCreate, facilityId?: string, condition: WriteCondition = {}): Promise<Patient> {
    return this.call(requestTo('updatePatient', { id: patientId }), { query: { facilityId }, body: input, headers: conditionHeaders(condition) });
  }

  async removePatient(patientId: string): Promise<void> {
    await this.call(requestTo('removePatient', { id: patientId }));
  }

  /**
   * `true` opts the patient out of data sharing and pulling through HIEs; `false` opts back in. Idempotent.
   * `ifMatch` as for `updatePatient`.
   */
  updatePatientHieOptOut(patientId: string, hieOptOut: boolean, condition: WriteCondition = {}): Promise<HieOptOutUpdate> {
    return this.call(requestTo('updatePatientHieOptOut', { id: patientId }), { query: { hieOptOut }, headers: conditionHeaders(condition) });
  }

  getPatientHieOptOut(patientId: string): Promise<HieOptOutStatus> {
    return this.call(requestTo('getPatientHieOptOut', { id: patientId }));
  }

  // --- Bulk patient create ---

  /** Starts a bulk patient create: the answer carries the pre-signed `uploadUrl` (10 minutes, single use). */
  startBulkPatientCreate(options: BulkPatientCreateOptions = {}): Promise<BulkPatientCreateStart> {
    return this.call(requestTo('startBulkPatientCreate'), { query: { facilityId: options.facilityId, dryRun: options.dryRun } });
  }

  /**
   * PUTs the CSV to the `uploadUrl` of `startBulkPatientCreate`, with the API key.
   * Streams sources are streamed. The key is only sent to the origin of `baseUrl`: another origin is a
   * `CarebridgeClientError` (`UNTRUSTED_URL`).
   */
  uploadBulkPatientCsv(uploadUrl: string, csv: UploadSource): Promise<BulkPatientCreate> {
    return this.upload(uploadUrl, csv, 'text/csv', true);
  }

  /** The account's bulk patient creates with their outcome, newest first (`limit` at most 100, default 20). */
  listBulkPatientCreates(options: { limit?: number } = {}): Promise<BulkPatientCreateList> {
    return this.call(requestTo('listBulkPatientCreates'), { query: { limit: options.limit } });
  }

  /** Status and progress; `result` (when completed) is a fresh URL of the result CSV (see `download`). */
  getBulkPatientCreate(requestId: string): Promise<BulkPatientCreate> {
    return this.call(requestTo('getBulkPatientCreate', { requestId }));
  }

  /**
   * The whole bulk flow in one call: starts the request, uploads the CSV to its pre-signed URL, and returns
   * the request id. The outcome comes by webhook (`medical.bulk-patient-create`) or `getBulkPatientCreate`.
   */
  async createPatientsFromCsv(csv: UploadSource, options: BulkPatientCreateOptions = {}): Promise<string> {
    const started = await this.startBulkPatientCreate(options);
    await this.uploadBulkPatientCsv(started.uploadUrl, csv);
    return started.requestId;
  }

  /**
   * Polls the bulk request every `pollMs` (default 1 s) until it has ended (`completed`, `failed` or
   * `expired`) and returns that last status; `onProgress` sees every status read (a progress display).
   * Stops with the signal's reason when `signal` aborts. A status that cannot be read throws as every call does.
   */
  async waitForBulkPatientCreate(
    requestId: string,
    options: { pollMs?: number; onProgress?: (status: BulkPatientCreate) => void; signal?: AbortSignal } = {},
  ): Promise<BulkPatientCreate> {
    const pollMs = options.pollMs ?? 1_000;
    if (!Number.isFinite(pollMs) || pollMs < 10) throw new CarebridgeClientError('INVALID_OPTIONS', 'pollMs must be at least 10');
    for (;;) {
      options.signal?.throwIfAborted();
      const status = await this.getBulkPatientCreate(requestId);
      options.onProgress?.(status);
      if (status.status === 'completed' || status.status === 'failed' || status.status === 'expired') return status;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, pollMs);
        options.signal?.addEventListener('abort', () => (clearTimeout(timer), reject(options.signal!.reason)), { once: true });
      });
    }
  }

  /**
   * Streams the result CSV of a completed bulk request (the status `waitForBulkPatientCreate` returns) to
   * a file, never holding it whole in memory. A request without a result (failed, expired, not finished)
   * is refused with `INVALID_OPTIONS`.
   */
  async downloadBulkPatientCreateResult(status: Pick<BulkPatientCreate, 'requestId' | 'status'> & { result?: string }, path: string): Promise<void> {
    if (status.status !== 'completed' || !status.result) {
      throw new CarebridgeClientError('INVALID_OPTIONS', `bulk request ${status.requestId} has no result file (${status.status})`);
    }
    const response = await this.download(status.result);
    if (!response.body) throw new CarebridgeNetworkError('INVALID_RESPONSE', 'the result download had no body', { method: 'GET', path: new URL(status.result).pathname });
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>), createWriteStream(path));
  }

  // --- Documents ---

  /**
   * Starts a document query for the patient at the HIE networks (returns the running one if there is
   * one). The outcome comes by webhook; `metadata` is echoed as their `meta.data`. An opted-out patient
   * is a 400 `PATIENT_OPTED_OUT`.
   */
  startDocumentQuery(patientId: string, facilityId?: string, metadata?: WebhookRequestMetadata): Promise<DocumentQuery> {
    return this.call(requestTo('startDocumentQuery'), { query: { patientId, facilityId }, body: metadataBody(metadata) });
  }

  /** Progress of the patient's latest document query; `undefined` when there was none. */
  async getDocumentQueryStatus(patientId: string): Promise<DocumentQuery | undefined> {
    const status = await this.call<Partial<DocumentQuery>>(requestTo('getDocumentQueryStatus'), { query: { patientId } });
    return status.requestId === undefined ? undefined : (status as DocumentQuery);
  }

  /**
   * The patient's documents as FHIR DocumentReferences, oldest first. `facilityId` is accepted in the
   * position the API's convention shows (`listDocuments(patientId, facilityId)`); documents belong to the
   * patient, so it does not narrow the list.
   */
  async listDocuments(patientId: string, facilityId?: string, options: ListDocumentsOptions = {}): Promise<FhirResource[]> {
    const query = { patientId, facilityId, dateFrom: options.dateFrom, dateTo: options.dateTo, content: options.content, count: options.count };
    return (await this.call<{ documents: FhirResource[] }>(requestTo('listDocuments'), { query })).documents;
  }

  /** The same documents in the short form (`output=dto`): id, fileName, description, size... */
  async listDocumentSummaries(patientId: string, options: ListDocumentsOptions = {}): Promise<DocumentSummary[]> {
    const query = { patientId, dateFrom: options.dateFrom, dateTo: options.dateTo, content: options.content, count: options.count, output: 'dto' };
    return (await this.call<{ documents: DocumentSummary[] }>(requestTo('listDocuments'), { query })).documents;
  }

  /** A short-lived pre-signed URL to the file, or for a C-CDA to its `html` or `pdf` rendering (see `download`). */
  getDocumentUrl(fileName: string, conversionType?: Extract<ConversionType, 'html' | 'pdf'>): Promise<{ url: string }> {
    return this.call(requestTo('getDocumentUrl'), { query: { fileName, conversionType } });
  }

  /** Sends the download URLs of all the patient's documents by webhook (`medical.document-bulk-download-urls`). */
  startBulkGetDocumentUrl(patientId: string, metadata?: WebhookRequestMetadata): Promise<BulkDocumentUrlRequest> {
    return this.call(requestTo('startBulkGetDocumentUrl'), { query: { patientId }, body: metadataBody(metadata) });
  }

  /**
   * Describes a document you hold with a FHIR DocumentReference; returns its id and the pre-signed URL to
   * PUT the file to (`uploadDocument`).
   */
  createDocumentReference(patientId: string, documentReference: Record<string, unknown>): Promise<DocumentUpload> {
    return this.call(requestTo('createDocumentReference'), { query: { patientId }, body: documentReference });
  }

  /** PUTs a document's file to the `uploadUrl` of `createDocumentReference`; a C-CDA is then converted. */
  uploadDocument(uploadUrl: string, file: UploadSource, contentType = 'application/xml'): Promise<UploadedDocument> {
    // The URL is pre-signed on its own: the API key is not needed, so it is not sent.
    return this.upload(uploadUrl, file, contentType, false);
  }

  // --- Consolidated data ---

  /**
   * Starts a consolidated data query (one per patient at a time: while one runs, it is returned). The data
   * comes by webhook (`medical.consolidated-data`).
   */
  startConsolidatedQuery(patientId: string, options: ConsolidatedQueryOptions = {}): Promise<ConsolidatedQuery> {
    const query = { resources: resourcesParam(options.resources), dateFrom: options.dateFrom, dateTo: options.dateTo, conversionType: options.conversionType };
    return this.call(requestTo('startConsolidatedQuery', { id: patientId }), { query, body: metadataBody(options.metadata) });
  }

  /** The patient's consolidated queries still running (`queries` is null when none) and the latest status. */
  getConsolidatedQueryStatus(patientId: string): Promise<ConsolidatedQueryStatus> {
    return this.call(requestTo('getConsolidatedQueryStatus', { id: patientId }));
  }

  getConsolidatedQuery(patientId: string, requestId: string): Promise<ConsolidatedQuery> {
    return this.call(requestTo('getConsolidatedQuery', { id: patientId, requestId }));
  }

  /** The patient's consolidated data at once, as a FHIR searchset Bundle. */
  getPatientConsolidated(patientId: string, filters: ConsolidatedFiltersInput = {}): Promise<ConsolidatedBundle> {
    const query = { resources: resourcesParam(filters.resources), dateFrom: filters.dateFrom, dateTo: filters.dateTo };
    return this.call(requestTo('getPatientConsolidated', { id: patientId }), { query });
  }

  /**
   * Searches the patient's consolidated data and C-CDA documents (all terms, typo-tolerant): `url` of a
   * FHIR searchset Bundle valid 60 s, absent when nothing matched.
   * @deprecated The endpoint is deprecated.
   */
  searchPatientData(patientId: string, query?: string): Promise<ConsolidatedSearch> {
    return this.call(requestTo('searchPatientData', { id: patientId }), { query: { query } });
  }

  /**
   * Adds your own FHIR resources (a Bundle of up to 1,000, 1 MB) to the patient's consolidated data,
   * deduplicated with what documents brought. The answer has one entry per resource: `201 Created`, or
   * `200 OK` with the `location` of the resource it merged into.
   */
  addPatientResources(patientId: string, bundle: { resourceType: 'Bundle'; type?: string; entry: { resource: FhirResource }[] }): Promise<AddedResources> {
    return this.call(requestTo('addPatientResources', { id: patientId }), { body: bundle });
  }

  /** How many resources the consolidated data holds per type, with these filters. */
  countPatientResources(patientId: string, filters: ConsolidatedFiltersInput = {}): Promise<ConsolidatedCount> {
    return this.call(requestTo('countPatientResources', { id: patientId }), {
      query: { resources: resourcesParam(filters.resources), dateFrom: filters.dateFrom, dateTo: filters.dateTo },
    });
  }

  /** A URL (valid 10 minutes) to the patient's medical record summary, rendered now; `NOT_FOUND` while the patient has no data. */
  getMedicalRecordUrl(patientId: string, format: 'html' | 'pdf'): Promise<{ url: string }> {
    return this.call(requestTo('getMedicalRecordUrl', { id: patientId }), { query: { conversionType: format } });
  }

  // --- Network query ---

  /**
   * Asks the networks for the patient's data: `hie` (documents), `pharmacy` (medications), `lab` (results).
   * Each source ends with its own webhook (`network-query.hie`, `.pharmacy`, `.lab`) carrying a URL to the
   * consolidated data; `metadata` comes back as their `meta.data`. A query still running for the patient is
   * returned instead of a new one. An opted-out patient is refused (`PATIENT_OPTED_OUT`).
   */
  startNetworkQuery(patientId: string, sources: readonly NetworkSource[], metadata?: WebhookRequestMetadata): Promise<NetworkQuery> {
    return this.call(requestTo('startNetworkQuery'), { query: { patientId }, body: { sources, ...(metadata ? { metadata } : {}) } });
  }

  getNetworkQuery(requestId: string): Promise<NetworkQuery> {
    return this.call(requestTo('getNetworkQuery', { requestId }));
  }

  /** One page of the directory of the organizations the networks reach, by name. */
  async listNetworkEntries(options: ListNetworkEntriesOptions = {}): Promise<NetworkEntryPage> {
    const page = await this.call<NetworkEntryPage>(requestTo('listNetworkEntries'), {
      query: {
        filter: options.filter,
        npi: options.npi,
        oid: options.oid,
        supportsMessaging: options.supportsMessaging,
        active: options.active,
        count: options.count,
        fromItem: options.cursor,
      },
    });
    const nextCursor = page.meta.nextPage ? (new URL(page.meta.nextPage).searchParams.get('fromItem') ?? undefined) : undefined;
    return nextCursor ? { ...page, nextCursor } : page;
  }

  // --- Settings and webhooks ---

  getSettings(): Promise<Settings> {
    return this.call(requestTo('getSettings'));
  }

  /** Sets the webhook URL (the service pings it at once; `webhookEnabled` says whether it answered). `''` clears it. */
  updateSettings(input: SettingsUpdate): Promise<Settings> {
    return this.call(requestTo('updateSettings'), { body: input });
  }

  /**
   * Gives the account a new API key, answered this once. This client keeps using the key it was made with,
   * which stops working within a few seconds: make a new client with the answer's `apiKey`.
   */
  rotateApiKey(): Promise<ApiKeyRotation> {
    return this.call(requestTo('rotateApiKey'));
  }

  getWebhookStatus(): Promise<WebhookStatus> {
    return this.call(requestTo('getWebhookStatus'));
  }

  /** Redelivers every parked message of the default endpoint (same `messageId`); other endpoints replay theirs. */
  retryWebhookRequests(): Promise<WebhookRetry> {
    return this.call(requestTo('retryWebhookRequests'));
  }

  /** Adds a webhook endpoint beside `webhookUrl` (pinged at once; `enabled` says whether it answered). */
  createWebhookEndpoint(input: WebhookEndpointCreate): Promise<WebhookEndpoint> {
    return this.call(requestTo('createWebhookEndpoint'), { body: input });
  }

  /** The account's webhook endpoints besides `webhookUrl`, oldest first. */
  listWebhookEndpoints(): Promise<WebhookEndpointList> {
    return this.call(requestTo('listWebhookEndpoints'));
  }

  getWebhookEndpoint(endpointId: string): Promise<WebhookEndpoint> {
    return this.call(requestTo('getWebhookEndpoint', { id: endpointId }));
  }

  /** Changes an endpoint; a new URL is pinged, `enabled: true` re-enables it. */
  updateWebhookEndpoint(endpointId: string, input: WebhookEndpointUpdate): Promise<WebhookEndpoint> {
    return this.call(requestTo('updateWebhookEndpoint', { id: endpointId }), { body: input });
  }

  /**
   * A page of the delivery log (every attempt, newest first); pass `nextCursor` as `cursor` for the next.
   * `endpointId` is an endpoint's id or `default` (webhookUrl); `status` is `delivered` or `failed`.
   */
  listWebhookAttempts(query: WebhookAttemptQuery = {}): Promise<WebhookAttemptPage> {
    return this.call(requestTo('listWebhookAttempts'), { query: { ...query } });
  }

  /**
   * Sends messages again to one endpoint (its id, or `default` for webhookUrl), same messageId, in stream
   * order: one message (`messageId`), every parked one (`parked: true`), or a time window (`since`, `until`).
   */
  replayWebhookMessages(endpointId: string, request: WebhookReplay): Promise<WebhookReplayResult> {
    return this.call(requestTo('replayWebhookMessages', { id: endpointId }), { body: request });
  }

  /**
   * Sends a sample message of `type` (any type an endpoint can receive) to one endpoint now (its id, or
   * `default` for webhookUrl), signed, with `meta.test: true`; answers what the receiver did.
   */
  sendWebhookTestEvent(endpointId: string, input: WebhookTestEvent): Promise<WebhookTestEventResult> {
    return this.call(requestTo('sendWebhookTestEvent', { id: endpointId }), { body: input });
  }

  /** Gives the endpoint a new secret; the old one keeps signing beside it for the grace period (default 24 h). */
  rotateWebhookEndpointSecret(endpointId: string, input: WebhookSecretRotation = {}): Promise<WebhookEndpoint> {
    return this.call(requestTo('rotateWebhookEndpointSecret', { id: endpointId }), { body: input });
  }

  /** Deletes an endpoint and the messages waiting for it. */
  async removeWebhookEndpoint(endpointId: string): Promise<void> {
    await this.call(requestTo('removeWebhookEndpoint', { id: endpointId }));
  }

  // --- Files handed out as pre-signed URLs ---

  /**
   * Fetches a pre-signed URL the service handed out (result CSV, document, consolidated file, search
   * bundle). No API key is sent: the signature is the authorisation. An error status throws
   * `CarebridgeApiError` (`URL_EXPIRED` after its validity).
   */
  async download(url: string): Promise<Response> {
    const target = new URL(url);
    const request = { method: 'GET', path: target.pathname };
    const response = await this.send(target, { method: 'GET', headers: this.extraHeaders }, request, this.uploadTimeoutMs);
    if (!response.ok) await this.fail(response, request);
    return response;
  }

  // --- Transport ---

  /** One API call: `target` is the endpoint's method and path (`requestTo`), filled with its params. */
  private async call<T>(target: { method: HttpMethod; path: string }, options: CallOptions = {}): Promise<T> {
    const { method, path } = target;
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { ...this.extraHeaders, ...options.headers, 'x-api-key': this.apiKey, accept: 'application/json' };
    const init: RequestInit = { method, headers };
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(options.body);
    }
    const request = { method, path: url.pathname };
    const response = await this.send(url, init, request, this.timeoutMs, async (answer) => {
      if (!answer.ok) return this.fail(answer, request);
      const text = await answer.text();
      return (text === '' ? undefined : JSON.parse(text)) as T;
    });
    return response;
  }

  private async upload<T>(uploadUrl: string, source: UploadSource, contentType: string, withApiKey: boolean): Promise<T> {
    let target: URL;
    try {
      target = new URL(uploadUrl);
    } catch {
      throw new CarebridgeClientError('UNTRUSTED_URL', 'The upload URL is not an absolute URL; use the uploadUrl exactly as the service gave it');
    }
    if (withApiKey && target.origin !== this.origin) {
      throw new CarebridgeClientError('UNTRUSTED_URL', `The upload URL is not on ${this.origin}; the API key is only sent there`);
    }
    const headers: Record<string, string> = { ...this.extraHeaders, 'content-type': contentType, accept: 'application/json' };
    if (withApiKey) headers['x-api-key'] = this.apiKey;
    const body = await uploadBody(source);
    // Streams need half duplex in Node's fetch; it is harmless for the other body kinds.
    const init = { method: 'PUT', headers, body, duplex: 'half' } as RequestInit;
    const request = { method: 'PUT', path: target.pathname };
    return this.send(target, init, request, this.uploadTimeoutMs, async (answer) => {
      if (!answer.ok) return this.fail(answer, request);
      return (await answer.json()) as T;
    });
  }

  /**
   * One fetch under a timeout. `read` consumes the response inside the same timeout, so a service that
   * stalls half-way through its answer is a TIMEOUT too; without `read` the response is returned unread.
   */
  private async send(url: URL, init: RequestInit, request: { method: string; path: string }, timeoutMs: number): Promise<Response>;
  private async send<T>(url: URL, init: RequestInit, request: { method: string; path: string }, timeoutMs: number, read: (response: Response) => Promise<T>): Promise<T>;
  private async send<T>(
    url: URL,
    init: RequestInit,
    request: { method: string; path: string },
    timeoutMs: number,
    read?: (response: Response) => Promise<T>,
  ): Promise<T | Response> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    try {
      const response = await this.fetchImpl(url, { ...init, signal: controller.signal });
      if (!read) return response;
      return await read(response);
    } catch (error) {
      if (error instanceof CarebridgeApiError) throw error;
      if (timedOut) throw new CarebridgeNetworkError('TIMEOUT', `${request.method} ${request.path}: no answer within ${timeoutMs} ms`, request, { cause: error });
      if (error instanceof SyntaxError) {
        throw new CarebridgeNetworkError('INVALID_RESPONSE', `${request.method} ${request.path}: the answer is not valid JSON`, request, { cause: error });
      }
      throw new CarebridgeNetworkError('NETWORK_ERROR', `${request.method} ${request.path}: ${describeNetworkError(error)}`, request, { cause: error });
    } finally {
      // A returned, unread response (download) is the caller's to stream from here, without our timer.
      clearTimeout(timer);
    }
  }

  private async fail(response: Response, request: { method: string; path: string }): Promise<never> {
    const text = await response.text().catch(() => '');
    throw new CarebridgeApiError(problemFrom(response.status, response.statusText, text, response.headers.get('content-type')), request);
  }
}

function describeNetworkError(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (cause && typeof cause.code === 'string') return `the request failed (${cause.code})`;
  return error instanceof Error ? `the request failed (${error.message})` : 'the request failed';
}

async function uploadBody(source: UploadSource): Promise<NonNullable<RequestInit['body']>> {
  if (typeof source === 'string' || source instanceof Uint8Array || source instanceof Blob || source instanceof ReadableStream) return source as NonNullable<RequestInit['body']>;
  if (source instanceof URL) return openAsBlob(fileURLToPath(source));
  // Node streams and other async iterables, streamed as they come (before `path`: an fs.ReadStream has one too).
  if (Symbol.asyncIterator in source) return Readable.toWeb(Readable.from(source)) as unknown as ReadableStream<Uint8Array>;
  return openAsBlob(source.path);
}
