/*
 * The client's types, all from the wire contract (contract/): the request shapes the service validates
 * against, and the output types of the response schemas the service's answers are checked against (and
 * the OpenAPI document publishes). Nothing else of the service is imported, so a change inside the service
 * cannot change the client's public types; a change of the contract can, and is visible as one.
 */
import type { z } from 'zod';
import type * as wire from '../contract/responses.js';

// Requests: what the service accepts (before its normalisation), so `zip: 62701` or one address object pass.
export type { CohortCreate, FacilityCreate, OrganizationCreate, PatientCreate, SettingsUpdate, WebhookEndpointCreate, WebhookEndpointUpdate, WebhookReplay, WebhookSecretRotation, WebhookTestEvent } from '../contract/requests.js';

// Responses: what the service sends.
export type Organization = z.output<typeof wire.organizationResponse>;
export type Facility = z.output<typeof wire.facilityResponse>;
export type Cohort = z.output<typeof wire.cohortResponse>;
export type Patient = z.output<typeof wire.patientResponse>;
export type PatientPage = z.output<typeof wire.patientPageResponse>;
export type HieOptOutUpdate = z.output<typeof wire.hieOptOutResponse>;
export type HieOptOutStatus = z.output<typeof wire.hieOptOutResponse>;
export type BulkPatientCreateStart = z.output<typeof wire.bulkStartResponse>;
export type BulkPatientCreate = z.output<typeof wire.bulkStatusResponse>;
export type BulkPatientCreateList = z.output<typeof wire.bulkListResponse>;
export type ApiKeyRotation = z.output<typeof wire.apiKeyRotationResponse>;
export type Settings = z.output<typeof wire.settingsResponse>;
export type WebhookStatus = z.output<typeof wire.webhookStatusResponse>;
export type WebhookRetry = z.output<typeof wire.webhookRetryResponse>;
export type WebhookEndpoint = z.output<typeof wire.webhookEndpointResponse>;
export type WebhookEndpointList = z.output<typeof wire.webhookEndpointListResponse>;
export type WebhookAttemptPage = z.output<typeof wire.webhookAttemptPageResponse>;
export type WebhookReplayResult = z.output<typeof wire.webhookReplayResponse>;
export type WebhookTestEventResult = z.output<typeof wire.webhookTestEventResponse>;
export type DocumentQuery = z.output<typeof wire.documentQueryResponse>;
export type ConsolidatedQuery = z.output<typeof wire.consolidatedQueryResponse>;
export type ConsolidatedBundle = z.output<typeof wire.fhirBundleResponse>;
export type BulkDocumentUrlRequest = z.output<typeof wire.bulkDownloadUrlsResponse>;
export type DocumentUpload = z.output<typeof wire.documentUploadResponse>;
export type ConsolidatedSearch = z.output<typeof wire.searchResponse>;
/** How consolidated data is delivered: FHIR JSON (with a gzip copy), an HTML or a PDF summary. */
export type ConversionType = 'json' | 'html' | 'pdf';
/** Any FHIR resource: its type, its id, and the rest as the service sends it. */
export type FhirResource = { resourceType: string; id?: string } & Record<string, unknown>;
export type PatientFacilities = z.output<typeof wire.patientFacilitiesResponse>['facilities'];
export type CohortMembersChange = z.output<typeof wire.cohortMembersResponse>;
export type PatientCohorts = z.output<typeof wire.cohortListResponse>['cohorts'];
/** The answer to resources added to the consolidated store (a FHIR transaction-response Bundle). */
export type AddedResources = z.output<typeof wire.transactionResponseBundle>;
export type ConsolidatedCount = z.output<typeof wire.consolidatedCountResponse>;
export type NetworkQuery = z.output<typeof wire.networkQueryResponse>;
export type NetworkEntry = z.output<typeof wire.networkEntriesResponse>['networkEntries'][number];
export type NetworkSource = 'hie' | 'pharmacy' | 'lab';

/** One page of the network directory; `nextCursor` (absent on the last page) is the `fromItem` of the next. */
export interface NetworkEntryPage {
  networkEntries: NetworkEntry[];
  meta: { itemsOnPage: number; nextPage?: string };
  nextCursor?: string;
}

export interface ListNetworkEntriesOptions {
  /** Words that must all appear in the name, city, state, zip, NPI or OID. */
  filter?: string;
  npi?: string;
  oid?: string;
  /** Only entries that take messages. */
  supportsMessaging?: boolean;
  active?: boolean;
  /** Page size, 1..500 (100 when absent). */
  count?: number;
  /** From `nextCursor` of the previous page. */
  cursor?: string;
}

/** Who joins or leaves a cohort: some patients, or every patient of the account (said explicitly). */
export type CohortMembers = { patientIds: readonly string[]; allPatients?: never } | { allPatients: true; patientIds?: never };

/** `GET /patient/{id}/consolidated/query`: the queries still running (null when none) and the latest status. */
export interface ConsolidatedQueryStatus {
  status: ConsolidatedQuery['status'];
  queries: ConsolidatedQuery[] | null;
  message?: string;
}

/** The answer to the PUT of a document's file: the service converts a C-CDA like a network document. */
export interface UploadedDocument {
  documentReferenceId: string;
  fileName: string;
  size: number;
}

/** The short form of a document (`output=dto`), as in the public API's `listDocumentsAsDTO`. */
export interface DocumentSummary {
  id: string;
  fileName: string;
  description: string;
  status: string;
  indexed: string;
  mimeType: string;
  size: number;
  type: { coding?: { system?: string; code?: string; display?: string }[]; text?: string };
}

/** How a bulk patient create runs. */
export interface BulkPatientCreateOptions {
  /** The facility the patients are created in; may be left out when the account has one facility. */
  facilityId?: string;
  /** Only validate the rows: no patient is created or changed. */
  dryRun?: boolean;
}

/** Custom string key-value metadata echoed as `meta.data` of the webhooks (at most 50 pairs). */
export type WebhookRequestMetadata = Record<string, string>;

export interface ListDocumentsOptions {
  /** `YYYY-MM-DD` (or a full ISO date-time): documents dated on or after. */
  dateFrom?: string;
  dateTo?: string;
  /** At least 3 characters found in the description, type or title. */
  content?: string;
  count?: number;
}

export interface ConsolidatedFiltersInput {
  /** FHIR resource type names (case-sensitive); all when absent. */
  resources?: readonly string[] | string;
  /** `YYYY-MM-DD`, inclusive. */
  dateFrom?: string;
  dateTo?: string;
}

export interface ConsolidatedQueryOptions extends ConsolidatedFiltersInput {
  /** json (default; with a gzip copy), html or pdf. */
  conversionType?: ConversionType;
  metadata?: WebhookRequestMetadata;
}

export interface ListPatientsOptions {
  facilityId?: string;
  /** Page size, 1..500 (50 when absent). */
  count?: number;
  /** From `nextCursor` of the previous page. */
  cursor?: string;
  /** Words of a first or last name, each beginning one of the patient's names, case and accents aside. */
  name?: string;
  /** Date of birth, YYYY-MM-DD. */
  dob?: string;
  /** The patient ID in your system, exactly. */
  externalId?: string;
}
