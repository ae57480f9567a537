import { documentQueryState, networkQueryStatus } from '../../../core/domain/types.js';
import type {
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
  WebhookAttempt,
  WebhookEndpoint,
  Patient,
  WebhookSettings,
} from '../../../core/domain/types.js';
import type { Row } from './schema.js';
import type { MatchKeyHasher } from './match-key-hash.js';
import { columnsOf, type ColumnKind, type TableName } from './schema.js';

export type { ColumnKind } from './schema.js';
export type Columns = readonly (readonly [name: string, kind: ColumnKind])[];

function columnList(table: TableName): Columns {
  return columnsOf(table).map((column) => [column.name, column.kind] as const);
}

/** Columns of `patients`, in the order of `RowMapper.pushPatientValues`. */
export const PATIENT_COLUMNS: Columns = columnList('patients');

/** Columns of `patient_key_hashes`, in the order of `RowMapper.keyHashValues`. */
export const KEY_HASH_COLUMNS: Columns = columnList('patient_key_hashes');

/** Columns of `bulk_rows`, in the order of `RowMapper.bulkRowValues`. */
export const BULK_ROW_COLUMNS: Columns = columnList('bulk_rows');

/**
 * Domain record <-> table row. Optional fields are NULL in a row and absent (not `undefined`) in a record,
 * so a record read back equals the one written. Reads are `raw`, so each dialect's own representation is
 * normalised here: SQLite gives booleans as 0/1 and JSON as text, PostgreSQL gives JSON as values and
 * BIGINT as strings.
 */
export class RowMapper {
  constructor(
    private readonly postgres: boolean,
    /** The blocking-key index's hash (see `match-key-hash.ts`). */
    readonly hashOf: MatchKeyHasher,
  ) {}

  private json(value: unknown): unknown {
    if (value === undefined || value === null) return null;
    return this.postgres ? value : JSON.stringify(value);
  }

  private parse<T>(value: unknown): T {
    return (typeof value === 'string' ? JSON.parse(value) : value) as T;
  }

  accountRow(account: Account): Row {
    return {
      id: account.id,
      name: account.name,
      api_key_hash: account.apiKeyHash,
      api_key_prefix: account.apiKeyPrefix,
      created_at: account.createdAt,
    };
  }

  account(row: Row): Account {
    return {
      id: str(row.id),
      name: str(row.name),
      apiKeyHash: str(row.api_key_hash),
      apiKeyPrefix: str(row.api_key_prefix),
      createdAt: str(row.created_at),
    };
  }

  webhookSettingsRow(settings: WebhookSettings): Row {
    return {
      account_id: settings.accountId,
      webhook_url: settings.webhookUrl,
      webhook_key: settings.webhookKey,
      webhook_enabled: settings.webhookEnabled,
      webhook_status_detail: settings.webhookStatusDetail,
      updated_at: settings.updatedAt,
      failing_since: settings.failingSince ?? null,
    };
  }

  webhookSettings(row: Row): WebhookSettings {
    return optional<WebhookSettings>(
      {
        accountId: str(row.account_id),
        webhookUrl: nullable(row.webhook_url),
        webhookKey: str(row.webhook_key),
        webhookEnabled: bool(row.webhook_enabled),
        webhookStatusDetail: nullable(row.webhook_status_detail),
        updatedAt: str(row.updated_at),
      },
      { failingSince: row.failing_since },
    );
  }

  webhookAttemptRow(attempt: WebhookAttempt): Row {
    return {
      id: attempt.id,
      account_id: attempt.accountId,
      delivery_id: attempt.deliveryId,
      message_id: attempt.messageId,
      endpoint_id: attempt.endpointId ?? null,
      type: attempt.type,
      patient_id: attempt.patientId ?? null,
      attempted_at: attempt.attemptedAt,
      outcome: attempt.outcome,
      status_code: attempt.statusCode ?? null,
      latency_ms: attempt.latencyMs,
      error: attempt.error ?? null,
      test: attempt.test ? true : null,
    };
  }

