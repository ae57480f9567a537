import type { z } from 'zod';
import { BULK_LIST_MAX, MAX_RESOURCES_PER_CALL } from './limits.js';
import {
  apiKeyRotationResponse,
  bulkDownloadUrlsResponse,
  bulkListResponse,
  bulkStartResponse,
  bulkStatusResponse,
  cohortListResponse,
  cohortMembersResponse,
  cohortResponse,
  consolidatedCountResponse,
  consolidatedQueriesResponse,
  consolidatedQueryResponse,
  documentListResponse,
  documentQueryResponse,
  documentUploadResponse,
  documentUploadedResponse,
  facilityListResponse,
  facilityResponse,
  fhirBundleResponse,
  hieOptOutResponse,
  latestDocumentQueryResponse,
  networkEntriesResponse,
  networkQueryResponse,
  organizationResponse,
  parkedMessagesResponse,
  patientFacilitiesResponse,
  patientPageResponse,
  patientResponse,
  searchResponse,
  settingsResponse,
  transactionResponseBundle,
  uploadUrlResponse,
  urlResponse,
  webhookAttemptPageResponse,
  webhookEndpointListResponse,
  webhookEndpointResponse,
  webhookReplayResponse,
  webhookRetryResponse,
  webhookStatusResponse,
  webhookTestEventResponse,
} from './responses.js';

/*
 * Every endpoint of the API, once: its name, method, path (`:name` segments are path params) and what a
 * caller sees of it on the wire (authorisation, success answer, tag, summary, deprecation, conditional
 * headers). The service's routes (core/api/routes/) add their validators and handlers to these entries by
 * name, the OpenAPI document is made from them, and the client builds each request from them.
 */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * How an endpoint is authorised: `apiKey` (x-api-key), `signed` (a pre-signed URL alone, for downloads
 * handed out in webhooks), `signedAndApiKey` (the upload PUT carries both), `none`.
 */
export type EndpointAuth = 'apiKey' | 'signed' | 'signedAndApiKey' | 'none';

/**
 * Rate classes, by what a request costs the service: each has its own per-account limit (requests per minute,
 * set by the service), so a caller using up one class can still make the requests of another.
 */
export const RATE_LIMIT_CLASSES = ['standard', 'create', 'documentQuery', 'consolidated'] as const;
export type RateClass = (typeof RATE_LIMIT_CLASSES)[number];

export interface Endpoint {
  method: HttpMethod;
  /** `/medical/v1/patient/:id`; each `:name` segment is a path param, typed by name where it is filled or read. */
  path: string;
  auth: EndpointAuth;
  /** The OpenAPI tag, which groups the endpoint with those of its area. */
  tag: string;
  summary: string;
  /** Answers carry `Deprecation: true`; the document marks the operation deprecated. */
  deprecated?: boolean;
  /** Media type of a raw body the endpoint takes as a stream (uploads); JSON otherwise. */
  rawBody?: string;
  /**
   * The endpoint writes a versioned resource and honours `If-Match`: a version that is not the current one
   * answers 412 PRECONDITION_FAILED. Documented as a header and a 412 answer.
   */
  ifMatch?: boolean;
  /** The success answer carries the resource's version as its `ETag` header. */
  etag?: boolean;
  /**
   * The endpoint's rate class, when its requests cost more than most; absent: `standard`, which includes
   * reading the status of work already started (a query's progress, a file it made), since clients poll those.
   * - `create`: creates a patient or a document, or starts a bulk import: for a few at a time, since the bulk
   *   import takes a whole file.
   * - `documentQuery`: sets off minutes of work over a patient's documents (a document or network query, the
   *   download URLs of every document).
   * - `consolidated`: renders a patient's consolidated data now, or starts a query that will.
   */
  rate?: Exclude<RateClass, 'standard'>;
  success: {
    status: number;
    /** The JSON answer's schema; absent for a file. */
    schema?: z.ZodType;
    mediaType?: string;
    /** Media types the answer may also come as (a file in several formats), documented as text or binary. */
    otherMediaTypes?: readonly string[];
    /** The OpenAPI example of the answer; one made from the schema when absent. */
    example?: unknown;
  };
  /** An SDK operation answered with 501 `NOT_IMPLEMENTED`, saying why, rather than a 404 that reads like a wrong path. */
  notServed?: { operation: string; reason: string };
}

