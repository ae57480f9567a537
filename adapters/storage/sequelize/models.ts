import { DataTypes, type Model, type ModelAttributeColumnOptions, type ModelStatic, type Sequelize } from 'sequelize';

/**
 * Sequelize models of the storage tables. Attribute names are the column names (snake_case), so model
 * queries, raw SQL and the row mappers all speak one vocabulary. The tables themselves are created by the
 * migrations, never by `sync`; these definitions only tell Sequelize how to escape and which keys to use.
 */

export type Row = Record<string, unknown>;
export type StorageModel = ModelStatic<Model<Row, Row>>;

export interface StorageModels {
  accounts: StorageModel;
  webhookSettings: StorageModel;
  organizations: StorageModel;
  facilities: StorageModel;
  cohorts: StorageModel;
  patients: StorageModel;
  bulkRequests: StorageModel;
  bulkRows: StorageModel;
  documents: StorageModel;
  documentQueries: StorageModel;
  fhirResources: StorageModel;
  consolidatedQueries: StorageModel;
  networkQueries: StorageModel;
  outbox: StorageModel;
}

export function defineStorageModels(sequelize: Sequelize): StorageModels {
  const postgres = sequelize.getDialect() === 'postgres';
  const json = (allowNull = false): ModelAttributeColumnOptions => ({ type: postgres ? DataTypes.JSON : DataTypes.TEXT, allowNull });
  const text = (allowNull = false): ModelAttributeColumnOptions => ({ type: DataTypes.TEXT, allowNull });
  const key = (): ModelAttributeColumnOptions => ({ type: DataTypes.TEXT, allowNull: false, primaryKey: true });
  const flag = (): ModelAttributeColumnOptions => ({ type: DataTypes.BOOLEAN, allowNull: false });
  const integer = (allowNull = false): ModelAttributeColumnOptions => ({ type: DataTypes.INTEGER, allowNull });

  const define = (modelName: string, tableName: string, attributes: Record<string, ModelAttributeColumnOptions>): StorageModel => {
    // Several storages (and their transactions) may share one Sequelize instance: define each model once.
    const qualified = `CarebridgeStorage_${modelName}`;
    if (sequelize.isDefined(qualified)) return sequelize.model(qualified) as StorageModel;
    return sequelize.define(qualified, attributes, { tableName, timestamps: false }) as StorageModel;
  };

  return {
    accounts: define('Account', 'accounts', {
      id: key(),
      name: text(),
      api_key_hash: text(),
      api_key_prefix: text(),
      created_at: text(),
    }),
    webhookSettings: define('WebhookSettings', 'webhook_settings', {
      account_id: key(),
      webhook_url: text(true),
      webhook_key: text(),
      webhook_enabled: flag(),
      webhook_status_detail: text(true),
      updated_at: text(),
    }),
    organizations: define('Organization', 'organizations', {
      id: key(),
      account_id: text(),
      oid: text(),
      name: text(),
      type: text(),
      location: json(),
      created_at: text(),
      updated_at: text(),
    }),
    facilities: define('Facility', 'facilities', {
      id: key(),
      account_id: text(),
      oid: text(),
      name: text(),
      npi: text(),
      tin: text(true),
      active: flag(),
      address: json(),
      created_at: text(),
      updated_at: text(),
    }),
    cohorts: define('Cohort', 'cohorts', {
      id: key(),
      account_id: text(),
      name: text(),
      description: text(true),
      created_at: text(),
      updated_at: text(),
    }),
    patients: define('Patient', 'patients', {
      id: key(),
      account_id: text(),
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
      created_at: text(),
      updated_at: text(),
    }),
    bulkRequests: define('BulkRequest', 'bulk_requests', {
      id: key(),
      account_id: text(),
      facility_id: text(),
      dry_run: flag(),
      status: text(),
      reason: text(true),
      total: integer(true),
      processed: integer(),
      succeeded: integer(),
      failed: integer(),
      upload_key: text(),
      result_key: text(true),
      expires_at: text(),
      metadata: json(true),
      created_at: text(),
      updated_at: text(),
    }),
    bulkRows: define('BulkRow', 'bulk_rows', {
      request_id: key(),
      row_index: { type: DataTypes.INTEGER, allowNull: false, primaryKey: true },
      status: text(),
      action: text(true),
      patient_id: text(true),
      reason: text(true),
    }),
    documents: define('Document', 'documents', {
      id: key(),
      account_id: text(),
      patient_id: text(),
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
      created_at: text(),
    }),
    documentQueries: define('DocumentQuery', 'document_queries', {
      id: key(),
      account_id: text(),
      patient_id: text(),
      facility_id: text(),
      download: json(),
      convert: json(),
      metadata: json(true),
      bulk_request_id: text(true),
      state: text(true),
      created_at: text(),
      updated_at: text(),
    }),
    fhirResources: define('FhirResource', 'fhir_resources', {
      account_id: key(),
      patient_id: key(),
      resource_type: key(),
      id: key(),
      resource: json(),
      source_document_ids: json(),
      updated_at: text(),
    }),
    consolidatedQueries: define('ConsolidatedQuery', 'consolidated_queries', {
      id: key(),
      account_id: text(),
      patient_id: text(),
      status: text(),
      filters: json(),
      conversion_type: text(),
      metadata: json(true),
      created_at: text(),
      updated_at: text(),
    }),
    networkQueries: define('NetworkQuery', 'network_queries', {
      id: key(),
      account_id: text(),
      patient_id: text(),
      facility_id: text(),
      state: text(),
      sources: json(),
      metadata: json(true),
      created_at: text(),
      updated_at: text(),
    }),
    outbox: define('OutboxMessage', 'outbox', {
      id: key(),
      account_id: text(),
      type: text(),
      body: text(),
      stream_key: text(true),
      status: text(),
      attempts: integer(),
      next_attempt_at: text(),
      last_error: text(true),
      created_at: text(),
      delivered_at: text(true),
      lease_until: text(true),
      lease_owner: text(true),
    }),
  };
}
