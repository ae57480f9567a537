import type { MigrationContext } from './index.js';

/**
 * Webhook endpoints beside the account's default one, and the outbox's deliveries to them: a message is
 * stored once per endpoint it goes to, with the endpoint's id and the message id every endpoint receives
 * (both NULL for the default endpoint, every row before this one), and the patient it is about. The
 * delivery log: one row per attempt, listed newest first per account, pruned by age. Plain SQL, so the tables are found
 * through the connection's search path (the configured PostgreSQL schema).
 */
export const name = '0011-webhook-endpoints';

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  const postgres = queryInterface.sequelize.getDialect() === 'postgres';
  for (const statement of [
    `CREATE TABLE webhook_endpoints (
       id TEXT PRIMARY KEY,
       account_id TEXT NOT NULL,
       url TEXT NOT NULL,
       description TEXT NOT NULL,
       enabled BOOLEAN NOT NULL,
       event_types ${postgres ? 'JSON' : 'TEXT'} NOT NULL,
       secret TEXT NOT NULL,
       previous_secret TEXT,
       previous_secret_until TEXT,
       status_detail TEXT,
       created_at TEXT NOT NULL,
       updated_at TEXT NOT NULL)`,
    'CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_at, id)',
    'ALTER TABLE outbox ADD COLUMN endpoint_id TEXT',
    'ALTER TABLE outbox ADD COLUMN message_id TEXT',
    'ALTER TABLE outbox ADD COLUMN patient_id TEXT',
    'CREATE INDEX outbox_endpoint ON outbox (account_id, endpoint_id) WHERE endpoint_id IS NOT NULL',
    `CREATE TABLE webhook_attempts (
       id TEXT PRIMARY KEY,
       account_id TEXT NOT NULL,
       delivery_id TEXT NOT NULL,
       message_id TEXT NOT NULL,
       endpoint_id TEXT,
       type TEXT NOT NULL,
       patient_id TEXT,
       attempted_at TEXT NOT NULL,
       outcome TEXT NOT NULL,
       status_code INTEGER,
       latency_ms INTEGER NOT NULL,
       error TEXT)`,
    'CREATE INDEX webhook_attempts_account ON webhook_attempts (account_id, attempted_at, id)',
    'CREATE INDEX webhook_attempts_attempted_at ON webhook_attempts (attempted_at)',
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of [
    'DROP TABLE webhook_attempts',
    'DROP INDEX outbox_endpoint',
    'ALTER TABLE outbox DROP COLUMN patient_id',
    'ALTER TABLE outbox DROP COLUMN message_id',
    'ALTER TABLE outbox DROP COLUMN endpoint_id',
    'DROP TABLE webhook_endpoints',
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}
