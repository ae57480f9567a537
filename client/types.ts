/*
 * The client's types, derived from what the service itself validates with and answers with: zod input
 * types of the request schemas, and the return types of the functions that build the wire shapes. One
 * source of truth: change a schema or a `*ToWire` and the client's types follow. Type-only imports, so
 * none of the service's code is loaded by the client.
 */
import type { z } from 'zod';
import type { bulkStartToWire, bulkStatusToWire } from '../core/api/routes/bulk.routes.js';
import type { patientPageToWire } from '../core/api/routes/entities.routes.js';
import type {
  cohortCreateSchema,
  facilityCreateSchema,
  organizationCreateSchema,
  patientCreateSchema,
  settingsUpdateSchema,
} from '../core/api/schemas.js';
import type { ConversionType, DocumentRecord } from '../core/domain/types.js';
import type { getPatientConsolidated } from '../core/documents/consolidated.js';
import type { addPatientResources, countPatientResources } from '../core/documents/patient-data.js';
import type { listNetworkEntries, networkQueryToWire } from '../core/network/query.js';
import type { changeCohortMembers, cohortsOfPatient } from '../core/entities/cohort-members.js';
import type { BulkUrlRequest } from '../core/documents/downloads.js';
import type { SearchOutcome } from '../core/documents/search.js';
import type { CreatedUpload } from '../core/documents/upload.js';
import type { consolidatedQueryToWire, documentQueryToWire } from '../core/documents/wire.js';
import type { cohortToWire } from '../core/entities/cohorts.js';
import type { facilityToWire } from '../core/entities/facilities.js';
import type { organizationToWire } from '../core/entities/organization.js';
import type { getHieOptOut, getPatientFacilities, patientToWire, setHieOptOut } from '../core/entities/patients.js';
import type { FhirResource } from '../core/ports/ccda.port.js';
import type { settingsToWire } from '../core/settings.js';
import type { WebhookStatus as CoreWebhookStatus } from '../core/webhooks/deliver.js';

// Requests: what the service accepts (before its normalisation), so `zip: 62701` or one address object pass.
export type OrganizationCreate = z.input<typeof organizationCreateSchema>;
export type FacilityCreate = z.input<typeof facilityCreateSchema>;
export type CohortCreate = z.input<typeof cohortCreateSchema>;
export type PatientCreate = z.input<typeof patientCreateSchema>;
export type SettingsUpdate = z.input<typeof settingsUpdateSchema>;

// Responses: what the service sends.
export type Organization = ReturnType<typeof organizationToWire>;
export type Facility = ReturnType<typeof facilityToWire>;
export type Cohort = ReturnType<typeof cohortToWire>;
export type Patient = ReturnType<typeof patientToWire>;
export type PatientPage = ReturnType<typeof patientPageToWire>;
export type HieOptOutUpdate = Awaited<ReturnType<typeof setHieOptOut>>;
export type HieOptOutStatus = Awaited<ReturnType<typeof getHieOptOut>>;
export type BulkPatientCreateStart = ReturnType<typeof bulkStartToWire>;
export type BulkPatientCreate = ReturnType<typeof bulkStatusToWire>;
export type Settings = ReturnType<typeof settingsToWire>;
export type WebhookStatus = CoreWebhookStatus;
export type WebhookRetry = { retried: number };
export type DocumentQuery = ReturnType<typeof documentQueryToWire>;
export type ConsolidatedQuery = ReturnType<typeof consolidatedQueryToWire>;
export type ConsolidatedBundle = Awaited<ReturnType<typeof getPatientConsolidated>>;
export type BulkDocumentUrlRequest = BulkUrlRequest;
export type DocumentUpload = CreatedUpload;
export type ConsolidatedSearch = SearchOutcome;
export type { ConversionType, FhirResource };
export type PatientFacilities = Awaited<ReturnType<typeof getPatientFacilities>>['facilities'];
export type CohortMembersChange = Awaited<ReturnType<typeof changeCohortMembers>>;
export type PatientCohorts = Awaited<ReturnType<typeof cohortsOfPatient>>['cohorts'];
/** The answer to resources added to the consolidated store (a FHIR transaction-response Bundle). */
export type AddedResources = Awaited<ReturnType<typeof addPatientResources>>;
export type ConsolidatedCount = Awaited<ReturnType<typeof countPatientResources>>;
export type NetworkQuery = ReturnType<typeof networkQueryToWire>;
export type NetworkEntry = Awaited<ReturnType<typeof listNetworkEntries>>['networkEntries'][number];
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
export type DocumentSummary = Pick<DocumentRecord, 'id' | 'fileName' | 'description' | 'status' | 'indexed' | 'mimeType' | 'size' | 'type'>;

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
}
