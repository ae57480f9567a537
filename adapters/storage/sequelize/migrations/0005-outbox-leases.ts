import type { MigrationContext } from './index.js';

/**
 * Outbox claims: several service instances on one database deliver from one outbox, and a message is
 * claimed (lease owner and end) before it is sent, so no two send it at once and a crashed instance's
 * claims run out. Delivered messages are pruned by age, oldest delivery first, through the second index.
 * Plain SQL, so the table is found through the connection's search path (the configured PostgreSQL schema).
 */
export const name = '0005-outbox-leases';

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of [
    'ALTER TABLE outbox ADD COLUMN lease_until TEXT',
    'ALTER TABLE outbox ADD COLUMN lease_owner TEXT',
    'CREATE INDEX outbox_status_delivered_at ON outbox (status, delivered_at)',
    'CREATE INDEX outbox_lease_owner ON outbox (lease_owner) WHERE lease_owner IS NOT NULL',
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of ['DROP INDEX outbox_lease_owner', 'DROP INDEX outbox_status_delivered_at', 'ALTER TABLE outbox DROP COLUMN lease_owner', 'ALTER TABLE outbox DROP COLUMN lease_until']) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}
