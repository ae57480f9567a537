/**
 * Domain records as the core sees them. Wire shapes (core/api) follow the public Metriport API; these
 * are what the ports store. Timestamps are ISO 8601 UTC strings so every adapter stores them the same way.
 */

export type Gender = 'M' | 'F' | 'O' | 'U';

export interface Address {
  addressLine1: string;
  addressLine2?: string;
  city: string;
  /** 2-letter USPS code, upper case. */
  state: string;
  /** 5 digits. */
  zip: string;
  country: string;
}

export interface Contact {
  /** 10 digits, no separators. */
  phone?: string;
  email?: string;
}

export type PersonalIdentifier =
  | { type: 'ssn'; value: string }
  | { type: 'driversLicense'; value: string; state: string };

export interface Account {
  id: string;
  name: string;
  /** SHA-256 hex of the API key; the key itself is never stored. */
  apiKeyHash: string;
  /** First characters of the key, shown to people so they can tell keys apart. */
  apiKeyPrefix: string;
  createdAt: string;
}

export type WebhookHealth = 'healthy' | 'unhealthy' | 'disabled' | 'unset';

export interface WebhookSettings {
  accountId: string;
  webhookUrl: string | null;
  /** Secret the service signs webhook bodies with. */
  webhookKey: string;
  webhookEnabled: boolean;
  webhookStatusDetail: string | null;
  /**
   * The default endpoint's failure clock: the first failed attempt since its last successful delivery (or
   * since its URL was last set); absent while it is healthy. See `WebhookEndpoint.failingSince`.
   */
  failingSince?: string;
  updatedAt: string;
}

/**
 * A webhook endpoint of the account beside its default one (`WebhookSettings.webhookUrl`): the messages
 * whose type its filter takes are delivered to it, signed with its own secret.
 */
export interface WebhookEndpoint {
  id: string;
  accountId: string;
  url: string;
  description: string;
  /** Off: the endpoint gets no new messages, and those stored for it wait (pending) until it is on again. */
  enabled: boolean;
  /**
   * The message types it receives: exact types (`medical.document-conversion`) or a prefix ending in `.*`
   * (`network-query.*`); empty means every type.
   */
  eventTypes: string[];
  /** The signing secret, `whsec_` + base64 of the HMAC key bytes. */
  secret: string;
  /**
   * The secret before the last rotation, still signing beside `secret` until `previousSecretUntil` (the
   * grace period), so receivers can switch to the new one without missing a message.
   */
  previousSecret?: string;
  previousSecretUntil?: string;
  /** What last happened to it, in words (ping outcome, unhealthy, disabled); null when nothing to say. */
  statusDetail: string | null;
  /**
   * The failure clock: the first failed attempt since the endpoint's last successful delivery (or since it
   * was last enabled); absent while it is healthy. An endpoint failing for the configured time is disabled.
   * Written only through the repository's failure-clock methods, never by `update`.
   */
  failingSince?: string;
  createdAt: string;
  updatedAt: string;
}

export interface Organization {
  id: string;
  accountId: string;
  oid: string;
  name: string;
  type: string;
  location: Address;
  createdAt: string;
  updatedAt: string;
}

export interface Facility {
  id: string;
  accountId: string;
  oid: string;
  name: string;
  npi: string;
  tin?: string;
  active: boolean;
  address: Address;
  createdAt: string;
  updatedAt: string;
}

export interface Cohort {
  id: string;
  accountId: string;
  name: string;
  description?: string;
  createdAt: string;
  updatedAt: string;
}

export interface Patient {
  id: string;
  accountId: string;
  facilityIds: string[];
  cohortIds: string[];
  externalId?: string;
  /** As given: several names separated by commas or spaces. */
  firstName: string;
  lastName: string;
  /** YYYY-MM-DD */
  dob: string;
  genderAtBirth: Gender;
  address: Address[];
  contact: Contact[];
  personalIdentifiers: PersonalIdentifier[];
  hieOptOut: boolean;
  /**
   * Blocking keys for demographic matching (see core/matching/block.ts): derived from the
   * demographics, stored so a candidate lookup is an index hit, never a scan.
   */
  matchKeys: string[];
  /**
   * How many times the stored patient was written: 1 when created, one more with every update (the
   * storage counts, see PatientRepository.update). A write states the version it read, so one made from a
   * stale read is refused rather than silently undoing another; it is also the patient resource's ETag.
   */
  version: number;
  createdAt: string;
  updatedAt: string;
}

