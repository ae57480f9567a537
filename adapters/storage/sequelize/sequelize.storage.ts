import { BaseError, Op, QueryTypes, col, fn, literal, type Sequelize, type Transaction, type WhereOptions } from 'sequelize';
import { CoreError } from '../../../core/errors.js';
import { settleAll } from '../../../core/settle.js';
import type { BulkQueriesProgress, BulkRowOutcome, FhirResourceRecord, OutboxMessage, Patient } from '../../../core/domain/types.js';
import type {
  AccountRepository,
  BulkRequestRepository,
  BulkRowRepository,
  CohortRepository,
  ConsolidatedQueryRepository,
  NetworkQueryRepository,
  DocumentQueryRepository,
  DocumentRepository,
  FacilityRepository,
  FhirResourceRepository,
  OrganizationRepository,
  OutboxRepository,
  PatientRepository,
  StoragePort,
  WebhookSettingsRepository,
} from '../../../core/ports/storage.port.js';
import { configureSqlite, openSequelize, runTransaction, type SequelizeConnectionOptions } from './connection.js';
import { BULK_ROW_COLUMNS, KEY_HASH_COLUMNS, PATIENT_COLUMNS, RowMapper, type Columns } from './mappers.js';
import { loadMatchKeyHasher, type MatchKeyHasher } from './match-key-hash.js';
import { migrateStorage } from './migrations/index.js';
import { defineStorageModels, type Row, type StorageModel, type StorageModels } from './models.js';
import { RawSql } from './raw-sql.js';

export interface SequelizeStorageOptions extends SequelizeConnectionOptions {
  /**
   * An instance to use instead of opening one (e.g. shared with the durable queue). The storage then does
   * not close it; whoever opened it does. Exclusive with url, dataDir and schema.
   */
  sequelize?: Sequelize;
  /**
   * Replaces the blocking-key index's hash. For tests: a hash under which every key collides shows that
   * collisions only cost extra candidates, never a wrong one. The stored index must always be built with
   * the same hash, so never set it on a real database.
   */
  matchKeyHasher?: MatchKeyHasher;
}

/**
 * Rows per multi-row statement (model `bulkCreate`s and the JSON batches alike): a batch of ~1,000
 * patients is one statement per table, and no statement carries more than a few MB. For `bulkCreate`,
 * SQLite allows 32,766 bound variables per statement; the widest table has 17 columns.
 */
const ROWS_PER_STATEMENT = 1_000;
/** Entries of the blocking-key index per statement (two bound values each). */
const KEY_ENTRIES_PER_STATEMENT = 10_000;
/** Values per `IN (...)` list. */
const IDS_PER_STATEMENT = 500;

/**
 * ` ON CONFLICT (key) DO UPDATE SET column = excluded.column, ...`: the same text on SQLite and PostgreSQL.
 * `unchanged` columns are left out of the SET: SQLite rewrites the entries of every index on a column
 * the SET names, changed or not.
 */
function upsertClause(keys: readonly string[], columns: Columns, unchanged: readonly string[] = []): string {
  const updates = columns
    .filter(([column]) => !keys.includes(column) && !unchanged.includes(column))
    .map(([column]) => `${column} = excluded.${column}`);
  return ` ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${updates.join(', ')}`;
}

// updateMany checks each patient is the stored one's account before writing: account_id never changes.
const PATIENT_UPSERT = upsertClause(['id'], PATIENT_COLUMNS, ['account_id']);
const BULK_ROW_UPSERT = upsertClause(['request_id', 'row_index'], BULK_ROW_COLUMNS);

const OLDEST_FIRST: [string, string][] = [
  ['created_at', 'ASC'],
  ['id', 'ASC'],
];
const NEWEST_FIRST: [string, string][] = [
  ['created_at', 'DESC'],
  ['id', 'DESC'],
];

/** `"name"`: the same identifier quoting on SQLite and PostgreSQL (column names are snake_case, never quoted themselves). */
function quoted(name: string): string {
  return `"${name}"`;
}

/**
 * The conditions of a WHERE given as `{ column: value }` with primitive values (or arrays of them, for IN),
 * as pairs; undefined for anything else (operators, NULLs), which is left to Sequelize.
 */
function plainConditions(where: WhereOptions): [string, unknown][] | undefined {
  if (Object.getOwnPropertySymbols(where).length > 0) return undefined;
  const pairs = Object.entries(where as Record<string, unknown>);
  const primitive = (value: unknown) => typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
  for (const [column, value] of pairs) {
    if (!/^[a-z_][a-z0-9_]*$/.test(column)) return undefined;
    if (!(primitive(value) || (Array.isArray(value) && value.every(primitive)))) return undefined;
  }
  return pairs;
}

/** What a storage shares with the storages its transactions hand out. */
/** Arbitrary constant: the PostgreSQL advisory lock that serialises outbox claims. */
const OUTBOX_CLAIM_LOCK = 0x63626f78;

interface Context {
  sequelize: Sequelize;
  models: StorageModels;
  map: RowMapper;
  /** Batch statements on the driver connection (the bulk import's hot paths). */
  raw: RawSql;
  postgres: boolean;
  /** Whether `close` closes the Sequelize instance (it opened it). */
  owned: boolean;
  closed: boolean;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let start = 0; start < items.length; start += size) result.push(items.slice(start, start + size));
  return result;
}

/** The last item of each key: a batch that names a record twice stores its last version, as sequential writes would. */
function lastByKey<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
  return [...new Map(items.map((item) => [keyOf(item), item] as const)).values()];
}

const copy = <T>(value: T): T => structuredClone(value);

/** The stored `match_keys` column as JSON text, whichever form the dialect returns it in. */
function matchKeysText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A patient's blocking keys as they are stored, to find its entries of the key index again. */
interface StoredKeys {
  accountId: string;
  patientId: string;
  matchKeys: readonly string[];
}