/** The names of a path's `:name` segments: `'/patient/:id/consolidated/:queryId'` -> `'id' | 'queryId'`. */
export type PathParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}` ? Name | PathParamNames<`/${Rest}`> : P extends `${string}:${infer Name}` ? Name : never;

/** A path's params by name, each present. */
export type PathParams<P extends string> = { [Name in PathParamNames<P>]: string };

/** An SDK operation carebridge answers with 501; the API key is checked first, as on every endpoint. */
function notServed<M extends HttpMethod, P extends string>(method: M, path: P, operation: string, reason: string) {
  return {
    method,
    path,
    auth: 'apiKey',
    tag: 'Not served',
    summary: `Not served (SDK ${operation}): ${reason}`,
    success: { status: 501, mediaType: 'application/problem+json' },
    notServed: { operation, reason },
  } as const;
}

const MESSAGING = 'there is no messaging network (Direct or network messages) to deliver to';

/** The API, in the order the OpenAPI document lists it. */
export const ENDPOINTS = {
  // Organization (one per account)
  createOrganization: {
    method: 'POST',
    path: '/medical/v1/organization',
    auth: 'apiKey',
    tag: 'Organization',
    summary: 'Create the organization of the account (one per account)',
    success: { status: 201, schema: organizationResponse },
  },
  getOrganization: {
    method: 'GET',
    path: '/medical/v1/organization',
    auth: 'apiKey',
    tag: 'Organization',
    summary: 'Get the organization of the account (empty body when none was created)',
    success: { status: 200, schema: organizationResponse },
  },
  updateOrganization: {
    method: 'PUT',
    path: '/medical/v1/organization/:id',
    auth: 'apiKey',
    tag: 'Organization',
    summary: 'Update the organization',
    success: { status: 200, schema: organizationResponse },
  },
  // Facilities
  createFacility: {
    method: 'POST',
    path: '/medical/v1/facility',
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'Create a facility',
    success: { status: 201, schema: facilityResponse },
  },
  listFacilities: {
    method: 'GET',
    path: '/medical/v1/facility',
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'List the facilities of the account, oldest first',
    success: { status: 200, schema: facilityListResponse },
  },
  getFacility: {
    method: 'GET',
    path: '/medical/v1/facility/:id',
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'Get a facility',
    success: { status: 200, schema: facilityResponse },
  },
  updateFacility: {
    method: 'PUT',
    path: '/medical/v1/facility/:id',
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'Update a facility',
    success: { status: 200, schema: facilityResponse },
  },
  removeFacility: {
    method: 'DELETE',
    path: '/medical/v1/facility/:id',
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'Remove a facility that has no patients',
    success: { status: 204 },
  },
  // Cohorts
  createCohort: {
    method: 'POST',
    path: '/medical/v1/cohort',
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Create a cohort',
    success: { status: 201, schema: cohortResponse },
  },
  listCohorts: {
    method: 'GET',
    path: '/medical/v1/cohort',
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'List the cohorts of the account, oldest first',
    success: { status: 200, schema: cohortListResponse },
  },
  getCohort: {
    method: 'GET',
    path: '/medical/v1/cohort/:id',
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Get a cohort',
    success: { status: 200, schema: cohortResponse },
  },
  updateCohort: {
    method: 'PUT',
    path: '/medical/v1/cohort/:id',
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Update a cohort',
    success: { status: 200, schema: cohortResponse },
  },
  removeCohort: {
    method: 'DELETE',
    path: '/medical/v1/cohort/:id',
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Remove a cohort',
    success: { status: 204 },
  },
  patchCohort: {
    method: 'PATCH',
    path: '/medical/v1/cohort/:id',
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Update some fields of a cohort (only those given change)',
    success: { status: 200, schema: cohortResponse },
  },
  addPatientsToCohort: {
    method: 'POST',
    path: '/medical/v1/cohort/:id/patient',
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Add patients to the cohort (patientIds, or allPatients: true)',
    success: { status: 200, schema: cohortMembersResponse },
  },
  removePatientsFromCohort: {
    method: 'DELETE',
    path: '/medical/v1/cohort/:id/patient',
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Remove patients from the cohort (patientIds, or allPatients: true)',
    success: { status: 200, schema: cohortMembersResponse },
  },
  listCohortPatients: {
    method: 'GET',
    path: '/medical/v1/cohort/:id/patient',
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'The patients of the cohort, oldest first, paged like the patient list',
    success: { status: 200, schema: patientPageResponse },
  },
  // Patients
  createPatient: {
    method: 'POST',
    path: '/medical/v1/patient',
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Create a patient; when a patient of the account is the same person (the import matching rule), 200 with that patient, unchanged (409 when several are)',
    etag: true,
    rate: 'create',
    success: { status: 201, schema: patientResponse },
  },
  listPatients: {
    method: 'GET',
    path: '/medical/v1/patient',
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'List patients, optionally of one facility and filtered by name, date of birth or externalId, oldest first, paged by cursor',
    success: { status: 200, schema: patientPageResponse },
  },
  getPatientByExternalId: {
    method: 'GET',
    path: '/medical/v1/patient/external-id',
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Get the patient with this externalId (409 when several patients share it)',
    success: { status: 200, schema: patientResponse },
  },
  matchPatient: {
    method: 'POST',
    path: '/medical/v1/patient/match',
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Find the patient whose demographics match (404 when none does, 409 when several do)',
    success: { status: 200, schema: patientResponse },
  },
  getPatientFacilities: {
    method: 'GET',
    path: '/medical/v1/patient/:id/facility',
    auth: 'apiKey',
    tag: 'Patient',
    summary: "The patient's facilities",
    success: { status: 200, schema: patientFacilitiesResponse },
  },
  setPatientFacilities: {
    method: 'POST',
    path: '/medical/v1/patient/:id/facility',
    auth: 'apiKey',
    tag: 'Patient',
    summary: "Replace the patient's facilities with these (at least one)",
    success: { status: 200, schema: patientFacilitiesResponse },
  },
  getPatientCohorts: {
    method: 'GET',
    path: '/medical/v1/patient/:id/cohort',
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'The cohorts the patient is in',
    success: { status: 200, schema: cohortListResponse },
  },
  addPatientToCohorts: {
    method: 'POST',
    path: '/medical/v1/patient/:id/cohort',
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Add the patient to these cohorts; answers all the cohorts the patient is in',
    success: { status: 200, schema: cohortListResponse },
  },
  getPatient: {
    method: 'GET',
    path: '/medical/v1/patient/:id',
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Get a patient',
    etag: true,
    success: { status: 200, schema: patientResponse },
  },
  updatePatient: {
    method: 'PUT',
    path: '/medical/v1/patient/:id',
    auth: 'apiKey',
    tag: 'Patient',
    summary: "Replace a patient's demographics (with If-Match: only the version it names)",
    ifMatch: true,
    etag: true,
    success: { status: 200, schema: patientResponse },
  },
  removePatient: {
    method: 'DELETE',
    path: '/medical/v1/patient/:id',
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Remove a patient (with If-Match: only the version it names)',
    ifMatch: true,
    success: { status: 204 },
  },
  updatePatientHieOptOut: {
    method: 'PUT',
    path: '/medical/v1/patient/:id/hie-opt-out',
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Opt a patient out of (true) or back into (false) health information exchanges (with If-Match: only from the version it names)',
    ifMatch: true,
    etag: true,
    success: { status: 200, schema: hieOptOutResponse },
  },
  getPatientHieOptOut: {
    method: 'GET',
    path: '/medical/v1/patient/:id/hie-opt-out',
    auth: 'apiKey',
    tag: 'Patient',
    summary: "Read a patient's HIE opt-out status",
    success: { status: 200, schema: hieOptOutResponse },
  },
  // Bulk patient create
  startBulkPatientCreate: {
    method: 'POST',
    path: '/medical/v1/patient/bulk',
    auth: 'apiKey',
    tag: 'Bulk Patient Create',
    summary: 'Start a bulk patient create; returns the pre-signed URL to PUT the CSV to (valid 10 minutes, single use)',
    rate: 'create',
    success: { status: 200, schema: bulkStartResponse },
  },
  listBulkPatientCreates: {
    method: 'GET',
    path: '/medical/v1/patient/bulk',
    auth: 'apiKey',
    tag: 'Bulk Patient Create',
    summary: `The account's bulk patient creates with their outcome, newest first (at most ${BULK_LIST_MAX}, default 20)`,
    success: { status: 200, schema: bulkListResponse },
  },
  getBulkPatientCreate: {
    method: 'GET',
    path: '/medical/v1/patient/bulk/:requestId',
    auth: 'apiKey',
    tag: 'Bulk Patient Create',
    summary: 'Status and progress of a bulk patient create',
    success: { status: 200, schema: bulkStatusResponse },
  },
  uploadBulkPatientCsv: {
    method: 'PUT',
    path: '/medical/v1/patient/bulk/:requestId/upload',
    auth: 'signedAndApiKey',
    tag: 'Bulk Patient Create',
    summary: 'Upload the CSV to the pre-signed URL (x-api-key required too)',
    rawBody: 'text/csv',
    success: { status: 200, schema: bulkStatusResponse },
  },
  downloadBulkPatientCreateResult: {
    method: 'GET',
    path: '/medical/v1/patient/bulk/:requestId/result',
    auth: 'signed',
    tag: 'Bulk Patient Create',
    summary: 'Download the result CSV (pre-signed URL from the completed webhook or the status)',
    success: { status: 200, mediaType: 'text/csv' },
  },
  // Settings and webhooks: outside /medical/v1, as in the public Metriport API
  getSettings: {
    method: 'GET',
    path: '/settings',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Webhook settings of the account (URL, signing key, status)',
    success: { status: 200, schema: settingsResponse },
  },
  updateSettings: {
    method: 'POST',
    path: '/settings',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Set the webhook URL (pinged at once; an empty string clears it)',
    success: { status: 200, schema: settingsResponse },
  },
  rotateApiKey: {
    method: 'POST',
    path: '/settings/api-key/rotate',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Give the account a new API key, answered this once; the key that made the call stops working within a few seconds',
    success: { status: 200, schema: apiKeyRotationResponse },
  },
  getWebhookStatus: {
    method: 'GET',
    path: '/settings/webhook',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'The default endpoint (webhookUrl): enabled, detail, health, and its messages by state (pending, delivered, parked)',
    success: { status: 200, schema: webhookStatusResponse },
  },
  listParkedWebhookMessages: {
    method: 'GET',
    path: '/settings/webhook/parked',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Parked messages of the default endpoint (every attempt failed), oldest first, with their last error',
    success: { status: 200, schema: parkedMessagesResponse },
  },
  retryWebhookRequests: {
    method: 'POST',
    path: '/settings/webhook/retry',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Redeliver every parked message of the default endpoint (same messageId); other endpoints replay theirs',
    success: { status: 200, schema: webhookRetryResponse },
  },
  createWebhookEndpoint: {
    method: 'POST',
    path: '/settings/webhook/endpoints',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Add a webhook endpoint beside webhookUrl, with its own secret and event type filter (pinged at once)',
    success: { status: 201, schema: webhookEndpointResponse },
  },
  listWebhookEndpoints: {
    method: 'GET',
    path: '/settings/webhook/endpoints',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'The webhook endpoints of the account besides webhookUrl, oldest first (at most 20)',
    success: { status: 200, schema: webhookEndpointListResponse },
  },
  getWebhookEndpoint: {
    method: 'GET',
    path: '/settings/webhook/endpoints/:id',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'One webhook endpoint',
    success: { status: 200, schema: webhookEndpointResponse },
  },
  updateWebhookEndpoint: {
    method: 'PATCH',
    path: '/settings/webhook/endpoints/:id',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Change a webhook endpoint (a new URL is pinged; enabled: true re-enables it)',
    success: { status: 200, schema: webhookEndpointResponse },
  },
  removeWebhookEndpoint: {
    method: 'DELETE',
    path: '/settings/webhook/endpoints/:id',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Delete a webhook endpoint and the messages waiting for it',
    success: { status: 204 },
  },
  listWebhookAttempts: {
    method: 'GET',
    path: '/settings/webhook/attempts',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'The delivery log: every attempt to deliver a message to an endpoint, newest first, filtered and paged by cursor',
    success: { status: 200, schema: webhookAttemptPageResponse },
  },
  replayWebhookMessages: {
    method: 'POST',
    path: '/settings/webhook/endpoints/:id/replay',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Send messages again to one endpoint (`default`: webhookUrl), same messageId, in stream order: one message, every parked one, or a time window',
    success: { status: 200, schema: webhookReplayResponse },
  },
  sendWebhookTestEvent: {
    method: 'POST',
    path: '/settings/webhook/endpoints/:id/test',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Send a sample message of any type to one endpoint (`default`: webhookUrl) now, signed, with meta.test: true; answers what the receiver did',
    success: { status: 200, schema: webhookTestEventResponse },
  },
  rotateWebhookEndpointSecret: {
    method: 'POST',
    path: '/settings/webhook/endpoints/:id/rotate-secret',
    auth: 'apiKey',
    tag: 'Settings',
    summary: 'Give an endpoint a new secret; the old one keeps signing beside it for a grace period (default 24 h)',
    success: { status: 200, schema: webhookEndpointResponse },
  },
  // Documents
  startDocumentQuery: {
    method: 'POST',
    path: '/medical/v1/document/query',
    auth: 'apiKey',
    tag: 'Document',
    summary: 'Start a document query for the patient at the HIE networks (returns the running one if there is one); the outcome comes by webhook',
    rate: 'documentQuery',
    success: { status: 200, schema: documentQueryResponse },
  },
  getDocumentQueryStatus: {
    method: 'GET',
    path: '/medical/v1/document/query',
    auth: 'apiKey',
    tag: 'Document',
    summary: "Progress of the patient's latest document query (an empty object when there was none)",
    success: { status: 200, schema: latestDocumentQueryResponse },
  },
  listDocuments: {
    method: 'GET',
    path: '/medical/v1/document',
    auth: 'apiKey',
    tag: 'Document',
    summary: "The patient's documents as FHIR DocumentReferences (`output=dto` for the short form), oldest first",
    success: { status: 200, schema: documentListResponse },
  },
  getDocumentUrl: {
    method: 'GET',
    path: '/medical/v1/document/download-url',
    auth: 'apiKey',
    tag: 'Document',
    summary: 'A short-lived pre-signed URL to the file (or, for a C-CDA, its HTML or PDF rendering)',
    success: { status: 200, schema: urlResponse },
  },
  downloadDocument: {
    method: 'GET',
    path: '/medical/v1/document/file/:documentId',
    auth: 'signed',
    tag: 'Document',
    summary: 'Download a document file (pre-signed URL from download-url or the bulk URL webhook)',
    success: { status: 200, mediaType: 'application/octet-stream' },
  },
  downloadRenderedDocument: {
    method: 'GET',
    path: '/medical/v1/document/file/:documentId/:format',
    auth: 'signed',
    tag: 'Document',
    summary: 'Download a C-CDA document rendered as HTML or PDF (pre-signed URL from download-url)',
    success: { status: 200, mediaType: 'text/html' },
  },
  startBulkGetDocumentUrl: {
    method: 'POST',
    path: '/medical/v1/document/download-url/bulk',
    auth: 'apiKey',
    tag: 'Document',
    summary: "Send the download URLs of all the patient's documents by webhook (medical.document-bulk-download-urls; URLs valid 600 s)",
    rate: 'documentQuery',
    success: { status: 200, schema: bulkDownloadUrlsResponse },
  },
  createDocumentReference: {
    method: 'POST',
    path: '/medical/v1/document/upload',
    auth: 'apiKey',
    tag: 'Document',
    summary: 'Describe a document you hold with a FHIR DocumentReference; returns its id and the pre-signed URL to PUT the file to (10 minutes, single use)',
    rate: 'create',
    success: { status: 200, schema: documentUploadResponse },
  },
  getDocumentUploadUrl: {
    method: 'POST',
    path: '/medical/v1/document/upload-url',
    auth: 'apiKey',
    tag: 'Document',
    deprecated: true,
    summary: 'As POST /document/upload, answering only the pre-signed upload URL (a JSON string); use /document/upload for the DocumentReference id too',
    success: { status: 200, schema: uploadUrlResponse },
  },
  uploadDocument: {
    method: 'PUT',
    path: '/medical/v1/document/upload/:documentId',
    auth: 'signed',
    tag: 'Document',
    summary: 'Upload the file of a document to its pre-signed URL; a C-CDA is converted like a document from a network',
    rawBody: 'application/xml',
    success: { status: 200, schema: documentUploadedResponse },
  },
  // Consolidated data
  startConsolidatedQuery: {
    method: 'POST',
    path: '/medical/v1/patient/:id/consolidated/query',
    auth: 'apiKey',
    tag: 'Consolidated',
    summary: 'Start a consolidated data query (one per patient at a time: while one runs, it is returned); the data comes by webhook (medical.consolidated-data) as json (with a gzip copy), html or pdf',
    rate: 'consolidated',
    success: { status: 200, schema: consolidatedQueryResponse },
  },
  getConsolidatedQueryStatus: {
    method: 'GET',
    path: '/medical/v1/patient/:id/consolidated/query',
    auth: 'apiKey',
    tag: 'Consolidated',
    summary: "The patient's consolidated data queries still running (`queries`, null when none) and the latest status",
    success: { status: 200, schema: consolidatedQueriesResponse },
  },
  getConsolidatedQuery: {
    method: 'GET',
    path: '/medical/v1/patient/:id/consolidated/query/:requestId',
    auth: 'apiKey',
    tag: 'Consolidated',
    summary: 'One consolidated data query',
    success: { status: 200, schema: consolidatedQueryResponse },
  },
  downloadConsolidatedData: {
    method: 'GET',
    path: '/medical/v1/patient/:id/consolidated/query/:requestId/:file',
    auth: 'signed',
    tag: 'Consolidated',
    summary: 'Download the data of a consolidated query (pre-signed URL from the medical.consolidated-data webhook, valid 10 minutes): data.json (a FHIR Bundle), data.json.gz, data.html or data.pdf',
    success: { status: 200, schema: fhirBundleResponse, otherMediaTypes: ['application/gzip', 'text/html', 'application/pdf'] },
  },
  getPatientConsolidated: {
    method: 'GET',
    path: '/medical/v1/patient/:id/consolidated',
    auth: 'apiKey',
    tag: 'Consolidated',
    summary: "The patient's consolidated data at once, as a FHIR searchset Bundle (filters as for the query)",
    rate: 'consolidated',
    success: { status: 200, schema: fhirBundleResponse },
  },
  addPatientResources: {
    method: 'PUT',
    path: '/medical/v1/patient/:id/consolidated',
    auth: 'apiKey',
    tag: 'Consolidated',
    summary: `Add your own FHIR resources (a Bundle of at most ${MAX_RESOURCES_PER_CALL}) to the patient's consolidated data, deduplicated with what documents brought; answers a transaction-response Bundle`,
    success: { status: 200, schema: transactionResponseBundle },
  },
  countPatientResources: {
    method: 'GET',
    path: '/medical/v1/patient/:id/consolidated/count',
    auth: 'apiKey',
    tag: 'Consolidated',
    summary: "How many resources the patient's consolidated data holds per resource type (filters as for the query)",
    success: { status: 200, schema: consolidatedCountResponse },
  },
  getMedicalRecordUrl: {
    method: 'GET',
    path: '/medical/v1/patient/:id/medical-record',
    auth: 'apiKey',
    tag: 'Consolidated',
    summary: "A URL (valid 10 minutes) to the patient's medical record summary, rendered now from the consolidated data as HTML or PDF",
    rate: 'consolidated',
    success: { status: 200, schema: urlResponse },
  },
  downloadMedicalRecord: {
    method: 'GET',
    path: '/medical/v1/patient/:id/medical-record/:recordId/:file',
    auth: 'signed',
    tag: 'Consolidated',
    summary: 'Download a medical record summary (pre-signed URL from medical-record, valid 10 minutes)',
    success: { status: 200, mediaType: 'text/html' },
  },
  searchPatientData: {
    method: 'GET',
    path: '/medical/v1/patient/:id/consolidated/search',
    auth: 'apiKey',
    tag: 'Consolidated',
    deprecated: true,
    summary: "Search the patient's consolidated data and C-CDA documents (all terms, typo-tolerant); returns a URL to a FHIR searchset bundle valid 60 s, absent when nothing matched",
    rate: 'consolidated',
    success: { status: 200, schema: searchResponse },
  },
  downloadSearchResult: {
    method: 'GET',
    path: '/medical/v1/patient/:id/consolidated/search/:searchId',
    auth: 'signed',
    tag: 'Consolidated',
    deprecated: true,
    summary: 'Download a search result bundle (pre-signed URL from the search, valid 60 s)',
    success: { status: 200, schema: fhirBundleResponse, mediaType: 'application/fhir+json' },
  },
  // Network query
  startNetworkQuery: {
    method: 'POST',
    path: '/medical/v1/network/query',
    auth: 'apiKey',
    tag: 'Network',
    summary: "Query the networks for the patient's data: sources hie (documents), pharmacy (medications) and lab (results). Each source ends with its own webhook (network-query.hie, .pharmacy, .lab); a query still running for the patient is returned",
    rate: 'documentQuery',
    success: { status: 200, schema: networkQueryResponse },
  },
  getNetworkQuery: {
    method: 'GET',
    path: '/medical/v1/network/query/:requestId',
    auth: 'apiKey',
    tag: 'Network',
    summary: 'The status of a network query and of each of its sources',
    success: { status: 200, schema: networkQueryResponse },
  },
  downloadNetworkQueryConsolidated: {
    method: 'GET',
    path: '/medical/v1/network/query/:requestId/consolidated',
    auth: 'signed',
    tag: 'Network',
    summary: "The patient's consolidated data as a FHIR collection Bundle (pre-signed URL from a network-query webhook, valid 10 minutes)",
    rate: 'consolidated',
    success: { status: 200, schema: fhirBundleResponse },
  },
  listNetworkEntries: {
    method: 'GET',
    path: '/medical/v1/network-entry',
    auth: 'apiKey',
    tag: 'Network',
    summary: 'The directory of the organizations the (sandbox) networks reach, by name, paged',
    success: { status: 200, schema: networkEntriesResponse },
  },
  // Calls of the published Metriport SDK that carebridge does not serve
  syncPatient: notServed('POST', '/medical/v1/patient/:id/external/sync', 'syncPatient', 'it maps patients to EHR systems (Healthie, Elation...), and carebridge connects to none'),
  updatePatientTreatmentRelationship: notServed('PUT', '/medical/v1/patient/:id/treatment-relationship', 'updatePatientTreatmentRelationship', 'treatment-relationship consent gates exchange on production networks; the sandbox networks ask for none, and opt-out (hie-opt-out) is the consent carebridge enforces'),
  sendMessage: notServed('POST', '/medical/v1/message', 'sendMessage', MESSAGING),
  listMessages: notServed('GET', '/medical/v1/message', 'listMessages', MESSAGING),
  getMessage: notServed('GET', '/medical/v1/message/:messageId', 'getMessage', MESSAGING),
  createEmbedToken: notServed('POST', '/medical/v1/token/embed', 'createEmbedToken', 'carebridge ships no embeddable user interface components for such a token to open'),
} as const satisfies Record<string, Endpoint>;

