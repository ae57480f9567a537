import type { Transaction } from 'sequelize';
import { CoreError } from '../../../../core/errors.js';
import { settleAll } from '../../../../core/settle.js';
import type { Patient } from '../../../../core/domain/types.js';
import { matchesPatientSearch } from '../../../../core/entities/patient-search.js';
import type { PatientRepository } from '../../../../core/ports/storage.port.js';
import { KEY_HASH_COLUMNS } from '../mappers.js';
import type { Row } from '../schema.js';
import { Params } from '../raw-sql.js';
import { IDS_PER_STATEMENT, KEY_ENTRIES_PER_STATEMENT, OLDEST_FIRST, PATIENT_UPSERT, ROWS_PER_STATEMENT, type StoredKeys, chunks, columnList, copy, lastByKey, matchKeysText, owned, type SqlAccess } from '../sql-access.js';

/* Patients, the blocking-key index their matching reads (patient_key_hashes), and the account lock. */

/**
 * The accounts whose patients each transaction holds, with the revision each had when taken: the lock is
 * taken once per transaction whatever the number of writes (a batch's writes may ask for it at once).
 */
const heldAccounts = new WeakMap<Transaction, Map<string, Promise<number>>>();

/**
 * Takes the account lock in the transaction (see PatientRepository.lockAccount) and returns the revision as
 * last committed. One statement: the upsert of the account's revision row holds that row until the
 * transaction ends, so a second writer of the account waits on it (PostgreSQL's row lock; SQLite's
 * transactions run one at a time anyway) and then counts on from the first one's commit.
 */
function holdAccount(db: SqlAccess, accountId: string, transaction: Transaction): Promise<number> {
  let held = heldAccounts.get(transaction);
  if (!held) {
    held = new Map();
    heldAccounts.set(transaction, held);
  }
  let revision = held.get(accountId);
  if (!revision) {
    revision = db.raw
      .all(
        transaction,
        `INSERT INTO patient_revisions (account_id, revision) VALUES (${db.raw.list(1)}, 1)
         ON CONFLICT (account_id) DO UPDATE SET revision = patient_revisions.revision + 1 RETURNING revision`,
        [accountId],
      )
      .then((rows) => Number(rows[0]!.revision) - 1);
    held.set(accountId, revision);
  }
  return revision;
}

/** Holds every account of the batch, in one order whatever the batch's, so two writers never wait on each other in a circle. */
async function holdAccountsOf(db: SqlAccess, batch: readonly Patient[], transaction: Transaction): Promise<void> {
  for (const accountId of [...new Set(batch.map((patient) => patient.accountId))].sort()) await holdAccount(db, accountId, transaction);
}

