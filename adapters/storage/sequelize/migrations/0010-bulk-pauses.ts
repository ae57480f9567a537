import type { MigrationContext } from './index.js';

/**
 * A bulk request may be paused while processing (the storage was full): `paused` holds the cause and since
 * when, as JSON, and is NULL otherwise (every request before this one). Plain SQL, so the table is found
 * through the connection's search path (the configured PostgreSQL schema).
 */
export const name = '0010-bulk-pauses';

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  const postgres = queryInterface.sequelize.getDialect() === 'postgres';
  await queryInterface.sequelize.query(`ALTER TABLE bulk_requests ADD COLUMN paused ${postgres ? 'JSON' : 'TEXT'}`, { transaction });
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  await queryInterface.sequelize.query('ALTER TABLE bulk_requests DROP COLUMN paused', { transaction });
}