/**
 * Sequelize errors carry the failed statement (`sql`, `parameters`, the driver's `detail`) as enumerable
 * properties, and those hold PHI; a logger would print them. Errors leave the repositories as CoreErrors
 * whose message names the failure and whose (non-enumerable) cause keeps the original for debugging.
 */
function withoutStatement(error: unknown): unknown {
  if (!(error instanceof BaseError) || error instanceof CoreError) return error;
  const driver = (error as { parent?: { code?: unknown } }).parent;
  const code = typeof driver?.code === 'string' ? driver.code : undefined;
  return new CoreError('INTERNAL', `storage query failed (${error.name}${code ? ` ${code}` : ''})`, {
    cause: error,
    details: code ? { code } : undefined,
  });
}

/** The repository with every method's failures passed through `withoutStatement`. */
function guarded<R extends object>(repository: R): R {
  const methods = repository as Record<string, unknown>;
  for (const [name, method] of Object.entries(methods)) {
    if (typeof method !== 'function') continue;
    methods[name] = async (...args: unknown[]) => {
      try {
        return await (method as (...params: unknown[]) => Promise<unknown>)(...args);
      } catch (error) {
        throw withoutStatement(error);
      }
    };
  }
  return repository;
}

/**
 * The storage port on Sequelize 6, over SQLite (the embedded default) or PostgreSQL. `open` runs the
 * migrations. Every query of tenant data is scoped by account in its WHERE clause.
 *
 * A transaction hands `work` a storage bound to a managed Sequelize transaction: every query it makes
 * passes `{ transaction }`. On SQLite, transactions are serialised (see `runTransaction`).
 */
export class SequelizeStorage implements StoragePort {
  readonly accounts: AccountRepository;
  readonly webhookSettings: WebhookSettingsRepository;
  readonly organizations: OrganizationRepository;
  readonly facilities: FacilityRepository;
  readonly cohorts: CohortRepository;
  readonly patients: PatientRepository;
  readonly bulkRequests: BulkRequestRepository;
  readonly bulkRows: BulkRowRepository;
  readonly documents: DocumentRepository;
  readonly documentQueries: DocumentQueryRepository;
  readonly fhirResources: FhirResourceRepository;
  readonly consolidatedQueries: ConsolidatedQueryRepository;
  readonly networkQueries: NetworkQueryRepository;
  readonly outbox: OutboxRepository;

  /** Opens (or adopts) a Sequelize instance and brings its schema up to date. */
  static async open(options: SequelizeStorageOptions = {}): Promise<SequelizeStorage> {
    const { sequelize: given, matchKeyHasher, ...connection } = options;
    if (given && (connection.url !== undefined || connection.dataDir !== undefined || connection.schema !== undefined)) {
      throw new Error('pass either a Sequelize instance or connection options (url, dataDir, schema), not both');
    }
    if (given) configureSqlite(given);
    const sequelize = given ?? (await openSequelize(connection));
    try {
      await migrateStorage(sequelize);
    } catch (error) {
      if (!given) await sequelize.close();
      throw error;
    }
    const postgres = sequelize.getDialect() === 'postgres';
    return new SequelizeStorage({
      sequelize,
      models: defineStorageModels(sequelize),
      map: new RowMapper(postgres, matchKeyHasher ?? (await loadMatchKeyHasher())),
      raw: new RawSql(sequelize),
      postgres,
      owned: given === undefined,
      closed: false,
    });
  }

  private constructor(
    private readonly context: Context,
    private readonly tx?: Transaction,
  ) {
    const repositories = new Repositories(context, tx, (work) => this.atomic(work));
    this.accounts = guarded(repositories.accounts());
    this.webhookSettings = guarded(repositories.webhookSettings());
    this.organizations = guarded(repositories.organizations());
    this.facilities = guarded(repositories.facilities());
    this.cohorts = guarded(repositories.cohorts());
    this.patients = guarded(repositories.patients());
    this.bulkRequests = guarded(repositories.bulkRequests());
    this.bulkRows = guarded(repositories.bulkRows());
    this.documents = guarded(repositories.documents());
    this.documentQueries = guarded(repositories.documentQueries());
    this.fhirResources = guarded(repositories.fhirResources());
    this.consolidatedQueries = guarded(repositories.consolidatedQueries());
    this.networkQueries = guarded(repositories.networkQueries());
    this.outbox = guarded(repositories.outbox());
  }

  /** The underlying instance, for adapters that share the database (they create their own tables). */
  get sequelize(): Sequelize {
    return this.context.sequelize;
  }

  async transaction<T>(work: (tx: StoragePort) => Promise<T>): Promise<T> {
    if (this.tx) return work(this);
    try {
      return await runTransaction(this.context.sequelize, (transaction) => work(new SequelizeStorage(this.context, transaction)));
    } catch (error) {
      // What `work` throws comes back as thrown; only a failing BEGIN or COMMIT is a Sequelize error here.
      throw withoutStatement(error);
    }
  }

  async close(): Promise<void> {
    if (this.tx || this.context.closed) return;
    this.context.closed = true;
    if (this.context.owned) await this.context.sequelize.close();
  }

  /** Runs multi-statement writes in the current transaction, or in a new one. */
  private atomic<T>(work: (transaction: Transaction) => Promise<T>): Promise<T> {
    if (this.tx) return work(this.tx);
    return runTransaction(this.context.sequelize, work);
  }
}

class Repositories {
  private readonly sequelize: Sequelize;
  private readonly models: StorageModels;
  private readonly map: RowMapper;
  private readonly raw: RawSql;

  constructor(
    private readonly context: Context,
    private readonly transaction: Transaction | undefined,
    private readonly atomic: <T>(work: (transaction: Transaction) => Promise<T>) => Promise<T>,
  ) {
    this.sequelize = context.sequelize;
    this.models = context.models;
    this.map = context.map;
    this.raw = context.raw;
  }