export function patientsRepository(db: SqlAccess): PatientRepository {
  const toPatient = (row: Row) => db.map.patients.fromRow(row);

  const insertOne = (patient: Patient) =>
    db.atomic(async (transaction) => {
      await holdAccount(db, patient.accountId, transaction);
      await db.insertRows('patients', [db.map.patients.toRow(patient)], 'patient', transaction);
      await insertKeys(db, [patient], transaction);
    });

  const insertBatch = (batch: readonly Patient[]) =>
    db.atomic(async (transaction) => {
      await holdAccountsOf(db, batch, transaction);
      // Both statements queued at once: the writer runs the second while this thread is elsewhere.
      await settleAll([db.insertPatientRows(transaction, batch), insertKeys(db, batch, transaction)]);
    });

  /** The stored keys and version of these patients (any account), by id. */
  const storedKeysOf = async (ids: readonly string[], transaction: Transaction) => {
    const stored = new Map<string, StoredKeys & { matchKeysText: string; version: number }>();
    for (const chunk of chunks(ids, IDS_PER_STATEMENT)) {
      const rows = await db.raw.all(transaction, `SELECT id, account_id, match_keys, version FROM patients WHERE id IN (${db.raw.list(chunk.length)})`, chunk);
      for (const row of rows) {
        const text = matchKeysText(row.match_keys);
        stored.set(String(row.id), {
          patientId: String(row.id),
          accountId: String(row.account_id),
          matchKeys: JSON.parse(text) as string[],
          matchKeysText: text,
          version: Number(row.version),
        });
      }
    }
    return stored;
  };

  const replaceKeys = async (previous: readonly StoredKeys[], batch: readonly Patient[], transaction: Transaction) => {
    await deleteKeys(db, previous, transaction);
    await insertKeys(db, batch, transaction);
  };

  /** A JSON array column holding `value`, as each dialect spells it. */
  const arrayHolds = (column: 'facility_ids' | 'cohort_ids', value: string, params: Params) =>
    db.context.postgres
      ? `CAST(${column} AS jsonb) @> CAST(${params.add(JSON.stringify([value]))} AS jsonb)`
      : `EXISTS (SELECT 1 FROM json_each(${column}) WHERE json_each.value = ${params.add(value)})`;

  /** These patients of any account, whole, by id ascending. */
  const patientsById = async (ids: readonly string[]) => {
    const found: Patient[] = [];
    for (const chunk of chunks(ids, IDS_PER_STATEMENT)) {
      const rows = await db.raw.all(db.transaction, `SELECT * FROM patients WHERE id IN (${db.raw.list(chunk.length)}) ORDER BY id ASC`, chunk);
      found.push(...rows.map(toPatient));
    }
    return found;
  };

  return {
    insert: (patient) => insertOne(patient),
    insertMany: async (batch) => {
      if (batch.length > 0) await insertBatch(batch);
    },
    get: async (accountId, id) => {
      const row = await db.selectOne('patients', owned(accountId, id));
      return row && toPatient(row);
    },
    findByExternalId: async (accountId, externalId) =>
      (
        await db.select(
          'patients',
          [
            ['account_id', accountId],
            ['external_id', externalId],
          ],
          OLDEST_FIRST,
        )
      ).map(toPatient),
    findByMatchKeys: async (accountId, matchKeys) => {
      const wanted = new Set(matchKeys);
      if (wanted.size === 0) return [];
      const hashes = [...new Set([...wanted].map((key) => db.map.hashOf(accountId, key)))];
      // One statement whatever the number of keys (the hashes travel as one JSON parameter); the plan is an
      // index probe per hash, then one per patient id, whatever the account's size.
      const rows = await db.raw.all(
        db.transaction,
        `SELECT * FROM patients WHERE id IN (
           SELECT patient_id FROM patient_key_hashes WHERE key_hash IN (${hashList(db, 1)})
         ) AND account_id = ${db.raw.list(1, 2)} ORDER BY created_at ASC, id ASC`,
        [JSON.stringify(hashes), accountId],
      );
      // A hash shared by chance with another key brings a patient that shares no wanted key: not a candidate.
      return rows.map(toPatient).filter((patient) => patient.matchKeys.some((key) => wanted.has(key)));
    },
    list: async (accountId, options = {}) => {
      const params = new Params();
      const conditions = [`account_id = ${params.add(accountId)}`];
      if (options.after !== undefined) conditions.push(`id > ${params.add(options.after)}`);
      if (options.facilityId !== undefined) conditions.push(arrayHolds('facility_ids', options.facilityId, params));
      if (options.cohortId !== undefined) conditions.push(arrayHolds('cohort_ids', options.cohortId, params));
      let sql = `SELECT ${columnList('patients')} FROM patients WHERE ${conditions.join(' AND ')} ORDER BY id ASC`;
      if (options.limit !== undefined) sql += ` LIMIT ${params.add(Math.max(0, Math.floor(options.limit)))}`;
      return (await db.query(sql, params)).map(toPatient);
    },
    search: async (accountId, search, { after, limit, scan }) => {
      const found: string[] = [];
      let examined = 0;
      let last = after;
      // Narrow rows, a chunk at a time, along the (account_id, id) index (or (account_id, external_id)):
      // the rule is applied here, in one place for every adapter, and only the patients found are read whole.
      while (examined < scan && found.length < limit) {
        const chunk = Math.min(SEARCH_CHUNK, scan - examined);
        const rows = await searchWindow(db, accountId, search.externalId, last, chunk);
        for (const row of rows) {
          last = String(row.id);
          examined++;
          const candidate = { firstName: String(row.first_name), lastName: String(row.last_name), dob: String(row.dob), externalId: row.external_id === null ? undefined : String(row.external_id), facilityIds: db.map.patientFacilityIds(row) };
          if (matchesPatientSearch(search, candidate) && found.push(last) === limit) break;
        }
        // A short window is the end of the account's patients, unless the limit stopped the examination inside it.
        if (rows.length < chunk && (rows.length === 0 || last === String(rows[rows.length - 1]!.id))) return { patients: await patientsById(found) };
      }
      const more = last !== undefined && (await searchWindow(db, accountId, search.externalId, last, 1)).length > 0;
      return more ? { patients: await patientsById(found), next: last! } : { patients: await patientsById(found) };
    },
    update: (patient) =>
      db.atomic(async (transaction) => {
        await holdAccount(db, patient.accountId, transaction);
        // Read after the lock: no other write of the account's patients can come between this and the UPDATE.
        const previous = (await storedKeysOf([patient.id], transaction)).get(patient.id);
        if (!previous || previous.accountId !== patient.accountId) return undefined;
        if (previous.version !== patient.version) return 'stale' as const;
        const next: Patient = { ...patient, version: patient.version + 1 };
        if (!(await db.replace('patients', db.map.patients.toRow(next), 'patient', [['version', patient.version]], transaction))) return 'stale' as const;
        await replaceKeys([previous], [next], transaction);
        return copy(next);
      }),
    updateMany: async (batch) => {
      if (batch.length === 0) return [];
      const patients = lastByKey(batch, (patient) => patient.id);
      return db.atomic(async (transaction) => {
        await holdAccountsOf(db, patients, transaction);
        const stored = await storedKeysOf(
          patients.map((patient) => patient.id),
          transaction,
        );
        const missing = patients.find((patient) => stored.get(patient.id)?.accountId !== patient.accountId);
        if (missing) throw new CoreError('PATIENT_NOT_FOUND', `patient ${missing.id} not found`, { details: { id: missing.id } });
        const stale = patients.filter((patient) => stored.get(patient.id)!.version !== patient.version).map((patient) => patient.id);
        if (stale.length > 0) return stale;
        // INSERT ... ON CONFLICT DO UPDATE: one multi-row statement per chunk replaces every column but the id.
        await db.insertPatientRows(
          transaction,
          patients.map((patient) => ({ ...patient, version: patient.version + 1 })),
          PATIENT_UPSERT,
        );
        // A matching row mostly keeps the blocking keys it had; only changed key sets are rewritten.
        const rekeyed = patients.filter((patient) => stored.get(patient.id)!.matchKeysText !== JSON.stringify(patient.matchKeys));
        await replaceKeys(
          rekeyed.map((patient) => stored.get(patient.id)!),
          rekeyed,
          transaction,
        );
        return [];
      });
    },
    remove: (accountId, id) =>
      db.atomic(async (transaction) => {
        await holdAccount(db, accountId, transaction);
        const previous = (await storedKeysOf([id], transaction)).get(id);
        const removed = await db.remove(
          'patients',
          owned(accountId, id),
          transaction,
        );
        if (removed === 0) return false;
        if (previous) await deleteKeys(db, [previous], transaction);
        return true;
      }),
    revision: async (accountId) => {
      const rows = await db.raw.all(db.transaction, `SELECT revision FROM patient_revisions WHERE account_id = ${db.raw.list(1)}`, [accountId], { keepPrepared: true });
      return rows.length > 0 ? Number(rows[0]!.revision) : 0;
    },
    lockAccount: async (accountId) => {
      if (!db.transaction) throw new Error('lockAccount holds the account for a transaction: call it on the storage the transaction hands its work');
      return holdAccount(db, accountId, db.transaction);
    },
  };
}

