import type { MigrationContext } from './index.js';

/**
 * Endpoint health and test events: each endpoint's failure clock (`failing_since`: the first failed attempt
 * since its last successful delivery, NULL while healthy and for every row before this one), on the extra
 * endpoints and on the default one (the account's webhook settings); and the delivery log's mark of a test
 * event's attempt (`test`, NULL for a real message's). Plain SQL, so the tables are found through the
 * connection's search path (the configured PostgreSQL schema).
 */
export const name = '0012-webhook-health';

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of [
    'ALTER TABLE webhook_endpoints ADD COLUMN failing_since TEXT',
    'ALTER TABLE webhook_settings ADD COLUMN failing_since TEXT',
    'ALTER TABLE webhook_attempts ADD COLUMN test BOOLEAN',
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of [
    'ALTER TABLE webhook_attempts DROP COLUMN test',
    'ALTER TABLE webhook_settings DROP COLUMN failing_since',
    'ALTER TABLE webhook_endpoints DROP COLUMN failing_since',
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}