  /**
   * INSERTs of rows (arrays in column order) through the driver, ROWS_PER_STATEMENT rows per statement,
   * each statement's rows bound as one JSON parameter; `suffix` follows (an upsert clause).
   */
  private async insertJsonRows(transaction: Transaction, table: string, columns: Columns, rows: readonly unknown[][], entity: string, suffix = ''): Promise<void> {
    const sql = this.raw.insertFromJson(table, columns, suffix);
    for (const chunk of chunks(rows, ROWS_PER_STATEMENT)) await this.raw.run(transaction, sql, [JSON.stringify(chunk)], entity);
  }

  /** Patients through the driver, every value bound on its own (see `RawSql.insertValues`); `suffix` as above. */
  private async insertPatientRows(transaction: Transaction, patients: readonly Patient[], suffix = ''): Promise<void> {
    for (const chunk of chunks(patients, ROWS_PER_STATEMENT)) {
      const values: unknown[] = [];
      for (const patient of chunk) this.map.pushPatientValues(patient, values);
      await this.raw.run(transaction, this.raw.insertValues('patients', PATIENT_COLUMNS, chunk.length, suffix), values, 'patient');
    }
  }

  private async findOne(model: StorageModel, where: WhereOptions, order?: [string, string][]): Promise<Row | undefined> {
    const plain = plainConditions(where);
    if (plain) return (await this.selectPlain(model, plain, order, 1))[0];
    const row = await model.findOne({ where, order, raw: true, transaction: this.transaction });
    return (row as Row | null) ?? undefined;
  }

  private async findAll(model: StorageModel, where: WhereOptions, order?: [string, string][], limit?: number): Promise<Row[]> {
    const plain = plainConditions(where);
    if (plain) return this.selectPlain(model, plain, order, limit);
    return (await model.findAll({ where, order, limit, raw: true, transaction: this.transaction })) as unknown as Row[];
  }

  /**
   * A model read whose conditions are all `column = value` (or `column IN (values)`), straight on the driver.
   * The document flow reads this way several times per document, and through the model each read cost the
   * event loop far more than the database: Sequelize builds the statement through lodash, asks SQLite for
   * the table's column types first (a PRAGMA per SELECT), and formats a stack trace (through source maps,
   * under tsx) for every statement it runs, failed or not.
   */
  private async selectPlain(model: StorageModel, conditions: [string, unknown][], order?: [string, string][], limit?: number): Promise<Row[]> {
    const params: unknown[] = [];
    const clauses: string[] = [];
    let fixedShape = true;
    for (const [column, value] of conditions) {
      if (Array.isArray(value)) {
        if (value.length === 0) return [];
        fixedShape = false;
        clauses.push(`${quoted(column)} IN (${this.raw.list(value.length, params.length + 1)})`);
        params.push(...value);
      } else {
        params.push(value);
        clauses.push(`${quoted(column)} = ${this.context.postgres ? `$${params.length}` : '?'}`);
      }
    }
    const columns = Object.keys(model.getAttributes()).map(quoted).join(', ');
    let sql = `SELECT ${columns} FROM ${quoted(model.getTableName() as string)}`;
    if (clauses.length > 0) sql += ` WHERE ${clauses.join(' AND ')}`;
    if (order && order.length > 0) sql += ` ORDER BY ${order.map(([column, direction]) => `${quoted(column)} ${direction === 'DESC' ? 'DESC' : 'ASC'}`).join(', ')}`;
    if (limit !== undefined) sql += ` LIMIT ${Math.max(0, Math.floor(limit))}`;
    // Lookups by key come in a few fixed shapes, kept prepared; IN lists of any length would only churn them.
    return this.raw.all(this.transaction, sql, params, { keepPrepared: fixedShape });
  }

  private async select(sql: string, replacements: Record<string, unknown>, transaction = this.transaction): Promise<Row[]> {
    return this.sequelize.query<Row>(sql, { replacements, type: QueryTypes.SELECT, transaction });
  }

  /** Inserts on the driver (see `selectPlain` for why); a duplicate key becomes CONFLICT, the code every adapter of the port throws. */
  private async insertRows(model: StorageModel, rows: readonly Row[], entity: string, transaction = this.transaction): Promise<void> {
    await this.writeRows(model, rows, '', transaction, entity);
  }

  /** Rows of the model in multi-row INSERTs, each value bound on its own; `suffix` follows (an upsert clause). */
  private async writeRows(model: StorageModel, rows: readonly Row[], suffix: string, transaction: Transaction | undefined, entity: string): Promise<void> {
    if (rows.length === 0) return;
    const names = Object.keys(model.getAttributes());
    const columns: Columns = names.map((name) => [name, 'text'] as const);
    // Within SQLite's 32,766 bound variables whatever the width.
    const perStatement = Math.min(ROWS_PER_STATEMENT, Math.floor(30_000 / names.length));
    const table = model.getTableName() as string;
    const write = async (tx: Transaction) => {
      for (const chunk of chunks(rows, perStatement)) {
        const values: unknown[] = [];
        for (const row of chunk) for (const name of names) values.push(this.bindable(row[name]));
        await this.raw.runOnce(tx, this.raw.insertValues(table, columns, chunk.length, suffix), values, entity);
      }
    };
    // Outside a transaction, through one all the same: on SQLite a write on the shared connection can meet
    // a transaction's write lock with SQLITE_BUSY at once, whatever the busy timeout; transactions queue.
    if (transaction) await write(transaction);
    else await this.atomic(write);
  }

