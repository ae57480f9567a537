import { QueryTypes } from 'sequelize';
import type { Gender } from '../../../../core/domain/types.js';
import { matchKeysFor } from '../../../../core/matching/block.js';
import { loadMatchKeyHasher } from '../match-key-hash.js';
import type { MigrationContext } from './index.js';

/**
 * The blocking keys of the patients stored before names were folded as they are now (compatibility forms,
 * vowel signs and other marks that are letters kept, final sigma as sigma, invisible characters dropped)
 * are made again from their last names: a row is looked up by its keys as folded now, so a patient still
 * holding keys folded the old way (`παπαδοπουλος` with its final `ς`, `रम` for `राम`) would never be met
 * again, and every later row of that person would create a duplicate. Only patients whose keys change are
 * written, a page at a time.
 */
export const name = '0008-rekey-names';

const PAGE = 5_000;

interface StoredPatient {
  id: string;
  account_id: string;
  last_name: string;
  dob: string;
  gender_at_birth: string;
  match_keys: unknown;
}

export async function up({ context: { queryInterface, transaction } }: { context: MigrationContext }): Promise<void> {
  const sequelize = queryInterface.sequelize;
  const hashOf = await loadMatchKeyHasher();
  let after: string | undefined;
  for (;;) {
    const rows = await sequelize.query<StoredPatient>(
      `SELECT id, account_id, last_name, dob, gender_at_birth, match_keys FROM patients ${after === undefined ? '' : 'WHERE id > :after'} ORDER BY id LIMIT ${PAGE}`,
      { type: QueryTypes.SELECT, transaction, replacements: after === undefined ? {} : { after } },
    );
    if (rows.length === 0) break;
    after = rows[rows.length - 1]!.id;
    for (const row of rows) {
      const stored = (typeof row.match_keys === 'string' ? JSON.parse(row.match_keys) : row.match_keys) as string[];
      const keys = matchKeysFor({ lastName: row.last_name, dob: row.dob, genderAtBirth: row.gender_at_birth as Gender });
      if (JSON.stringify(keys) === JSON.stringify(stored)) continue;
      await sequelize.query(`UPDATE patients SET match_keys = :keys WHERE id = :id`, {
        transaction,
        replacements: { id: row.id, keys: JSON.stringify(keys) },
      });
      await sequelize.query('DELETE FROM patient_key_hashes WHERE patient_id = :id', { transaction, replacements: { id: row.id } });
      const hashes = [...new Set(keys.map((key) => hashOf(row.account_id, key)))];
      if (hashes.length === 0) continue;
      await sequelize.query(`INSERT INTO patient_key_hashes (key_hash, patient_id) VALUES ${hashes.map(() => '(?, ?)').join(', ')} ON CONFLICT DO NOTHING`, {
        transaction,
        replacements: hashes.flatMap((hash) => [hash, row.id]),
      });
    }
  }
}

/** The keys made by the folding before cannot be made again: the patients keep the current ones. */
export async function down(): Promise<void> {}