export type EndpointName = keyof typeof ENDPOINTS;
export type EndpointOf<N extends EndpointName> = (typeof ENDPOINTS)[N];
/** The path params of endpoint `N`, by name. */
export type EndpointParams<N extends EndpointName> = PathParams<EndpointOf<N>['path']>;

/**
 * `path` with each `:name` segment replaced by its value in `params`, percent-encoded. A value is encoded
 * as its string whatever it is, as the client always sent it: an untyped caller's mistake reaches the
 * service as a path that names nothing rather than failing in the client.
 */
export function fillPath<P extends string>(path: P, params: PathParams<P>): string {
  const values = params as Record<string, unknown>;
  return path.replace(/:([A-Za-z0-9_]+)/g, (_segment, name: string) => encodeURIComponent(String(values[name])));
}

/** The method and path of a request to endpoint `name`; `params` fills its path's `:name` segments (when it has any). */
export function requestTo<N extends EndpointName>(
  name: N,
  ...[params]: keyof EndpointParams<N> extends never ? [] : [params: EndpointParams<N>]
): { method: EndpointOf<N>['method']; path: string } {
  const endpoint: Endpoint = ENDPOINTS[name];
  return { method: ENDPOINTS[name].method, path: fillPath(endpoint.path, (params ?? {}) as PathParams<string>) };
}
