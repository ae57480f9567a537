import type { Sequelize } from 'sequelize';
import type { RunnableMigration } from 'umzug';

export interface QueueMigrationContext {
  sequelize: Sequelize;
  dialect: 'sqlite' | 'postgres';
  /** Quoted, schema-qualified name of the jobs table. */
  table: string;
}

/**
 * The queue's own versioned migrations, recorded in `queue_migrations` (never in the storage adapter's
 * meta table). Plain SQL that both SQLite and PostgreSQL accept; `IF NOT EXISTS` so a run interrupted
 * between a statement and its record can be repeated.
 */
export const queueMigrations: RunnableMigration<QueueMigrationContext>[] = [
  {
    name: '0001-queue-jobs',
    async up({ context: { sequelize, table } }) {
      const statements = [
        `CREATE TABLE IF NOT EXISTS ${table} (
          id VARCHAR(64) PRIMARY KEY,
          type VARCHAR(200) NOT NULL,
          payload TEXT NOT NULL,
          status VARCHAR(16) NOT NULL CHECK (status IN ('pending', 'running', 'done', 'dead')),
          dedupe_key VARCHAR(500),
          attempts INTEGER NOT NULL DEFAULT 0,
          max_attempts INTEGER NOT NULL,
          run_at BIGINT NOT NULL,
          lease_until BIGINT,
          locked_by VARCHAR(200),
          last_error TEXT,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL
        )`,
        // Claims: pending jobs by due time, and running jobs whose lease has run out.
        `CREATE INDEX IF NOT EXISTS queue_jobs_status_run_at ON ${table} (status, run_at)`,
        `CREATE INDEX IF NOT EXISTS queue_jobs_status_lease_until ON ${table} (status, lease_until)`,
        `CREATE INDEX IF NOT EXISTS queue_jobs_locked_by ON ${table} (locked_by)`,
        // Dedupe: one job per key while it is pending or running; finished jobs free the key.
        `CREATE UNIQUE INDEX IF NOT EXISTS queue_jobs_active_key ON ${table} (dedupe_key) WHERE status IN ('pending', 'running')`,
      ];
      for (const statement of statements) await sequelize.query(statement, { logging: false });
    },
    async down({ context: { sequelize, table } }) {
      await sequelize.query(`DROP TABLE IF EXISTS ${table}`, { logging: false });
    },
  },
  {
    // Lanes and fair turns: interactive work is claimed before background work, and within a lane the
    // fairness keys (accounts) take turns. Existing jobs become interactive, turn 0: they run first, as
    // they would have.
    name: '0002-lanes-and-turns',
    async up({ context: { sequelize, table, dialect } }) {
      const columns = await sequelize.getQueryInterface().describeTable(unquotedName(table), schemaOf(table, dialect));
      const statements = [
        ...(columns.lane ? [] : [`ALTER TABLE ${table} ADD COLUMN lane INTEGER NOT NULL DEFAULT 0`]),
        ...(columns.fairness_key ? [] : [`ALTER TABLE ${table} ADD COLUMN fairness_key VARCHAR(500) NOT NULL DEFAULT ''`]),
        ...(columns.turn ? [] : [`ALTER TABLE ${table} ADD COLUMN turn BIGINT NOT NULL DEFAULT 0`]),
        // Claims walk pending jobs in claim order and stop at the limit.
        `CREATE INDEX IF NOT EXISTS queue_jobs_claim_order ON ${table} (status, lane, turn, run_at, id)`,
        // A key's last active turn, when its next job is queued.
        `CREATE INDEX IF NOT EXISTS queue_jobs_key_turn ON ${table} (lane, fairness_key, turn) WHERE status IN ('pending', 'running')`,
      ];
      for (const statement of statements) await sequelize.query(statement, { logging: false });
    },
    async down({ context: { sequelize, table } }) {
      for (const statement of [
        'DROP INDEX IF EXISTS queue_jobs_claim_order',
        'DROP INDEX IF EXISTS queue_jobs_key_turn',
        `ALTER TABLE ${table} DROP COLUMN turn`,
        `ALTER TABLE ${table} DROP COLUMN fairness_key`,
        `ALTER TABLE ${table} DROP COLUMN lane`,
      ]) {
        await sequelize.query(statement, { logging: false });
      }
    },
  },
  {
    // Finished jobs are pruned by age, oldest first.
    name: '0003-finished-by-age',
    async up({ context: { sequelize, table } }) {
      await sequelize.query(`CREATE INDEX IF NOT EXISTS queue_jobs_finished_updated_at ON ${table} (updated_at) WHERE status IN ('done', 'dead')`, { logging: false });
    },
    async down({ context: { sequelize } }) {
      await sequelize.query('DROP INDEX IF EXISTS queue_jobs_finished_updated_at', { logging: false });
    },
  },
];

/** `"schema"."queue_jobs"` -> `queue_jobs`. */
function unquotedName(table: string): string {
  return table.split('.').at(-1)!.replaceAll('"', '');
}

function schemaOf(table: string, dialect: 'sqlite' | 'postgres'): string | undefined {
  const parts = table.split('.');
  return dialect === 'postgres' && parts.length === 2 ? parts[0]!.replaceAll('"', '') : undefined;
}
