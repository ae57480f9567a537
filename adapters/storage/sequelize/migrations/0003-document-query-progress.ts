import type { MigrationContext } from './index.js';

/**
 * Document queries remember the bulk import that started them, and keep their overall state in a column of
 * its own, so an import's progress is counted from one index. Queries stored before this have neither:
 * they belong to no import, so no count misses them. Plain SQL, so the table is found through the
 * connection's search path (the configured PostgreSQL schema).
 */
export const name = '0003-document-query-progress';

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of [
    'ALTER TABLE document_queries ADD COLUMN bulk_request_id TEXT',
    'ALTER TABLE document_queries ADD COLUMN state TEXT',
    'CREATE INDEX document_queries_bulk_request_state ON document_queries (account_id, bulk_request_id, state)',
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of [
    'DROP INDEX document_queries_bulk_request_state',
    'ALTER TABLE document_queries DROP COLUMN state',
    'ALTER TABLE document_queries DROP COLUMN bulk_request_id',
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}