  webhookAttempt(row: Row): WebhookAttempt {
    return optional<WebhookAttempt>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        deliveryId: str(row.delivery_id),
        messageId: str(row.message_id),
        type: str(row.type) as WebhookAttempt['type'],
        attemptedAt: str(row.attempted_at),
        outcome: str(row.outcome) as WebhookAttempt['outcome'],
        latencyMs: Number(row.latency_ms),
      },
      {
        endpointId: row.endpoint_id,
        patientId: row.patient_id,
        statusCode: row.status_code === null || row.status_code === undefined ? undefined : Number(row.status_code),
        error: row.error,
        test: row.test === null || row.test === undefined ? undefined : bool(row.test) || undefined,
      },
    );
  }

  webhookEndpointRow(endpoint: WebhookEndpoint): Row {
    return {
      id: endpoint.id,
      account_id: endpoint.accountId,
      url: endpoint.url,
      description: endpoint.description,
      enabled: endpoint.enabled,
      event_types: this.json(endpoint.eventTypes),
      secret: endpoint.secret,
      previous_secret: endpoint.previousSecret ?? null,
      previous_secret_until: endpoint.previousSecretUntil ?? null,
      status_detail: endpoint.statusDetail,
      created_at: endpoint.createdAt,
      updated_at: endpoint.updatedAt,
      failing_since: endpoint.failingSince ?? null,
    };
  }

  webhookEndpoint(row: Row): WebhookEndpoint {
    return optional<WebhookEndpoint>(
      {
      id: str(row.id),
      accountId: str(row.account_id),
      url: str(row.url),
      description: str(row.description),
      enabled: bool(row.enabled),
      eventTypes: this.parse<string[]>(row.event_types),
      secret: str(row.secret),
      statusDetail: nullable(row.status_detail),
      createdAt: str(row.created_at),
      updatedAt: str(row.updated_at),
      },
      { previousSecret: row.previous_secret, previousSecretUntil: row.previous_secret_until, failingSince: row.failing_since },
    );
  }

  organizationRow(org: Organization): Row {
    return {
      id: org.id,
      account_id: org.accountId,
      oid: org.oid,
      name: org.name,
      type: org.type,
      location: this.json(org.location),
      created_at: org.createdAt,
      updated_at: org.updatedAt,
    };
  }

  organization(row: Row): Organization {
    return {
      id: str(row.id),
      accountId: str(row.account_id),
      oid: str(row.oid),
      name: str(row.name),
      type: str(row.type),
      location: this.parse(row.location),
      createdAt: str(row.created_at),
      updatedAt: str(row.updated_at),
    };
  }

  facilityRow(facility: Facility): Row {
    return {
      id: facility.id,
      account_id: facility.accountId,
      oid: facility.oid,
      name: facility.name,
      npi: facility.npi,
      tin: facility.tin ?? null,
      active: facility.active,
      address: this.json(facility.address),
      created_at: facility.createdAt,
      updated_at: facility.updatedAt,
    };
  }

  facility(row: Row): Facility {
    return optional<Facility>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        oid: str(row.oid),
        name: str(row.name),
        npi: str(row.npi),
        active: bool(row.active),
        address: this.parse(row.address),
        createdAt: str(row.created_at),
        updatedAt: str(row.updated_at),
      },
      { tin: row.tin },
    );
  }

  cohortRow(cohort: Cohort): Row {
    return {
      id: cohort.id,
      account_id: cohort.accountId,
      name: cohort.name,
      description: cohort.description ?? null,
      created_at: cohort.createdAt,
      updated_at: cohort.updatedAt,
    };
  }

  cohort(row: Row): Cohort {
    return optional<Cohort>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        name: str(row.name),
        createdAt: str(row.created_at),
        updatedAt: str(row.updated_at),
      },
      { description: row.description },
    );
  }

  patientRow(patient: Patient): Row {
    return {
      id: patient.id,
      account_id: patient.accountId,
      facility_ids: this.json(patient.facilityIds),
      cohort_ids: this.json(patient.cohortIds),
      external_id: patient.externalId ?? null,
      first_name: patient.firstName,
      last_name: patient.lastName,
      dob: patient.dob,
      gender_at_birth: patient.genderAtBirth,
      address: this.json(patient.address),
      contact: this.json(patient.contact),
      personal_identifiers: this.json(patient.personalIdentifiers),
      hie_opt_out: patient.hieOptOut,
      match_keys: this.json(patient.matchKeys),
      version: patient.version,
      created_at: patient.createdAt,
      updated_at: patient.updatedAt,
    };
  }

  /** Appends the patient's values, in `PATIENT_COLUMNS` order, as bound parameters (nested values as JSON text). */
  pushPatientValues(patient: Patient, values: unknown[]): void {
    values.push(
      patient.id,
      patient.accountId,
      JSON.stringify(patient.facilityIds),
      JSON.stringify(patient.cohortIds),
      patient.externalId ?? null,
      patient.firstName,
      patient.lastName,
      patient.dob,
      patient.genderAtBirth,
      JSON.stringify(patient.address),
      JSON.stringify(patient.contact),
      JSON.stringify(patient.personalIdentifiers),
      patient.hieOptOut,
      JSON.stringify(patient.matchKeys),
      patient.version,
      patient.createdAt,
      patient.updatedAt,
    );
  }

  /** The outcome as one row of a batch statement, in `BULK_ROW_COLUMNS` order. */
  bulkRowValues(outcome: BulkRowOutcome): unknown[] {
    return [outcome.requestId, outcome.rowIndex, outcome.status, outcome.action ?? null, outcome.patientId ?? null, outcome.reason ?? null];
  }

  /**
   * Entries of the blocking-key index for these keys of a patient, in `KEY_HASH_COLUMNS` order, pushed onto
   * `into`: each distinct hash once (two keys of one patient may, however rarely, hash alike).
   */
  pushKeyHashValues(accountId: string, patientId: string, matchKeys: readonly string[], into: unknown[][]): void {
    const hashes = new Set<number>();
    for (const matchKey of matchKeys) hashes.add(this.hashOf(accountId, matchKey));
    for (const hash of hashes) into.push([hash, patientId]);
  }

  /** The facility ids of a patient row, read alone. */
  patientFacilityIds(row: Row): string[] {
    return this.parse<string[]>(row.facility_ids);
  }

  patient(row: Row): Patient {
    return optional<Patient>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        facilityIds: this.parse<string[]>(row.facility_ids),
        cohortIds: this.parse<string[]>(row.cohort_ids),
        firstName: str(row.first_name),
        lastName: str(row.last_name),
        dob: str(row.dob),
        genderAtBirth: str(row.gender_at_birth) as Patient['genderAtBirth'],
        address: this.parse(row.address),
        contact: this.parse(row.contact),
        personalIdentifiers: this.parse(row.personal_identifiers),
        hieOptOut: bool(row.hie_opt_out),
        matchKeys: this.parse<string[]>(row.match_keys),
        version: Number(row.version),
        createdAt: str(row.created_at),
        updatedAt: str(row.updated_at),
      },
      { externalId: row.external_id },
    );
  }

  bulkRequestRow(request: BulkRequest): Row {
    return {
      id: request.id,
      account_id: request.accountId,
      facility_id: request.facilityId,
      dry_run: request.dryRun,
      status: request.status,
      reason: request.reason ?? null,
      total: request.total ?? null,
      processed: request.processed,
      succeeded: request.succeeded,
      failed: request.failed,
      upload_key: request.uploadKey,
      result_key: request.resultKey ?? null,
      expires_at: request.expiresAt,
      metadata: this.json(request.metadata),
      created_at: request.createdAt,
      updated_at: request.updatedAt,
      created: request.created,
      updated: request.updated,
      ignored_columns: this.json(request.ignoredColumns),
      paused: this.json(request.paused),
    };
  }

  bulkRequest(row: Row): BulkRequest {
    return optional<BulkRequest>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        facilityId: str(row.facility_id),
        dryRun: bool(row.dry_run),
        status: str(row.status) as BulkRequest['status'],
        processed: Number(row.processed),
        succeeded: Number(row.succeeded),
        failed: Number(row.failed),
        created: Number(row.created),
        updated: Number(row.updated),
        uploadKey: str(row.upload_key),
        expiresAt: str(row.expires_at),
        createdAt: str(row.created_at),
        updatedAt: str(row.updated_at),
      },
      {
        reason: row.reason,
        total: row.total === null || row.total === undefined ? null : Number(row.total),
        resultKey: row.result_key,
        metadata: row.metadata === null || row.metadata === undefined ? null : this.parse(row.metadata),
        ignoredColumns: row.ignored_columns === null || row.ignored_columns === undefined ? null : this.parse(row.ignored_columns),
        paused: row.paused === null || row.paused === undefined ? null : this.parse(row.paused),
      },
    );
  }

  bulkRowRow(outcome: BulkRowOutcome): Row {
    return {
      request_id: outcome.requestId,
      row_index: outcome.rowIndex,
      status: outcome.status,
      action: outcome.action ?? null,
      patient_id: outcome.patientId ?? null,
      reason: outcome.reason ?? null,
    };
  }

  bulkRow(row: Row): BulkRowOutcome {
    return optional<BulkRowOutcome>(
      {
        requestId: str(row.request_id),
        rowIndex: Number(row.row_index),
        status: str(row.status) as BulkRowOutcome['status'],
      },
      { action: row.action, patientId: row.patient_id, reason: row.reason },
    );
  }

  documentRow(document: DocumentRecord): Row {
    return {
      id: document.id,
      account_id: document.accountId,
      patient_id: document.patientId,
      query_id: document.queryId ?? null,
      source: document.source,
      file_name: document.fileName,
      description: document.description,
      status: document.status,
      indexed: document.indexed,
      mime_type: document.mimeType,
      size: document.size,
      type: this.json(document.type),
      organization_identifiers: this.json(document.organizationIdentifiers),
      blob_key: document.blobKey,
      conversion_status: document.conversionStatus,
      conversion_error: document.conversionError ?? null,
      created_at: document.createdAt,
    };
  }

  document(row: Row): DocumentRecord {
    return optional<DocumentRecord>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        patientId: str(row.patient_id),
        source: str(row.source) as DocumentRecord['source'],
        fileName: str(row.file_name),
        description: str(row.description),
        status: str(row.status),
        indexed: str(row.indexed),
        mimeType: str(row.mime_type),
        size: Number(row.size),
        type: this.parse(row.type),
        organizationIdentifiers: this.parse(row.organization_identifiers),
        blobKey: str(row.blob_key),
        conversionStatus: str(row.conversion_status) as DocumentRecord['conversionStatus'],
        createdAt: str(row.created_at),
      },
      { queryId: row.query_id, conversionError: row.conversion_error },
    );
  }

  documentQueryRow(query: DocumentQuery): Row {
    return {
      id: query.id,
      account_id: query.accountId,
      patient_id: query.patientId,
      facility_id: query.facilityId,
      download: this.json(query.download),
      convert: this.json(query.convert),
      metadata: this.json(query.metadata),
      bulk_request_id: query.bulkRequestId ?? null,
      // Kept beside the JSON steps so progress is counted from an index, not by reading every query.
      state: documentQueryState(query),
      created_at: query.createdAt,
      updated_at: query.updatedAt,
    };
  }

  documentQuery(row: Row): DocumentQuery {
    return optional<DocumentQuery>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        patientId: str(row.patient_id),
        facilityId: str(row.facility_id),
        download: this.parse(row.download),
        convert: this.parse(row.convert),
        createdAt: str(row.created_at),
        updatedAt: str(row.updated_at),
      },
      { metadata: row.metadata === null || row.metadata === undefined ? null : this.parse(row.metadata), bulkRequestId: row.bulk_request_id },
    );
  }

  fhirResourceRow(resource: FhirResourceRecord): Row {
    return {
      account_id: resource.accountId,
      patient_id: resource.patientId,
      resource_type: resource.resourceType,
      id: resource.id,
      resource: this.json(resource.resource),
      source_document_ids: this.json(resource.sourceDocumentIds),
      updated_at: resource.updatedAt,
    };
  }

  fhirResource(row: Row): FhirResourceRecord {
    return {
      accountId: str(row.account_id),
      patientId: str(row.patient_id),
      resourceType: str(row.resource_type),
      id: str(row.id),
      resource: this.parse(row.resource),
      sourceDocumentIds: this.parse(row.source_document_ids),
      updatedAt: str(row.updated_at),
    };
  }

  consolidatedQueryRow(query: ConsolidatedQuery): Row {
    return {
      id: query.id,
      account_id: query.accountId,
      patient_id: query.patientId,
      status: query.status,
      filters: this.json(query.filters),
      conversion_type: query.conversionType,
      metadata: this.json(query.metadata),
      created_at: query.createdAt,
      updated_at: query.updatedAt,
    };
  }

  consolidatedQuery(row: Row): ConsolidatedQuery {
    return optional<ConsolidatedQuery>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        patientId: str(row.patient_id),
        status: str(row.status) as ConsolidatedQuery['status'],
        filters: this.parse(row.filters),
        conversionType: str(row.conversion_type) as ConsolidatedQuery['conversionType'],
        createdAt: str(row.created_at),
        updatedAt: str(row.updated_at),
      },
      { metadata: row.metadata === null || row.metadata === undefined ? null : this.parse(row.metadata) },
    );
  }

  networkQueryRow(query: NetworkQuery): Row {
    return {
      id: query.id,
      account_id: query.accountId,
      patient_id: query.patientId,
      facility_id: query.facilityId,
      state: networkQueryStatus(query),
      sources: this.json(query.sources),
      metadata: this.json(query.metadata),
      created_at: query.createdAt,
      updated_at: query.updatedAt,
    };
  }

  networkQuery(row: Row): NetworkQuery {
    return optional<NetworkQuery>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        patientId: str(row.patient_id),
        facilityId: str(row.facility_id),
        sources: this.parse(row.sources),
        createdAt: str(row.created_at),
        updatedAt: str(row.updated_at),
      },
      { metadata: row.metadata === null || row.metadata === undefined ? null : this.parse(row.metadata) },
    );
  }

  outboxRow(message: OutboxMessage): Row {
    return {
      id: message.id,
      account_id: message.accountId,
      type: message.type,
      body: message.body,
      stream_key: message.streamKey,
      status: message.status,
      attempts: message.attempts,
      next_attempt_at: message.nextAttemptAt,
      last_error: message.lastError ?? null,
      created_at: message.createdAt,
      delivered_at: message.deliveredAt ?? null,
      // Writing a message ends its claim: the worker that held it is done with it.
      lease_until: null,
      lease_owner: null,
      endpoint_id: message.endpointId ?? null,
      message_id: message.messageId ?? null,
      patient_id: message.patientId ?? null,
    };
  }

  outbox(row: Row): OutboxMessage {
    return optional<OutboxMessage>(
      {
        id: str(row.id),
        accountId: str(row.account_id),
        type: str(row.type) as OutboxMessage['type'],
        body: str(row.body),
        // Rows stored before streams existed are each a stream of their own.
        streamKey: row.stream_key === null || row.stream_key === undefined ? str(row.id) : str(row.stream_key),
        status: str(row.status) as OutboxMessage['status'],
        attempts: Number(row.attempts),
        nextAttemptAt: str(row.next_attempt_at),
        createdAt: str(row.created_at),
      },
      { lastError: row.last_error, deliveredAt: row.delivered_at, endpointId: row.endpoint_id, messageId: row.message_id, patientId: row.patient_id },
    );
  }
}

function str(value: unknown): string {
  return String(value);
}

function nullable(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function bool(value: unknown): boolean {
  return value === true || value === 1 || value === '1';
}

type OptionalKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? K : never }[keyof T];

/** The record with those optional fields whose column is not NULL (each field already in its domain form). */
function optional<T>(record: Omit<T, OptionalKeys<T>>, fields: { [K in OptionalKeys<T>]-?: unknown }): T {
  const target = record as Record<string, unknown>;
  for (const [name, value] of Object.entries(fields)) if (value !== null && value !== undefined) target[name] = value;
  return target as T;
}