/** Patients examined per statement of a search: a few hundred KB of narrow rows. */
const SEARCH_CHUNK = 2_000;

/** The next `count` patients of the account after `after` (of those holding `externalId`, when given), narrow rows by id. */
function searchWindow(db: SqlAccess, accountId: string, externalId: string | undefined, after: string | undefined, count: number): Promise<Row[]> {
  const params: unknown[] = [accountId];
  let where = `account_id = ${db.raw.list(1, 1)}`;
  if (externalId !== undefined) {
    params.push(externalId);
    where += ` AND external_id = ${db.raw.list(1, params.length)}`;
  }
  if (after !== undefined) {
    params.push(after);
    where += ` AND id > ${db.raw.list(1, params.length)}`;
  }
  return db.raw.all(db.transaction, `SELECT id, first_name, last_name, dob, external_id, facility_ids FROM patients WHERE ${where} ORDER BY id ASC LIMIT ${Math.trunc(count)}`, params);
}

/** Adds the patients' entries to the blocking-key index. */
async function insertKeys(db: SqlAccess, batch: readonly Patient[], transaction: Transaction): Promise<void> {
  const tuples: unknown[][] = [];
  for (const patient of batch) db.map.pushKeyHashValues(patient.accountId, patient.id, patient.matchKeys, tuples);
  // Two patients' keys hashing alike are two entries (the patient id differs); nothing conflicts but a replay.
  // Bound value by value, all in one statement: two values an entry, so a batch's ~2,000 entries stay far
  // below SQLite's 32,766 variables, and one round trip to the writer beats three of the JSON form.
  for (const chunk of chunks(tuples, KEY_ENTRIES_PER_STATEMENT)) {
    await db.raw.run(transaction, db.raw.insertValues('patient_key_hashes', KEY_HASH_COLUMNS, chunk.length, ' ON CONFLICT DO NOTHING'), chunk.flat(), 'patient key');
  }
}

/** Removes the entries these stored keys put in the blocking-key index. */
async function deleteKeys(db: SqlAccess, previous: readonly StoredKeys[], transaction: Transaction): Promise<void> {
  const tuples: unknown[][] = [];
  for (const keys of previous) db.map.pushKeyHashValues(keys.accountId, keys.patientId, keys.matchKeys, tuples);
  if (tuples.length === 0) return;
  const pairs = db.context.postgres
    ? 'SELECT CAST(value ->> 0 AS bigint), value ->> 1 FROM json_array_elements(CAST($1 AS json)) AS rows(value)'
    : 'SELECT value ->> 0, value ->> 1 FROM json_each(?)';
  for (const chunk of chunks(tuples, ROWS_PER_STATEMENT)) {
    await db.raw.run(transaction, `DELETE FROM patient_key_hashes WHERE (key_hash, patient_id) IN (${pairs})`, [JSON.stringify(chunk)]);
  }
}

/** `IN (...)` of the hashes in the JSON array bound as parameter `position`. */
function hashList(db: SqlAccess, position: number): string {
  return db.context.postgres
    ? `SELECT CAST(value AS bigint) FROM json_array_elements_text(CAST($${position} AS json)) AS hashes(value)`
    : 'SELECT value FROM json_each(?)';
}
