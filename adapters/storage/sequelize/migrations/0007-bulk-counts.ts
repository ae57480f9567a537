import type { MigrationContext } from './index.js';

/**
 * Bulk requests count the rows that created a patient and the rows that updated one, and keep the header
 * columns the importer did not know. Requests imported before have their counts worked out from their row
 * outcomes (a dry run's rows say neither, so its counts stay 0) and no list of ignored columns. Plain SQL,
 * so the table is found through the connection's search path (the configured PostgreSQL schema).
 */
export const name = '0007-bulk-counts';

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  const postgres = queryInterface.sequelize.getDialect() === 'postgres';
  for (const statement of [
    'ALTER TABLE bulk_requests ADD COLUMN created INTEGER NOT NULL DEFAULT 0',
    'ALTER TABLE bulk_requests ADD COLUMN updated INTEGER NOT NULL DEFAULT 0',
    `ALTER TABLE bulk_requests ADD COLUMN ignored_columns ${postgres ? 'JSON' : 'TEXT'}`,
    `UPDATE bulk_requests SET
       created = (SELECT COUNT(*) FROM bulk_rows WHERE bulk_rows.request_id = bulk_requests.id AND bulk_rows.action = 'created'),
       updated = (SELECT COUNT(*) FROM bulk_rows WHERE bulk_rows.request_id = bulk_requests.id AND bulk_rows.action = 'updated')`,
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of [
    'ALTER TABLE bulk_requests DROP COLUMN ignored_columns',
    'ALTER TABLE bulk_requests DROP COLUMN updated',
    'ALTER TABLE bulk_requests DROP COLUMN created',
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}