  /** Inserts or replaces by primary key: `INSERT ... ON CONFLICT (key) DO UPDATE` on the driver. */
  private async upsertRows(model: StorageModel, rows: readonly Row[], transaction = this.transaction): Promise<void> {
    const names = Object.keys(model.getAttributes());
    const suffix = upsertClause(model.primaryKeyAttributes, names.map((name) => [name, 'text'] as const));
    await this.writeRows(model, rows, suffix, transaction, model.name);
  }

  /** A row value as the driver binds it: PostgreSQL's driver would turn an array into an array literal, not JSON. */
  private bindable(value: unknown): unknown {
    if (value === undefined) return null;
    if (this.context.postgres && value !== null && typeof value === 'object' && !(value instanceof Date)) return JSON.stringify(value);
    return value;
  }

  /** Replaces the account's row with this id; `false` when it is missing or another account's. */
  private async replace(model: StorageModel, row: Row, extraWhere: WhereOptions = {}, transaction = this.transaction): Promise<boolean> {
    const { id, account_id, ...values } = row;
    const extra = plainConditions(extraWhere);
    if (extra && extra.every(([, value]) => !Array.isArray(value))) {
      // One UPDATE on the driver (see `selectPlain` for what the model's update costs).
      const params: unknown[] = [];
      const slot = (value: unknown) => {
        params.push(this.bindable(value));
        return this.context.postgres ? `$${params.length}` : '?';
      };
      const sets = Object.entries(values).map(([column, value]) => `${quoted(column)} = ${slot(value)}`);
      const where = [['id', id], ['account_id', account_id], ...extra].map(([column, value]) => `${quoted(column as string)} = ${slot(value)}`);
      const sql = `UPDATE ${quoted(model.getTableName() as string)} SET ${sets.join(', ')} WHERE ${where.join(' AND ')}`;
      // Outside a transaction, through one (see `writeRows`).
      if (transaction) return (await this.raw.runOnce(transaction, sql, params, model.name)) > 0;
      return this.atomic(async (tx) => (await this.raw.runOnce(tx, sql, params, model.name)) > 0);
    }
    const [affected] = await model.update(values, {
      where: { id: id as string, account_id: account_id as string, ...extraWhere },
      transaction,
      validate: false,
      hooks: false,
      individualHooks: false,
    });
    return affected > 0;
  }

  private async destroy(model: StorageModel, where: WhereOptions, transaction = this.transaction): Promise<number> {
    return model.destroy({ where, transaction, hooks: false, individualHooks: false });
  }

  accounts(): AccountRepository {
    const { accounts: model } = this.models;
    return {
      insert: (account) => this.insertRows(model, [this.map.accountRow(account)], `account ${account.id}`),
      get: async (id) => {
        const row = await this.findOne(model, { id });
        return row && this.map.account(row);
      },
      getByApiKeyHash: async (apiKeyHash) => {
        const row = await this.findOne(model, { api_key_hash: apiKeyHash });
        return row && this.map.account(row);
      },
      list: async () => (await this.findAll(model, {}, OLDEST_FIRST)).map((row) => this.map.account(row)),
      replaceApiKey: async (id, apiKeyHash, apiKeyPrefix) => {
        const sql = this.context.postgres
          ? 'UPDATE accounts SET api_key_hash = $1, api_key_prefix = $2 WHERE id = $3'
          : 'UPDATE accounts SET api_key_hash = ?, api_key_prefix = ? WHERE id = ?';
        // A key hash another account has breaks the unique index: the driver's failure is a CONFLICT.
        const run = (transaction: Transaction) => this.raw.runOnce(transaction, sql, [apiKeyHash, apiKeyPrefix, id], 'account with this API key');
        return (this.transaction ? await run(this.transaction) : await this.atomic(run)) > 0;
      },
    };
  }

  webhookSettings(): WebhookSettingsRepository {
    const { webhookSettings: model } = this.models;
    return {
      get: async (accountId) => {
        const row = await this.findOne(model, { account_id: accountId });
        return row && this.map.webhookSettings(row);
      },
      put: (settings) => this.upsertRows(model, [this.map.webhookSettingsRow(settings)]),
    };
  }

  organizations(): OrganizationRepository {
    const { organizations: model } = this.models;
    return {
      insert: (org) => this.insertRows(model, [this.map.organizationRow(org)], `organization ${org.id}`),
      getByAccount: async (accountId) => {
        const row = await this.findOne(model, { account_id: accountId });
        return row && this.map.organization(row);
      },
      update: async (org) => ((await this.replace(model, this.map.organizationRow(org))) ? copy(org) : undefined),
    };
  }

  facilities(): FacilityRepository {
    const { facilities: model } = this.models;
    return {
      insert: (facility) => this.insertRows(model, [this.map.facilityRow(facility)], `facility ${facility.id}`),
      get: async (accountId, id) => {
        const row = await this.findOne(model, { account_id: accountId, id });
        return row && this.map.facility(row);
      },
      list: async (accountId) => (await this.findAll(model, { account_id: accountId }, OLDEST_FIRST)).map((row) => this.map.facility(row)),
      count: (accountId) => model.count({ where: { account_id: accountId }, transaction: this.transaction }),
      update: async (facility) => ((await this.replace(model, this.map.facilityRow(facility))) ? copy(facility) : undefined),
      remove: async (accountId, id) => (await this.destroy(model, { account_id: accountId, id })) > 0,
    };
  }

