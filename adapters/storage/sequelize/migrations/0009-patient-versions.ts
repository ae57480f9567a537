import type { MigrationContext } from './index.js';

/**
 * Patients written by several callers at once. `version` counts a patient's writes, so an update made
 * from a stale read is refused instead of silently undoing the one before it (existing patients start at
 * 1). `patient_revisions` holds one row per account: every transaction writing the account's patients
 * updates it first, which makes those transactions wait for each other (the row lock on PostgreSQL; SQLite
 * has one writer anyway), and counts them, so an import can tell whether anyone wrote the account's
 * patients since it looked them up. Plain SQL, so the tables are found through the connection's search
 * path (the configured PostgreSQL schema).
 */
export const name = '0009-patient-versions';

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  const postgres = queryInterface.sequelize.getDialect() === 'postgres';
  for (const statement of [
    'ALTER TABLE patients ADD COLUMN version INTEGER NOT NULL DEFAULT 1',
    `CREATE TABLE patient_revisions (account_id TEXT${postgres ? ' COLLATE "C"' : ''} NOT NULL PRIMARY KEY, revision BIGINT NOT NULL)`,
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of ['DROP TABLE patient_revisions', 'ALTER TABLE patients DROP COLUMN version']) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}
