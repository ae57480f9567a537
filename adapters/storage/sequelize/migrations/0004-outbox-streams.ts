import type { MigrationContext } from './index.js';

/**
 * Outbox messages carry a stream key: delivery keeps creation order only among the pending messages of one
 * stream, found through the index. Messages stored before this get their own id as their stream, so none
 * waits on another. Plain SQL, so the table is found through the connection's search path (the configured
 * PostgreSQL schema).
 */
export const name = '0004-outbox-streams';

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of [
    'ALTER TABLE outbox ADD COLUMN stream_key TEXT',
    'UPDATE outbox SET stream_key = id WHERE stream_key IS NULL',
    'CREATE INDEX outbox_account_id_stream_key_status_created_at ON outbox (account_id, stream_key, status, created_at)',
  ]) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  for (const statement of ['DROP INDEX outbox_account_id_stream_key_status_created_at', 'ALTER TABLE outbox DROP COLUMN stream_key']) {
    await queryInterface.sequelize.query(statement, { transaction });
  }
}
