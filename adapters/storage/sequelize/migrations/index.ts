import { DataTypes, QueryTypes, type QueryInterface, type Sequelize, type Transaction } from 'sequelize';
import { Umzug, type UmzugStorage } from 'umzug';
import { runTransaction } from '../connection.js';
import * as initial from './0001-initial.js';
import * as matchKeyHashes from './0002-match-key-hashes.js';
import * as documentQueryProgress from './0003-document-query-progress.js';
import * as outboxStreams from './0004-outbox-streams.js';
import * as outboxLeases from './0005-outbox-leases.js';
import * as networkQueries from './0006-network-queries.js';
import * as bulkCounts from './0007-bulk-counts.js';
import * as rekeyNames from './0008-rekey-names.js';
import * as patientVersions from './0009-patient-versions.js';
import * as bulkPauses from './0010-bulk-pauses.js';
import * as webhookEndpoints from './0011-webhook-endpoints.js';
import * as webhookHealth from './0012-webhook-health.js';

/** What every storage migration receives: DDL goes through `queryInterface` with `{ transaction }`. */
export interface MigrationContext {
  queryInterface: QueryInterface;
  transaction: Transaction;
}

/** Every migration of the storage, in order. Append; never reorder or rename (names are stored). */
const MIGRATIONS: { name: string; up: (params: { context: MigrationContext }) => Promise<void>; down: (params: { context: MigrationContext }) => Promise<void> }[] = [
  initial,
  matchKeyHashes,
  documentQueryProgress,
  outboxStreams,
  outboxLeases,
  networkQueries,
  bulkCounts,
  rekeyNames,
  patientVersions,
  bulkPauses,
  webhookEndpoints,
  webhookHealth,
];

/** Where applied migrations are recorded; other adapters on the same database keep their own table. */
export const STORAGE_MIGRATIONS_TABLE = 'carebridge_storage_migrations';

/** Arbitrary constant: the PostgreSQL advisory lock that keeps two processes from migrating at once. */
const MIGRATION_LOCK = 0x63627374;

/**
 * umzug's record of applied migrations, kept in the migrating transaction itself: a migration and its
 * record commit together, so a crash never leaves a half-applied schema marked as done (or the reverse).
 */
class TransactionalMetaTable implements UmzugStorage<MigrationContext> {
  async executed({ context }: { context: MigrationContext }): Promise<string[]> {
    const { queryInterface, transaction } = context;
    await queryInterface.createTable(
      STORAGE_MIGRATIONS_TABLE,
      {
        name: { type: DataTypes.TEXT, allowNull: false, primaryKey: true },
        applied_at: { type: DataTypes.TEXT, allowNull: false },
      },
      { transaction },
    );
    const rows = await queryInterface.sequelize.query<{ name: string }>(`SELECT name FROM ${STORAGE_MIGRATIONS_TABLE} ORDER BY name`, {
      type: QueryTypes.SELECT,
      transaction,
    });
    return rows.map((row) => row.name);
  }

  async logMigration({ name, context }: { name: string; context: MigrationContext }): Promise<void> {
    await context.queryInterface.sequelize.query(`INSERT INTO ${STORAGE_MIGRATIONS_TABLE} (name, applied_at) VALUES (:name, :appliedAt)`, {
      replacements: { name, appliedAt: new Date().toISOString() },
      transaction: context.transaction,
    });
  }

  async unlogMigration({ name, context }: { name: string; context: MigrationContext }): Promise<void> {
    await context.queryInterface.sequelize.query(`DELETE FROM ${STORAGE_MIGRATIONS_TABLE} WHERE name = :name`, {
      replacements: { name },
      transaction: context.transaction,
    });
  }
}

/**
 * Applies pending storage migrations, all in one transaction (DDL is transactional on both SQLite and
 * PostgreSQL), and returns the names applied (empty when the schema is current).
 */
export async function migrateStorage(sequelize: Sequelize): Promise<string[]> {
  return runTransaction(sequelize, async (transaction) => {
    if (sequelize.getDialect() === 'postgres') {
      // Several processes may start on one database at once; the second waits here, then finds nothing to do.
      await sequelize.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`, { transaction });
    }
    const umzug = new Umzug<MigrationContext>({
      migrations: MIGRATIONS.map((migration) => ({ name: migration.name, up: migration.up, down: migration.down })),
      context: { queryInterface: sequelize.getQueryInterface(), transaction },
      storage: new TransactionalMetaTable(),
      logger: undefined,
    });
    return (await umzug.up()).map((migration) => migration.name);
  });
}