  cohorts(): CohortRepository {
    const { cohorts: model } = this.models;
    return {
      insert: (cohort) => this.insertRows(model, [this.map.cohortRow(cohort)], `cohort ${cohort.id}`),
      get: async (accountId, id) => {
        const row = await this.findOne(model, { account_id: accountId, id });
        return row && this.map.cohort(row);
      },
      existingIds: async (accountId, ids) => {
        const found: string[] = [];
        for (const chunk of chunks([...new Set(ids)], IDS_PER_STATEMENT)) {
          const rows = await model.findAll({
            attributes: ['id'],
            where: { account_id: accountId, id: chunk },
            raw: true,
            transaction: this.transaction,
          });
          for (const row of rows as unknown as Row[]) found.push(String(row.id));
        }
        return found;
      },
      list: async (accountId) => (await this.findAll(model, { account_id: accountId }, OLDEST_FIRST)).map((row) => this.map.cohort(row)),
      update: async (cohort) => ((await this.replace(model, this.map.cohortRow(cohort))) ? copy(cohort) : undefined),
      remove: async (accountId, id) => (await this.destroy(model, { account_id: accountId, id })) > 0,
    };
  }

  patients(): PatientRepository {
    const { patients: model } = this.models;
    const toPatient = (row: Row) => this.map.patient(row);

    const insertOne = (patient: Patient) =>
      this.atomic(async (transaction) => {
        await this.insertRows(model, [this.map.patientRow(patient)], 'patient', transaction);
        await this.insertKeys([patient], transaction);
      });

    const insertBatch = (batch: readonly Patient[]) =>
      this.atomic(async (transaction) => {
        // Both statements queued at once: the writer runs the second while this thread is elsewhere.
        await settleAll([this.insertPatientRows(transaction, batch), this.insertKeys(batch, transaction)]);
      });

    /** The stored keys of these patients (any account), by id. */
    const storedKeysOf = async (ids: readonly string[], transaction: Transaction) => {
      const stored = new Map<string, StoredKeys & { matchKeysText: string }>();
      for (const chunk of chunks(ids, IDS_PER_STATEMENT)) {
        const rows = await this.raw.all(transaction, `SELECT id, account_id, match_keys FROM patients WHERE id IN (${this.raw.list(chunk.length)})`, chunk);
        for (const row of rows) {
          const text = matchKeysText(row.match_keys);
          stored.set(String(row.id), { patientId: String(row.id), accountId: String(row.account_id), matchKeys: JSON.parse(text) as string[], matchKeysText: text });
        }
      }
      return stored;
    };

    const replaceKeys = async (previous: readonly StoredKeys[], batch: readonly Patient[], transaction: Transaction) => {
      await this.deleteKeys(previous, transaction);
      await this.insertKeys(batch, transaction);
    };

    /** A JSON array column holding `value`, as each dialect spells it. */
    const arrayHolds = (column: 'facility_ids' | 'cohort_ids', value: string) =>
      this.context.postgres
        ? literal(`CAST(${column} AS jsonb) @> CAST(${this.sequelize.escape(JSON.stringify([value]))} AS jsonb)`)
        : literal(`EXISTS (SELECT 1 FROM json_each(${column}) WHERE json_each.value = ${this.sequelize.escape(value)})`);

    return {
      insert: (patient) => insertOne(patient),
      insertMany: async (batch) => {
        if (batch.length > 0) await insertBatch(batch);
      },
      get: async (accountId, id) => {
        const row = await this.findOne(model, { account_id: accountId, id });
        return row && toPatient(row);
      },
      findByExternalId: async (accountId, externalId) =>
        (await this.findAll(model, { account_id: accountId, external_id: externalId }, OLDEST_FIRST)).map(toPatient),
      findByMatchKeys: async (accountId, matchKeys) => {
        const wanted = new Set(matchKeys);
        if (wanted.size === 0) return [];
        const hashes = [...new Set([...wanted].map((key) => this.map.hashOf(accountId, key)))];
        // One statement whatever the number of keys (the hashes travel as one JSON parameter); the plan is an
        // index probe per hash, then one per patient id, whatever the account's size.
        const rows = await this.raw.all(
          this.transaction,
          `SELECT * FROM patients WHERE id IN (
             SELECT patient_id FROM patient_key_hashes WHERE key_hash IN (${this.hashList(1)})
           ) AND account_id = ${this.raw.list(1, 2)} ORDER BY created_at ASC, id ASC`,
          [JSON.stringify(hashes), accountId],
        );
        // A hash shared by chance with another key brings a patient that shares no wanted key: not a candidate.
        return rows.map(toPatient).filter((patient) => patient.matchKeys.some((key) => wanted.has(key)));
      },
      list: async (accountId, options = {}) => {
        const conditions: WhereOptions[] = [{ account_id: accountId }];
        if (options.after !== undefined) conditions.push({ id: { [Op.gt]: options.after } });
        if (options.facilityId !== undefined) conditions.push(arrayHolds('facility_ids', options.facilityId));
        if (options.cohortId !== undefined) conditions.push(arrayHolds('cohort_ids', options.cohortId));
        return (await this.findAll(model, { [Op.and]: conditions }, [['id', 'ASC']], options.limit)).map(toPatient);
      },
      count: (accountId) => model.count({ where: { account_id: accountId }, transaction: this.transaction }),
      update: (patient) =>
        this.atomic(async (transaction) => {
          const previous = (await storedKeysOf([patient.id], transaction)).get(patient.id);
          if (!(await this.replace(model, this.map.patientRow(patient), {}, transaction))) return undefined;
          await replaceKeys(previous ? [previous] : [], [patient], transaction);
          return copy(patient);
        }),
      updateMany: async (batch) => {
        if (batch.length === 0) return;
        const patients = lastByKey(batch, (patient) => patient.id);
        await this.atomic(async (transaction) => {
          const stored = await storedKeysOf(
            patients.map((patient) => patient.id),
            transaction,
          );
          const missing = patients.find((patient) => stored.get(patient.id)?.accountId !== patient.accountId);
          if (missing) throw new CoreError('PATIENT_NOT_FOUND', `patient ${missing.id} not found`, { details: { id: missing.id } });
          // INSERT ... ON CONFLICT DO UPDATE: one multi-row statement per chunk replaces every column but the id.
          await this.insertPatientRows(transaction, patients, PATIENT_UPSERT);
          // A matching row mostly keeps the blocking keys it had; only changed key sets are rewritten.
          const rekeyed = patients.filter((patient) => stored.get(patient.id)!.matchKeysText !== JSON.stringify(patient.matchKeys));
          await replaceKeys(
            rekeyed.map((patient) => stored.get(patient.id)!),
            rekeyed,
            transaction,
          );
        });
      },
      remove: (accountId, id) =>
        this.atomic(async (transaction) => {
          const previous = (await storedKeysOf([id], transaction)).get(id);
          if ((await this.destroy(model, { account_id: accountId, id }, transaction)) === 0) return false;
          if (previous) await this.deleteKeys([previous], transaction);
          return true;
        }),
    };
  }

