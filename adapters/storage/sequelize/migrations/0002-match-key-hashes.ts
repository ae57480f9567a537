import { QueryTypes } from 'sequelize';
import { loadMatchKeyHasher } from '../match-key-hash.js';
import type { MigrationContext } from './index.js';

/**
 * Replaces `patient_match_keys` (account id, key text and patient id in a rowid table, its primary key and
 * a covering index) with `patient_key_hashes`: one B-tree of (53-bit hash of account and key, patient id).
 * See `match-key-hash.ts` for why. Existing keys are carried over, a page at a time.
 */
export const name = '0002-match-key-hashes';

const PAGE = 5_000;

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  const sequelize = queryInterface.sequelize;
  const postgres = sequelize.getDialect() === 'postgres';
  const hashOf = await loadMatchKeyHasher();
  // WITHOUT ROWID: the primary key is the table, so an entry is written once, not to a table and an index.
  await sequelize.query(
    postgres
      ? 'CREATE TABLE patient_key_hashes (key_hash BIGINT NOT NULL, patient_id TEXT COLLATE "C" NOT NULL, PRIMARY KEY (key_hash, patient_id))'
      : 'CREATE TABLE patient_key_hashes (key_hash INTEGER NOT NULL, patient_id TEXT NOT NULL, PRIMARY KEY (key_hash, patient_id)) WITHOUT ROWID',
    { transaction },
  );
  let after: { patientId: string; matchKey: string } | undefined;
  for (;;) {
    const rows = await sequelize.query<{ patient_id: string; match_key: string; account_id: string }>(
      `SELECT patient_id, match_key, account_id FROM patient_match_keys
        ${after ? 'WHERE patient_id > :patientId OR (patient_id = :patientId AND match_key > :matchKey)' : ''}
        ORDER BY patient_id, match_key LIMIT ${PAGE}`,
      { type: QueryTypes.SELECT, transaction, replacements: after ?? {} },
    );
    if (rows.length === 0) break;
    const entries = rows.map((row) => [hashOf(row.account_id, row.match_key), row.patient_id]);
    await sequelize.query(`INSERT INTO patient_key_hashes (key_hash, patient_id) VALUES ${entries.map(() => '(?, ?)').join(', ')} ON CONFLICT DO NOTHING`, {
      replacements: entries.flat(),
      transaction,
    });
    const last = rows[rows.length - 1]!;
    after = { patientId: last.patient_id, matchKey: last.match_key };
  }
  await queryInterface.dropTable('patient_match_keys', { transaction });
}

export async function down({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  const sequelize = queryInterface.sequelize;
  const postgres = sequelize.getDialect() === 'postgres';
  const ordered = postgres ? 'TEXT COLLATE "C"' : 'TEXT';
  await sequelize.query(
    `CREATE TABLE patient_match_keys (
       patient_id ${ordered} NOT NULL REFERENCES patients (id) ON DELETE CASCADE,
       match_key ${ordered} NOT NULL,
       account_id ${ordered} NOT NULL,
       PRIMARY KEY (patient_id, match_key))`,
    { transaction },
  );
  await queryInterface.addIndex('patient_match_keys', ['account_id', 'match_key', 'patient_id'], {
    name: 'patient_match_keys_account_id_match_key_patient_id',
    transaction,
  });
  // The key texts are not in the hashes; every patient row still holds its own.
  const keys = postgres
    ? `SELECT id, json_array_elements_text(match_keys), account_id FROM patients`
    : // `WHERE true`: SQLite's reading of INSERT ... SELECT ... ON CONFLICT needs it after a join.
      `SELECT patients.id, json_each.value, patients.account_id FROM patients, json_each(patients.match_keys) WHERE true`;
  await sequelize.query(`INSERT INTO patient_match_keys (patient_id, match_key, account_id) ${keys} ON CONFLICT DO NOTHING`, { transaction });
  await queryInterface.dropTable('patient_key_hashes', { transaction });
}
