import { DataTypes } from 'sequelize';
import type { MigrationContext } from './index.js';

/**
 * Network queries (one per request across the HIE, pharmacy and laboratory sources). `state` is the
 * query's overall status, kept in a column of its own so the running queries of a patient and the finished
 * ones due for pruning are each read from an index.
 */
export const name = '0006-network-queries';

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  const postgres = queryInterface.sequelize.getDialect() === 'postgres';
  const ordered = postgres ? 'TEXT COLLATE "C"' : DataTypes.TEXT;
  const id = { type: ordered, allowNull: false };
  await queryInterface.createTable(
    'network_queries',
    {
      id: { ...id, primaryKey: true },
      account_id: id,
      patient_id: id,
      facility_id: { type: DataTypes.TEXT, allowNull: false },
      state: { type: DataTypes.TEXT, allowNull: false },
      sources: { type: postgres ? DataTypes.JSON : DataTypes.TEXT, allowNull: false },
      metadata: { type: postgres ? DataTypes.JSON : DataTypes.TEXT, allowNull: true },
      created_at: { type: ordered, allowNull: false },
      updated_at: { type: ordered, allowNull: false },
    },
    { transaction },
  );
  await queryInterface.addIndex('network_queries', ['account_id', 'patient_id', 'state'], { name: 'network_queries_account_id_patient_id_state', transaction });
  await queryInterface.addIndex('network_queries', ['state', 'updated_at'], { name: 'network_queries_state_updated_at', transaction });
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  await queryInterface.dropTable('network_queries', { transaction });
}