  /** Adds the patients' entries to the blocking-key index. */
  private async insertKeys(batch: readonly Patient[], transaction: Transaction): Promise<void> {
    const tuples: unknown[][] = [];
    for (const patient of batch) this.map.pushKeyHashValues(patient.accountId, patient.id, patient.matchKeys, tuples);
    // Two patients' keys hashing alike are two entries (the patient id differs); nothing conflicts but a replay.
    // Bound value by value, all in one statement: two values an entry, so a batch's ~2,000 entries stay far
    // below SQLite's 32,766 variables, and one round trip to the writer beats three of the JSON form.
    for (const chunk of chunks(tuples, KEY_ENTRIES_PER_STATEMENT)) {
      await this.raw.run(transaction, this.raw.insertValues('patient_key_hashes', KEY_HASH_COLUMNS, chunk.length, ' ON CONFLICT DO NOTHING'), chunk.flat(), 'patient key');
    }
  }

  /** Removes the entries these stored keys put in the blocking-key index. */
  private async deleteKeys(previous: readonly StoredKeys[], transaction: Transaction): Promise<void> {
    const tuples: unknown[][] = [];
    for (const keys of previous) this.map.pushKeyHashValues(keys.accountId, keys.patientId, keys.matchKeys, tuples);
    if (tuples.length === 0) return;
    const pairs = this.context.postgres
      ? 'SELECT CAST(value ->> 0 AS bigint), value ->> 1 FROM json_array_elements(CAST($1 AS json)) AS rows(value)'
      : 'SELECT value ->> 0, value ->> 1 FROM json_each(?)';
    for (const chunk of chunks(tuples, ROWS_PER_STATEMENT)) {
      await this.raw.run(transaction, `DELETE FROM patient_key_hashes WHERE (key_hash, patient_id) IN (${pairs})`, [JSON.stringify(chunk)]);
    }
  }

  /** `IN (...)` of the hashes in the JSON array bound as parameter `position`. */
  private hashList(position: number): string {
    return this.context.postgres
      ? `SELECT CAST(value AS bigint) FROM json_array_elements_text(CAST($${position} AS json)) AS hashes(value)`
      : 'SELECT value FROM json_each(?)';
  }

  bulkRequests(): BulkRequestRepository {
    const { bulkRequests: model } = this.models;
    const toRequest = (row: Row) => this.map.bulkRequest(row);
    return {
      insert: (request) => this.insertRows(model, [this.map.bulkRequestRow(request)], `bulk request ${request.id}`),
      get: async (accountId, id) => {
        const row = await this.findOne(model, { account_id: accountId, id });
        return row && toRequest(row);
      },
      getById: async (id) => {
        const row = await this.findOne(model, { id });
        return row && toRequest(row);
      },
      update: async (request) => ((await this.replace(model, this.map.bulkRequestRow(request))) ? copy(request) : undefined),
      // One UPDATE ... WHERE status = expected: the database decides which of two racing callers wins.
      updateIfStatus: async (request, expected) =>
        (await this.replace(model, this.map.bulkRequestRow(request), { status: expected })) ? copy(request) : undefined,
      listByStatus: async (status, limit) => (await this.findAll(model, { status }, OLDEST_FIRST, limit)).map(toRequest),
      list: async (accountId, limit) => (await this.findAll(model, { account_id: accountId }, NEWEST_FIRST, limit)).map(toRequest),
    };
  }

  bulkRows(): BulkRowRepository {
    const { bulkRows: model } = this.models;
    return {
      putMany: async (outcomes) => {
        if (outcomes.length === 0) return;
        const tuples = lastByKey(outcomes, (outcome: BulkRowOutcome) => `${outcome.requestId}\u0000${outcome.rowIndex}`).map((outcome) =>
          this.map.bulkRowValues(outcome),
        );
        await this.atomic((transaction) => this.insertJsonRows(transaction, 'bulk_rows', BULK_ROW_COLUMNS, tuples, 'bulk row', BULK_ROW_UPSERT));
      },
      range: async (requestId, from, to) =>
        (await this.findAll(model, { request_id: requestId, row_index: { [Op.gte]: from, [Op.lt]: to } }, [['row_index', 'ASC']])).map((row) =>
          this.map.bulkRow(row),
        ),
      counts: async (requestId) => {
        const [row] = await this.select(
          `SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), 0) AS failed
             FROM bulk_rows WHERE request_id = :requestId`,
          { requestId },
        );
        // PostgreSQL returns COUNT and SUM as strings.
        return { total: Number(row?.total ?? 0), failed: Number(row?.failed ?? 0) };
      },
      nextRowIndex: async (requestId) => {
        const [row] = await this.select(`SELECT MAX(row_index) AS last FROM bulk_rows WHERE request_id = :requestId`, { requestId });
        return row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1;
      },
    };
  }