export type BulkStatus = 'waiting' | 'processing' | 'completed' | 'failed' | 'expired';

export interface BulkRequest {
  id: string;
  accountId: string;
  facilityId: string;
  dryRun: boolean;
  status: BulkStatus;
  reason?: string;
  /** Data rows in the file, known once the file has been read. */
  total?: number;
  processed: number;
  succeeded: number;
  failed: number;
  /** Rows that created a patient, and rows that updated one (in a dry run: that would have). */
  created: number;
  updated: number;
  /** Header cells of the columns the importer does not know, known once the file has been read. */
  ignoredColumns?: string[];
  /** Set while a `processing` import waits for a condition outside it to pass; cleared by its next batch. */
  paused?: BulkPause;
  /** Blob key of the uploaded CSV. */
  uploadKey: string;
  /** Blob key of the result CSV, once completed. */
  resultKey?: string;
  /** Upload URL validity end (10 minutes). */
  expiresAt: string;
  metadata?: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

/** Why an import waits, and since when: the storage was full (it resumes by itself once space is freed). */
export interface BulkPause {
  code: 'STORAGE_FULL';
  /** ISO instant of the first refused write of this pause. */
  since: string;
}

export type RowStatus = 'succeeded' | 'failed';

/** The outcome of one data row of a bulk file; rowIndex counts data rows from 0 (header excluded). */
export interface BulkRowOutcome {
  requestId: string;
  rowIndex: number;
  status: RowStatus;
  action?: 'created' | 'updated' | 'validated';
  patientId?: string;
  reason?: string;
}

export interface CodeableConcept {
  coding?: { system?: string; code?: string; display?: string }[];
  text?: string;
}

export interface OrganizationIdentifier {
  name: string;
  identifierValues: string[];
}

export type StepStatus = 'processing' | 'completed' | 'failed';

export interface DocumentRecord {
  id: string;
  accountId: string;
  patientId: string;
  /** The document query that fetched it; absent for customer uploads. */
  queryId?: string;
  /**
   * Where it came from: an HIE document, a customer's upload (a file, or FHIR resources sent to the
   * consolidated store), or the answer of the pharmacy or laboratory network to a network query.
   */
  source: 'hie' | 'upload' | 'pharmacy' | 'lab';
  fileName: string;
  description: string;
  status: string;
  indexed: string;
  mimeType: string;
  size: number;
  type: CodeableConcept;
  organizationIdentifiers: OrganizationIdentifier[];
  blobKey: string;
  conversionStatus: StepStatus | 'not-applicable' | 'waiting-upload';
  conversionError?: string;
  createdAt: string;
}

export interface ProgressCounts {
  status: StepStatus;
  total: number;
  successful: number;
  errors: number;
}

export interface DocumentQuery {
  id: string;
  accountId: string;
  patientId: string;
  facilityId: string;
  download: ProgressCounts;
  convert: ProgressCounts;
  metadata?: Record<string, string>;
  /** The bulk import that started this query, when one did. */
  bulkRequestId?: string;
  createdAt: string;
  updatedAt: string;
}

/** Where a document query stands as a whole: `processing` until both its steps have ended. */
export type DocumentQueryState = 'processing' | 'completed' | 'failed';

export function documentQueryState(query: Pick<DocumentQuery, 'download' | 'convert'>): DocumentQueryState {
  if (query.download.status === 'processing' || query.convert.status === 'processing') return 'processing';
  return query.download.status === 'failed' || query.convert.status === 'failed' ? 'failed' : 'completed';
}

/** How far the document queries an import started have come. */
export interface BulkQueriesProgress {
  /** Queries the import has started so far (its patients not opted out). */
  total: number;
  processing: number;
  completed: number;
  failed: number;
}

export interface FhirResourceRecord {
  accountId: string;
  patientId: string;
  resourceType: string;
  id: string;
  resource: Record<string, unknown>;
  /** Documents this resource was seen in (deduplication merges these). */
  sourceDocumentIds: string[];
  updatedAt: string;
}

/**
 * A FhirResourceRecord with its resource as JSON text, as its row holds it: what crosses to the thread
 * that folds documents into the record and back, where an object would be copied field by field.
 */
export type FhirResourceJson = Omit<FhirResourceRecord, 'resource'> & { resourceJson: string };

export type ConversionType = 'json' | 'html' | 'pdf';

export interface ConsolidatedFilters {
  resources?: string;
  dateFrom?: string;
  dateTo?: string;
}

export interface ConsolidatedQuery {
  id: string;
  accountId: string;
  patientId: string;
  status: StepStatus;
  filters: ConsolidatedFilters;
  conversionType: ConversionType;
  metadata?: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

/** The kinds of network a network query asks, in the order their sources are listed. */
export const NETWORK_SOURCES = ['hie', 'pharmacy', 'lab'] as const;
export type NetworkSource = (typeof NETWORK_SOURCES)[number];

/** One source of a network query and how far it has come. */
export interface NetworkQuerySource {
  type: NetworkSource;
  status: StepStatus;
  startedAt: string;
  completedAt?: string;
  /** The hie source runs as a document query: this one. */
  documentQueryId?: string;
}

/** Where a network query stands as a whole: `partial` when some sources completed and some failed. */
export type NetworkQueryStatus = 'processing' | 'completed' | 'partial' | 'failed';

export interface NetworkQuery {
  id: string;
  accountId: string;
  patientId: string;
  facilityId: string;
  /** In the order asked; each source once. */
  sources: NetworkQuerySource[];
  metadata?: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

export function networkQueryStatus(query: Pick<NetworkQuery, 'sources'>): NetworkQueryStatus {
  if (query.sources.some((source) => source.status === 'processing')) return 'processing';
  const failed = query.sources.filter((source) => source.status === 'failed').length;
  if (failed === 0) return 'completed';
  return failed === query.sources.length ? 'failed' : 'partial';
}

export type { WebhookMessageType } from '../../contract/webhooks.js';
import type { WebhookMessageType } from '../../contract/webhooks.js';

export type OutboxStatus = 'pending' | 'delivered' | 'parked';

/** A webhook message in the outbox: stored with the change that caused it, delivered later. */
export interface OutboxMessage {
  /** meta.messageId: the same on every attempt. */
  id: string;
  accountId: string;
  type: WebhookMessageType;
  /** The full JSON body as sent, meta included, serialised once so every retry sends the same bytes. */
  body: string;
  /**
   * Messages with the same stream key (within the account) are delivered in creation order; messages of
   * different streams are independent, so one failing never holds back another stream. A delivery to an
   * extra endpoint has the message's stream key suffixed with the endpoint, so each endpoint's copy of a
   * stream is ordered on its own and never waits for another endpoint's.
   */
  streamKey: string;
  /**
   * The endpoint this delivery goes to; absent for the account's default endpoint (`webhookUrl`). One
   * message is stored once per endpoint it goes to (fan-out when it is stored).
   */
  endpointId?: string;
  /**
   * meta.messageId (`webhook-id`) when it differs from `id`: a delivery to an extra endpoint has an id of
   * its own (`deliveryIdOf`), while every endpoint receives the message under the same message id.
   */
  messageId?: string;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: string;
  lastError?: string;
  createdAt: string;
  deliveredAt?: string;
  /** The patient the message is about, when it is about one (for the delivery log's filter). */
  patientId?: string;
}

/**
 * One attempt to deliver a message to an endpoint, as the delivery log shows it. Kept for the retention
 * period, whatever became of the message.
 */
export interface WebhookAttempt {
  id: string;
  accountId: string;
  /** The outbox record attempted (`OutboxMessage.id`). */
  deliveryId: string;
  /** meta.messageId, the same for every endpoint and attempt. */
  messageId: string;
  /** Absent for the default endpoint (`webhookUrl`). */
  endpointId?: string;
  type: WebhookMessageType;
  patientId?: string;
  attemptedAt: string;
  outcome: 'delivered' | 'failed';
  /** The receiver's HTTP status; absent when none came (timeout, refused connection). */
  statusCode?: number;
  latencyMs: number;
  /** Why it failed, in the customer's words (never the service's network details). */
  error?: string;
  /** A test event's attempt (`POST /settings/webhook/endpoints/{id}/test`): a sample, not a stored message. */
  test?: boolean;
}

/** Which attempts of the account a delivery log page holds. */
export interface WebhookAttemptFilter {
  /** An extra endpoint's id, or `null` for the default endpoint; absent: every endpoint. */
  endpointId?: string | null;
  type?: WebhookMessageType;
  patientId?: string;
  outcome?: WebhookAttempt['outcome'];
  /** attemptedAt >= since */
  since?: string;
  /** attemptedAt < until */
  until?: string;
}

/** A message count of one endpoint: pending (failing: pending after a failed attempt), delivered, parked. */
export interface EndpointMessageCounts {
  /** `null` for the default endpoint. */
  endpointId: string | null;
  pending: number;
  failing: number;
  delivered: number;
  parked: number;
}
