import { DataTypes, type Model, type ModelAttributeColumnOptions, type ModelStatic, type Sequelize } from 'sequelize';
import { columnsOf, type ColumnKind, type TableName } from './schema.js';

/**
 * Sequelize models of the storage tables, made from the table descriptions of schema.ts. Attribute names
 * are the column names (snake_case), so model queries, raw SQL and the row mappers all speak one
 * vocabulary. The tables themselves are created by the migrations, never by `sync`; these definitions only
 * tell Sequelize how to escape and which keys to use.
 */

export type Row = Record<string, unknown>;
export type StorageModel = ModelStatic<Model<Row, Row>>;

export interface StorageModels {
  accounts: StorageModel;
  webhookSettings: StorageModel;
  webhookEndpoints: StorageModel;
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
  webhookAttempts: StorageModel;
}

export function defineStorageModels(sequelize: Sequelize): StorageModels {
  const postgres = sequelize.getDialect() === 'postgres';
  const typeOf = (kind: ColumnKind) => {
    switch (kind) {
      case 'json':
        return postgres ? DataTypes.JSON : DataTypes.TEXT;
      case 'boolean':
        return DataTypes.BOOLEAN;
      case 'integer':
        return DataTypes.INTEGER;
      case 'bigint':
        return DataTypes.BIGINT;
      default:
        return DataTypes.TEXT;
    }
  };

  const define = (modelName: string, table: TableName): StorageModel => {
    // Several storages (and their transactions) may share one Sequelize instance: define each model once.
    const qualified = `CarebridgeStorage_${modelName}`;
    if (sequelize.isDefined(qualified)) return sequelize.model(qualified) as StorageModel;
    const attributes: Record<string, ModelAttributeColumnOptions> = {};
    for (const column of columnsOf(table)) {
      attributes[column.name] = { type: typeOf(column.kind), allowNull: column.nullable, ...(column.primaryKey ? { primaryKey: true } : {}) };
    }
    return sequelize.define(qualified, attributes, { tableName: table, timestamps: false }) as StorageModel;
  };

  return {
    accounts: define('Account', 'accounts'),
    webhookSettings: define('WebhookSettings', 'webhook_settings'),
    webhookEndpoints: define('WebhookEndpoint', 'webhook_endpoints'),
    organizations: define('Organization', 'organizations'),
    facilities: define('Facility', 'facilities'),
    cohorts: define('Cohort', 'cohorts'),
    patients: define('Patient', 'patients'),
    bulkRequests: define('BulkRequest', 'bulk_requests'),
    bulkRows: define('BulkRow', 'bulk_rows'),
    documents: define('Document', 'documents'),
    documentQueries: define('DocumentQuery', 'document_queries'),
    fhirResources: define('FhirResource', 'fhir_resources'),
    consolidatedQueries: define('ConsolidatedQuery', 'consolidated_queries'),
    networkQueries: define('NetworkQuery', 'network_queries'),
    outbox: define('OutboxMessage', 'outbox'),
    webhookAttempts: define('WebhookAttempt', 'webhook_attempts'),
  };
}
