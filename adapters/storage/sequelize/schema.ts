/*
 * The storage tables as the code reads and writes them: every column, its kind, whether it may be NULL and
 * whether it is part of the primary key. The one description of the schema the code uses: the column lists
 * of the statements (sql-access.ts, mappers.ts) are derived from it, and so is the mapping of each table's
 * record to its rows (mappers.ts): a column is the record field of its name in camelCase (`api_key_hash` is
 * `apiKeyHash`), converted by its kind, unless mappers.ts overrides it. A test migrates a fresh SQLite and
 * PostgreSQL database and checks that the migrations built exactly these columns. The migrations stay as
 * written: they are history, applied once each.
 */

/**
 * `kind`; `kind?`, nullable, NULL when the record's field is absent (an optional field, `field?: T`);
 * `kind null`, nullable, NULL when the record's field holds `null` (`field: T | null`); `kind key`, part of
 * the primary key.
 */
type ColumnSpec = `${ColumnKind}` | `${ColumnKind}?` | `${ColumnKind} null` | `${ColumnKind} key`;

/** How a column's value is typed, and travels in the JSON of a batch statement (see `RawSql.insertFromJson`). */
export type ColumnKind = 'text' | 'json' | 'boolean' | 'integer' | 'bigint';

export const TABLES = {
  accounts: {
    id: 'text key',
    name: 'text',
    api_key_hash: 'text',
    api_key_prefix: 'text',
    created_at: 'text',
  },
  webhook_settings: {
    account_id: 'text key',
    webhook_url: 'text null',
    webhook_key: 'text',
    webhook_enabled: 'boolean',
    webhook_status_detail: 'text null',
    updated_at: 'text',
    failing_since: 'text?',
  },
  webhook_endpoints: {
    id: 'text key',
    account_id: 'text',
    url: 'text',
    description: 'text',
    enabled: 'boolean',
    event_types: 'json',
    secret: 'text',
    previous_secret: 'text?',
    previous_secret_until: 'text?',
    status_detail: 'text null',
    created_at: 'text',
    updated_at: 'text',
    failing_since: 'text?',
  },
  organizations: {
    id: 'text key',
    account_id: 'text',
    oid: 'text',
    name: 'text',
    type: 'text',
    location: 'json',
    created_at: 'text',
    updated_at: 'text',
  },
  facilities: {
    id: 'text key',
    account_id: 'text',
    oid: 'text',
    name: 'text',
    npi: 'text',
    tin: 'text?',
    active: 'boolean',
    address: 'json',
    created_at: 'text',
    updated_at: 'text',
  },
  cohorts: {
    id: 'text key',
    account_id: 'text',
    name: 'text',
    description: 'text?',
    created_at: 'text',
    updated_at: 'text',
  },
  patients: {
    id: 'text key',
    account_id: 'text',
    facility_ids: 'json',
    cohort_ids: 'json',
    external_id: 'text?',
    first_name: 'text',
    last_name: 'text',
    dob: 'text',
    gender_at_birth: 'text',
    address: 'json',
    contact: 'json',
    personal_identifiers: 'json',
    hie_opt_out: 'boolean',
    match_keys: 'json',
    version: 'integer',
    created_at: 'text',
    updated_at: 'text',
  },
  bulk_requests: {
    id: 'text key',
    account_id: 'text',
    facility_id: 'text',
    dry_run: 'boolean',
    status: 'text',
    reason: 'text?',
    total: 'integer?',
    processed: 'integer',
    succeeded: 'integer',
    failed: 'integer',
    upload_key: 'text',
    result_key: 'text?',
    expires_at: 'text',
    metadata: 'json?',
    created_at: 'text',
    updated_at: 'text',
    created: 'integer',
    updated: 'integer',
    ignored_columns: 'json?',
    paused: 'json?',
  },
  bulk_rows: {
    request_id: 'text key',
    row_index: 'integer key',
    status: 'text',
    action: 'text?',
    patient_id: 'text?',
    reason: 'text?',
  },
  documents: {
    id: 'text key',
    account_id: 'text',
    patient_id: 'text',
    query_id: 'text?',
    source: 'text',
    file_name: 'text',
    description: 'text',
    status: 'text',
    indexed: 'text',
    mime_type: 'text',
    size: 'bigint',
    type: 'json',
    organization_identifiers: 'json',
    blob_key: 'text',
    conversion_status: 'text',
    conversion_error: 'text?',
    created_at: 'text',
  },
  document_queries: {
    id: 'text key',
    account_id: 'text',
    patient_id: 'text',
    facility_id: 'text',
    download: 'json',
    convert: 'json',
    metadata: 'json?',
    bulk_request_id: 'text?',
    state: 'text?',
    created_at: 'text',
    updated_at: 'text',
  },
  fhir_resources: {
    account_id: 'text key',
    patient_id: 'text key',
    resource_type: 'text key',
    id: 'text key',
    resource: 'json',
    source_document_ids: 'json',
    updated_at: 'text',
  },
  consolidated_queries: {
    id: 'text key',
    account_id: 'text',
    patient_id: 'text',
    status: 'text',
    filters: 'json',
    conversion_type: 'text',
    metadata: 'json?',
    created_at: 'text',
    updated_at: 'text',
  },
  network_queries: {
    id: 'text key',
    account_id: 'text',
    patient_id: 'text',
    facility_id: 'text',
    state: 'text',
    sources: 'json',
    metadata: 'json?',
    created_at: 'text',
    updated_at: 'text',
  },
  outbox: {
    id: 'text key',
    account_id: 'text',
    type: 'text',
    body: 'text',
    stream_key: 'text?',
    status: 'text',
    attempts: 'integer',
    next_attempt_at: 'text',
    last_error: 'text?',
    created_at: 'text',
    delivered_at: 'text?',
    lease_until: 'text?',
    lease_owner: 'text?',
    endpoint_id: 'text?',
    message_id: 'text?',
    patient_id: 'text?',
  },
  webhook_attempts: {
    id: 'text key',
    account_id: 'text',
    delivery_id: 'text',
    message_id: 'text',
    endpoint_id: 'text?',
    type: 'text',
    patient_id: 'text?',
    attempted_at: 'text',
    outcome: 'text',
    status_code: 'integer?',
    latency_ms: 'integer',
    error: 'text?',
    test: 'boolean?',
  },
  patient_key_hashes: {
    key_hash: 'bigint key',
    patient_id: 'text key',
  },
  patient_revisions: {
    account_id: 'text key',
    revision: 'bigint',
  },
} as const satisfies Record<string, Record<string, ColumnSpec>>;

export type TableName = keyof typeof TABLES;

/** A column of the table, as named here. */
export type ColumnOf<T extends TableName> = Extract<keyof (typeof TABLES)[T], string>;

/** A row as the driver returns it, by column name. */
export type Row = Record<string, unknown>;

export interface Column {
  name: string;
  kind: ColumnKind;
  nullable: boolean;
  primaryKey: boolean;
  /** The record field it holds: its name in camelCase. */
  field: string;
  /** Whether NULL is `null` in the record rather than an absent field (`kind null`). */
  nullInRecord: boolean;
}

/** The columns of `table`, in their order here (the order batch statements bind them in). */
export function columnsOf(table: TableName): Column[] {
  return Object.entries(TABLES[table] as Record<string, ColumnSpec>).map(([name, spec]) => {
    const [kind, flag] = spec.replace('?', ' ?').split(' ') as [ColumnKind, string | undefined];
    const field = name.replace(/_([a-z0-9])/g, (_match, letter: string) => letter.toUpperCase());
    return { name, kind, nullable: flag === '?' || flag === 'null', primaryKey: flag === 'key', field, nullInRecord: flag === 'null' };
  });
}