  documents(): DocumentRepository {
    const { documents: model } = this.models;
    const toDocument = (row: Row) => this.map.document(row);
    return {
      insert: (document) => this.insertRows(model, [this.map.documentRow(document)], `document ${document.id}`),
      get: async (accountId, id) => {
        const row = await this.findOne(model, { account_id: accountId, id });
        return row && toDocument(row);
      },
      getByFileName: async (accountId, fileName) => {
        const row = await this.findOne(model, { account_id: accountId, file_name: fileName }, OLDEST_FIRST);
        return row && toDocument(row);
      },
      listByPatient: async (accountId, patientId) =>
        (await this.findAll(model, { account_id: accountId, patient_id: patientId }, OLDEST_FIRST)).map(toDocument),
      update: async (document) => ((await this.replace(model, this.map.documentRow(document))) ? copy(document) : undefined),
    };
  }

  documentQueries(): DocumentQueryRepository {
    const { documentQueries: model } = this.models;
    return {
      insert: (query) => this.insertRows(model, [this.map.documentQueryRow(query)], `document query ${query.id}`),
      get: async (accountId, id) => {
        const row = await this.findOne(model, { account_id: accountId, id });
        return row && this.map.documentQuery(row);
      },
      latestForPatient: async (accountId, patientId) => {
        const row = await this.findOne(model, { account_id: accountId, patient_id: patientId }, NEWEST_FIRST);
        return row && this.map.documentQuery(row);
      },
      update: async (query) => ((await this.replace(model, this.map.documentQueryRow(query))) ? copy(query) : undefined),
      progressOfBulkRequest: async (accountId, bulkRequestId) => {
        const rows = (await model.findAll({
          attributes: ['state', [fn('COUNT', col('id')), 'n']],
          where: { account_id: accountId, bulk_request_id: bulkRequestId },
          group: ['state'],
          raw: true,
          transaction: this.transaction,
        })) as unknown as { state: string; n: number | string }[];
        const progress: BulkQueriesProgress = { total: 0, processing: 0, completed: 0, failed: 0 };
        for (const row of rows) {
          // PostgreSQL returns COUNT as a string.
          const n = Number(row.n);
          progress.total += n;
          if (row.state === 'processing' || row.state === 'completed' || row.state === 'failed') progress[row.state] += n;
        }
        return progress;
      },
    };
  }

  fhirResources(): FhirResourceRepository {
    const { fhirResources: model } = this.models;
    return {
      putMany: async (resources) => {
        if (resources.length === 0) return;
        const rows = lastByKey(resources, (r: FhirResourceRecord) => [r.accountId, r.patientId, r.resourceType, r.id].join('\u0000')).map((resource) =>
          this.map.fhirResourceRow(resource),
        );
        await this.atomic((transaction) => this.upsertRows(model, rows, transaction));
      },
      listByPatient: async (accountId, patientId, resourceTypes) => {
        const where: WhereOptions = { account_id: accountId, patient_id: patientId };
        if (resourceTypes !== undefined) where.resource_type = [...resourceTypes];
        const order: [string, string][] = [
          ['resource_type', 'ASC'],
          ['id', 'ASC'],
        ];
        return (await this.findAll(model, where, order)).map((row) => this.map.fhirResource(row));
      },
      removeMany: async (accountId, patientId, keys) => {
        if (keys.length === 0) return;
        await this.atomic(async (transaction) => {
          for (const chunk of chunks(keys, IDS_PER_STATEMENT)) {
            await this.destroy(
              model,
              {
                account_id: accountId,
                patient_id: patientId,
                [Op.or]: chunk.map(({ resourceType, id }) => ({ resource_type: resourceType, id })),
              },
              transaction,
            );
          }
        });
      },
    };
  }

  consolidatedQueries(): ConsolidatedQueryRepository {
    const { consolidatedQueries: model } = this.models;
    const toQuery = (row: Row) => this.map.consolidatedQuery(row);
    return {
      insert: (query) => this.insertRows(model, [this.map.consolidatedQueryRow(query)], `consolidated query ${query.id}`),
      get: async (accountId, id) => {
        const row = await this.findOne(model, { account_id: accountId, id });
        return row && toQuery(row);
      },
      listProcessing: async (accountId, patientId) =>
        (await this.findAll(model, { account_id: accountId, patient_id: patientId, status: 'processing' }, OLDEST_FIRST)).map(toQuery),
      listByPatient: async (accountId, patientId) =>
        (await this.findAll(model, { account_id: accountId, patient_id: patientId }, NEWEST_FIRST)).map(toQuery),
      update: async (query) => ((await this.replace(model, this.map.consolidatedQueryRow(query))) ? copy(query) : undefined),
    };
  }

  networkQueries(): NetworkQueryRepository {
    const { networkQueries: model } = this.models;
    const toQuery = (row: Row) => this.map.networkQuery(row);
    return {
      insert: (query) => this.insertRows(model, [this.map.networkQueryRow(query)], `network query ${query.id}`),
      get: async (accountId, id) => {
        const row = await this.findOne(model, { account_id: accountId, id });
        return row && toQuery(row);
      },
      getForUpdate: async (accountId, id) => {
        // SQLite runs one transaction at a time on its one connection: a plain read is already held.
        if (!this.transaction || !this.context.postgres) {
          const row = await this.findOne(model, { account_id: accountId, id });
          return row && toQuery(row);
        }
        const columns = Object.keys(model.getAttributes()).map((column) => `"${column}"`).join(', ');
        const [row] = await this.raw.all(this.transaction, `SELECT ${columns} FROM network_queries WHERE account_id = $1 AND id = $2 FOR UPDATE`, [accountId, id]);
        return row && toQuery(row);
      },
      listProcessing: async (accountId, patientId) =>
        (await this.findAll(model, { account_id: accountId, patient_id: patientId, state: 'processing' }, OLDEST_FIRST)).map(toQuery),
      update: async (query) => ((await this.replace(model, this.map.networkQueryRow(query))) ? copy(query) : undefined),
      pruneFinished: async (before, limit) => {
        const rows = await this.select(
          `DELETE FROM network_queries WHERE id IN (
             SELECT id FROM network_queries WHERE state <> 'processing' AND updated_at < :before ORDER BY updated_at, id LIMIT :limit)
           RETURNING id`,
          { before, limit },
        );
        return rows.length;
      },
    };
  }

