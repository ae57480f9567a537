import { DataTypes, type ModelAttributeColumnOptions } from 'sequelize';
import type { MigrationContext } from './index.js';

/**
 * The first schema of the storage. A migration is history: never edit it once released; add the next one.
 *
 * Choices that every later migration keeps:
 * - Timestamps are ISO 8601 text, exactly as the domain carries them, so they round-trip byte for byte
 *   and compare as text (fixed-width UTC).
 * - Nested values are JSON: TEXT on SQLite, JSON on PostgreSQL. Not JSONB: JSONB reorders object keys, and
 *   stored FHIR resources and payloads must come back exactly as written (same keys, same order) on both.
 * - On PostgreSQL, ids and timestamps use the "C" collation, so `ORDER BY id` and `id > :after` follow
 *   code-point order whatever the database's locale (the memory adapter compares the same way).
 */
export const name = '0001-initial';

type Columns = Record<string, ModelAttributeColumnOptions>;

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  const postgres = queryInterface.sequelize.getDialect() === 'postgres';
  const ordered = postgres ? 'TEXT COLLATE "C"' : DataTypes.TEXT;
  const id = (): ModelAttributeColumnOptions => ({ type: ordered, allowNull: false });
  const key = (): ModelAttributeColumnOptions => ({ ...id(), primaryKey: true });
  const time = (allowNull = false): ModelAttributeColumnOptions => ({ type: ordered, allowNull });
  const text = (allowNull = false): ModelAttributeColumnOptions => ({ type: DataTypes.TEXT, allowNull });
  const json = (allowNull = false): ModelAttributeColumnOptions => ({ type: postgres ? DataTypes.JSON : DataTypes.TEXT, allowNull });
  const flag = (): ModelAttributeColumnOptions => ({ type: DataTypes.BOOLEAN, allowNull: false });
  const integer = (allowNull = false): ModelAttributeColumnOptions => ({ type: DataTypes.INTEGER, allowNull });

  const tables: Record<string, Columns> = {
    accounts: { id: key(), name: text(), api_key_hash: text(), api_key_prefix: text(), created_at: time() },
    webhook_settings: {
      account_id: key(),
      webhook_url: text(true),
      webhook_key: text(),
      webhook_enabled: flag(),
      webhook_status_detail: text(true),
      updated_at: time(),
    },
    organizations: {
      id: key(),
      account_id: id(),
      oid: text(),
      name: text(),
      type: text(),
      location: json(),
      created_at: time(),
      updated_at: time(),
    },
    facilities: {
      id: key(),
      account_id: id(),
      oid: text(),
      name: text(),
      npi: text(),
      tin: text(true),
      active: flag(),
      address: json(),
      created_at: time(),
      updated_at: time(),
    },
    cohorts: { id: key(), account_id: id(), name: text(), description: text(true), created_at: time(), updated_at: time() },
    patients: {
      id: key(),
      account_id: id(),
      facility_ids: json(),
      cohort_ids: json(),
      external_id: text(true),
      first_name: text(),
      last_name: text(),
      dob: text(),
      gender_at_birth: text(),
      address: json(),
      contact: json(),
      personal_identifiers: json(),
      hie_opt_out: flag(),
      match_keys: json(),
      created_at: time(),
      updated_at: time(),
    },
    patient_match_keys: {
      patient_id: { ...key(), references: { model: 'patients', key: 'id' }, onDelete: 'CASCADE' },
      match_key: { type: ordered, allowNull: false, primaryKey: true },
      account_id: id(),
    },
    bulk_requests: {
      id: key(),
      account_id: id(),
      facility_id: id(),
      dry_run: flag(),
      status: text(),
      reason: text(true),
      total: integer(true),
      processed: integer(),
      succeeded: integer(),
      failed: integer(),
      upload_key: text(),
      result_key: text(true),
      expires_at: time(),
      metadata: json(true),
      created_at: time(),
      updated_at: time(),
    },
    bulk_rows: {
      request_id: key(),
      row_index: { type: DataTypes.INTEGER, allowNull: false, primaryKey: true },
      status: text(),
      action: text(true),
      patient_id: text(true),
      reason: text(true),
    },
    documents: {
      id: key(),
      account_id: id(),
      patient_id: id(),
      query_id: text(true),
      source: text(),
      file_name: text(),
      description: text(),
      status: text(),
      indexed: text(),
      mime_type: text(),
      size: { type: DataTypes.BIGINT, allowNull: false },
      type: json(),
      organization_identifiers: json(),
      blob_key: text(),
      conversion_status: text(),
      conversion_error: text(true),
      created_at: time(),
    },
    document_queries: {
      id: key(),
      account_id: id(),
      patient_id: id(),
      facility_id: id(),
      download: json(),
      convert: json(),
      metadata: json(true),
      created_at: time(),
      updated_at: time(),
    },
    fhir_resources: {
      account_id: key(),
      patient_id: key(),
      resource_type: { type: ordered, allowNull: false, primaryKey: true },
      id: { type: ordered, allowNull: false, primaryKey: true },
      resource: json(),
      source_document_ids: json(),
      updated_at: time(),
    },
    consolidated_queries: {
      id: key(),
      account_id: id(),
      patient_id: id(),
      status: text(),
      filters: json(),
      conversion_type: text(),
      metadata: json(true),
      created_at: time(),
      updated_at: time(),
    },
    outbox: {
      id: key(),
      account_id: id(),
      type: text(),
      body: text(),
      status: { type: ordered, allowNull: false },
      attempts: integer(),
      next_attempt_at: time(),
      last_error: text(true),
      created_at: time(),
      delivered_at: time(true),
    },
  };

  for (const [table, columns] of Object.entries(tables)) await queryInterface.createTable(table, columns, { transaction });

  const indexes: [table: string, fields: string[], unique?: boolean][] = [
    // One key hash per account: a key that authenticated as two accounts would be ambiguous.
    ['accounts', ['api_key_hash'], true],
    ['organizations', ['account_id'], true],
    ['facilities', ['account_id', 'created_at']],
    ['cohorts', ['account_id', 'created_at']],
    ['patients', ['account_id', 'id']],
    ['patients', ['account_id', 'external_id']],
    // The matching hot path: candidates of a row are an index hit on (account, blocking key).
    ['patient_match_keys', ['account_id', 'match_key', 'patient_id']],
    ['bulk_requests', ['account_id', 'created_at']],
    ['bulk_requests', ['status', 'created_at']],
    ['documents', ['account_id', 'patient_id', 'created_at']],
    ['documents', ['account_id', 'file_name']],
    ['document_queries', ['account_id', 'patient_id', 'created_at']],
    ['consolidated_queries', ['account_id', 'patient_id', 'created_at']],
    ['outbox', ['status', 'next_attempt_at']],
    ['outbox', ['account_id', 'created_at']],
  ];
  for (const [table, fields, unique] of indexes) {
    await queryInterface.addIndex(table, fields, { name: `${table}_${fields.join('_')}`, unique: unique ?? false, transaction });
  }
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const table of [
    'outbox',
    'consolidated_queries',
    'fhir_resources',
    'document_queries',
    'documents',
    'bulk_rows',
    'bulk_requests',
    'patient_match_keys',
    'patients',
    'cohorts',
    'facilities',
    'organizations',
    'webhook_settings',
    'accounts',
  ]) {
    await queryInterface.dropTable(table, { transaction });
  }
}