  outbox(): OutboxRepository {
    const { outbox: model } = this.models;
    const toMessage = (row: Row) => this.map.outbox(row);
    return {
      add: (message) => this.insertRows(model, [this.map.outboxRow(message)], `outbox message ${message.id}`),
      get: async (accountId, id) => {
        const row = await this.findOne(model, { account_id: accountId, id });
        return row && toMessage(row);
      },
      due: async (now, limit, accountId) => {
        const where: WhereOptions = { status: 'pending', next_attempt_at: { [Op.lte]: now } };
        if (accountId !== undefined) where.account_id = accountId;
        return (await this.findAll(model, where, OLDEST_FIRST, limit)).map(toMessage);
      },
      deliverable: async (now, limit, accountId) => {
        const rows = await this.select(
          `SELECT o.* FROM outbox o
           WHERE o.status = 'pending' AND o.next_attempt_at <= :now${accountId === undefined ? '' : ' AND o.account_id = :accountId'}
             AND NOT EXISTS (
               SELECT 1 FROM outbox w
               WHERE w.account_id = o.account_id AND w.stream_key = o.stream_key AND w.status = 'pending'
                 AND w.next_attempt_at > :now
                 AND (w.created_at < o.created_at OR (w.created_at = o.created_at AND w.id < o.id)))
           ORDER BY o.created_at, o.id
           LIMIT :limit`,
          { now, limit, accountId: accountId ?? null },
        );
        return rows.map(toMessage);
      },
      claim: (now, limit, lease) =>
        this.atomic(async (transaction) => {
          // Claims queue up behind one lock: a claim must see the streams the previous one took, which row
          // locks alone (SKIP LOCKED) would hide from it until that claim commits. Claims are short.
          if (this.context.postgres) await this.select('SELECT pg_advisory_xact_lock(:key)', { key: OUTBOX_CLAIM_LOCK }, transaction);
          const rows = await this.select(
            `UPDATE outbox SET lease_until = :leaseUntil, lease_owner = :owner
             WHERE id IN (
               SELECT o.id FROM outbox o
               WHERE o.status = 'pending' AND o.next_attempt_at <= :now${lease.accountId === undefined ? '' : ' AND o.account_id = :accountId'}
                 AND NOT EXISTS (
                   SELECT 1 FROM outbox w
                   WHERE w.account_id = o.account_id AND w.stream_key = o.stream_key AND w.status = 'pending'
                     AND ((w.next_attempt_at > :now AND (w.created_at < o.created_at OR (w.created_at = o.created_at AND w.id < o.id)))
                       OR w.lease_until > :now))
               ORDER BY o.created_at, o.id
               LIMIT :limit)
             RETURNING *`,
            { now, limit, accountId: lease.accountId ?? null, owner: lease.owner, leaseUntil: new Date(Date.parse(now) + lease.leaseMs).toISOString() },
            transaction,
          );
          return rows.map(toMessage).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        }),
      releaseClaims: async (owner) => {
        await this.sequelize.query('UPDATE outbox SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = :owner', {
          replacements: { owner },
          transaction: this.transaction,
        });
      },
      update: async (message) => {
        await this.replace(model, this.map.outboxRow(message));
      },
      updateMany: async (messages) => {
        if (messages.length === 0) return;
        const sql = this.context.postgres
          ? `UPDATE outbox SET status = j.value ->> 2, attempts = CAST(j.value ->> 3 AS integer), next_attempt_at = j.value ->> 4,
               last_error = j.value ->> 5, delivered_at = j.value ->> 6, lease_until = NULL, lease_owner = NULL
             FROM json_array_elements(CAST($1 AS json)) AS j(value)
             WHERE outbox.id = j.value ->> 0 AND outbox.account_id = j.value ->> 1`
          : `UPDATE outbox SET status = j.value ->> 2, attempts = j.value ->> 3, next_attempt_at = j.value ->> 4,
               last_error = j.value ->> 5, delivered_at = j.value ->> 6, lease_until = NULL, lease_owner = NULL
             FROM json_each(?) AS j
             WHERE outbox.id = j.value ->> 0 AND outbox.account_id = j.value ->> 1`;
        const rows = messages.map((m) => [m.id, m.accountId, m.status, m.attempts, m.nextAttemptAt, m.lastError ?? null, m.deliveredAt ?? null]);
        await this.atomic(async (transaction) => {
          for (const chunk of chunks(rows, ROWS_PER_STATEMENT)) await this.raw.run(transaction, sql, [JSON.stringify(chunk)], 'outbox message');
        });
      },
      pruneDelivered: async (before, limit) => {
        const rows = await this.select(
          `DELETE FROM outbox WHERE id IN (
             SELECT id FROM outbox WHERE status = 'delivered' AND delivered_at < :before ORDER BY delivered_at, id LIMIT :limit)
           RETURNING id`,
          { before, limit },
        );
        return rows.length;
      },
      list: async (accountId, status, limit) => {
        const where: WhereOptions = { account_id: accountId };
        if (status !== undefined) where.status = status;
        return (await this.findAll(model, where, OLDEST_FIRST, limit)).map(toMessage);
      },
      counts: async (accountId) => {
        const rows = await this.select(`SELECT status, COUNT(*) AS n FROM outbox WHERE account_id = :accountId GROUP BY status`, { accountId });
        const counts: Record<OutboxMessage['status'], number> = { pending: 0, delivered: 0, parked: 0 };
        for (const row of rows) counts[String(row.status) as OutboxMessage['status']] = Number(row.n);
        return counts;
      },
    };
  }
}
