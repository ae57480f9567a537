import { BaseError, QueryTypes, type Sequelize, type Transaction, type WhereOptions } from 'sequelize';
import { CoreError } from '../../../core/errors.js';
import type { Patient } from '../../../core/domain/types.js';
import { BULK_ROW_COLUMNS, PATIENT_COLUMNS, RowMapper, type Columns } from './mappers.js';
import type { Row, StorageModel, StorageModels } from './models.js';
import { RawSql } from './raw-sql.js';

/*
 * What every repository of the SQL storage reads and writes through: the plain reads and writes on the
 * driver (selectPlain, writeRows, replace), Sequelize's model queries where those do not apply, and the
 * JSON batch statements of the bulk import's hot paths. The repositories (repositories/) hold no SQL of
 * their own but what is particular to them.
 */

/**
 * Rows per multi-row statement (model `bulkCreate`s and the JSON batches alike): a batch of ~1,000
 * patients is one statement per table, and no statement carries more than a few MB. For `bulkCreate`,
 * SQLite allows 32,766 bound variables per statement; the widest table has 17 columns.
 */
export const ROWS_PER_STATEMENT = 1_000;
/** Entries of the blocking-key index per statement (two bound values each). */
export const KEY_ENTRIES_PER_STATEMENT = 10_000;
/** Values per `IN (...)` list. */
export const IDS_PER_STATEMENT = 500;

/**
 * ` ON CONFLICT (key) DO UPDATE SET column = excluded.column, ...`: the same text on SQLite and PostgreSQL.
 * `unchanged` columns are left out of the SET: SQLite rewrites the entries of every index on a column
 * the SET names, changed or not.
 */
export function upsertClause(keys: readonly string[], columns: Columns, unchanged: readonly string[] = []): string {
  const updates = columns
    .filter(([column]) => !keys.includes(column) && !unchanged.includes(column))
    .map(([column]) => `${column} = excluded.${column}`);
  return ` ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${updates.join(', ')}`;
}

// updateMany checks each patient is the stored one's account before writing: account_id never changes.
export const PATIENT_UPSERT = upsertClause(['id'], PATIENT_COLUMNS, ['account_id']);
export const BULK_ROW_UPSERT = upsertClause(['request_id', 'row_index'], BULK_ROW_COLUMNS);

export const OLDEST_FIRST: [string, string][] = [
  ['created_at', 'ASC'],
  ['id', 'ASC'],
];
export const NEWEST_FIRST: [string, string][] = [
  ['created_at', 'DESC'],
  ['id', 'DESC'],
];

/** `"name"`: the same identifier quoting on SQLite and PostgreSQL (column names are snake_case, never quoted themselves). */
export function quoted(name: string): string {
  return `"${name}"`;
}

/**
 * The conditions of a WHERE given as `{ column: value }` with primitive values (or arrays of them, for IN),
 * as pairs; undefined for anything else (operators, NULLs), which is left to Sequelize.
 */
export function plainConditions(where: WhereOptions): [string, unknown][] | undefined {
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
export const OUTBOX_CLAIM_LOCK = 0x63626f78;

export interface Context {
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

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let start = 0; start < items.length; start += size) result.push(items.slice(start, start + size));
  return result;
}

/** The last item of each key: a batch that names a record twice stores its last version, as sequential writes would. */
export function lastByKey<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
  return [...new Map(items.map((item) => [keyOf(item), item] as const)).values()];
}

export const copy = <T>(value: T): T => structuredClone(value);

/** The stored `match_keys` column as JSON text, whichever form the dialect returns it in. */
export function matchKeysText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A patient's blocking keys as they are stored, to find its entries of the key index again. */
export interface StoredKeys {
  accountId: string;
  patientId: string;
  matchKeys: readonly string[];
}

/**
 * Sequelize errors carry the failed statement (`sql`, `parameters`, the driver's `detail`) as enumerable
 * properties, and those hold PHI; a logger would print them. Errors leave the repositories as CoreErrors
 * whose message names the failure and whose (non-enumerable) cause keeps the original for debugging.
 */
export function withoutStatement(error: unknown): unknown {
  if (!(error instanceof BaseError) || error instanceof CoreError) return error;
  const driver = (error as { parent?: { code?: unknown } }).parent;
  const code = typeof driver?.code === 'string' ? driver.code : undefined;
  return new CoreError('INTERNAL', `storage query failed (${error.name}${code ? ` ${code}` : ''})`, {
    cause: error,
    details: code ? { code } : undefined,
  });
}

/** The repository with every method's failures passed through `withoutStatement`. */
export function guarded<R extends object>(repository: R): R {
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

/** The data access of one storage (or of one transaction's), shared by its repositories. */
export class SqlAccess {
  readonly sequelize: Sequelize;
  readonly models: StorageModels;
  readonly map: RowMapper;
  readonly raw: RawSql;

  constructor(
    readonly context: Context,
    readonly transaction: Transaction | undefined,
    readonly atomic: <T>(work: (transaction: Transaction) => Promise<T>) => Promise<T>,
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
  async insertJsonRows(transaction: Transaction, table: string, columns: Columns, rows: readonly unknown[][], entity: string, suffix = ''): Promise<void> {
    const sql = this.raw.insertFromJson(table, columns, suffix);
    for (const chunk of chunks(rows, ROWS_PER_STATEMENT)) await this.raw.run(transaction, sql, [JSON.stringify(chunk)], entity);
  }

  /** Patients through the driver, every value bound on its own (see `RawSql.insertValues`); `suffix` as above. */
  async insertPatientRows(transaction: Transaction, patients: readonly Patient[], suffix = ''): Promise<void> {
    for (const chunk of chunks(patients, ROWS_PER_STATEMENT)) {
      const values: unknown[] = [];
      for (const patient of chunk) this.map.pushPatientValues(patient, values);
      await this.raw.run(transaction, this.raw.insertValues('patients', PATIENT_COLUMNS, chunk.length, suffix), values, 'patient');
    }
  }

  async findOne(model: StorageModel, where: WhereOptions, order?: [string, string][]): Promise<Row | undefined> {
    const plain = plainConditions(where);
    if (plain) return (await this.selectPlain(model, plain, order, 1))[0];
    const row = await model.findOne({ where, order, raw: true, transaction: this.transaction });
    return (row as Row | null) ?? undefined;
  }

  async findAll(model: StorageModel, where: WhereOptions, order?: [string, string][], limit?: number): Promise<Row[]> {
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
  async selectPlain(model: StorageModel, conditions: [string, unknown][], order?: [string, string][], limit?: number): Promise<Row[]> {
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

  async select(sql: string, replacements: Record<string, unknown>, transaction = this.transaction): Promise<Row[]> {
    return this.sequelize.query<Row>(sql, { replacements, type: QueryTypes.SELECT, transaction });
  }

  /** Inserts on the driver (see `selectPlain` for why); a duplicate key becomes CONFLICT, the code every adapter of the port throws. */
  async insertRows(model: StorageModel, rows: readonly Row[], entity: string, transaction = this.transaction): Promise<void> {
    await this.writeRows(model, rows, '', transaction, entity);
  }

  /** Rows of the model in multi-row INSERTs, each value bound on its own; `suffix` follows (an upsert clause). */
  async writeRows(model: StorageModel, rows: readonly Row[], suffix: string, transaction: Transaction | undefined, entity: string): Promise<void> {
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

  /**
   * Inserts or replaces by primary key: `INSERT ... ON CONFLICT (key) DO UPDATE` on the driver. `unchanged`
   * columns are written when the row is new and left as stored when it is replaced.
   */
  async upsertRows(model: StorageModel, rows: readonly Row[], transaction = this.transaction, unchanged: readonly string[] = []): Promise<void> {
    const names = Object.keys(model.getAttributes());
    const suffix = upsertClause(model.primaryKeyAttributes, names.map((name) => [name, 'text'] as const), unchanged);
    await this.writeRows(model, rows, suffix, transaction, model.name);
  }

  /** `work` in the caller's transaction when there is one, else in a transaction of its own (see `writeRows`). */
  async writing<T>(work: (transaction: Transaction) => Promise<T>): Promise<T> {
    return this.transaction ? work(this.transaction) : this.atomic(work);
  }

  /** A row value as the driver binds it: PostgreSQL's driver would turn an array into an array literal, not JSON. */
  bindable(value: unknown): unknown {
    if (value === undefined) return null;
    if (this.context.postgres && value !== null && typeof value === 'object' && !(value instanceof Date)) return JSON.stringify(value);
    return value;
  }

  /** Replaces the account's row with this id; `false` when it is missing or another account's. */
  async replace(model: StorageModel, row: Row, extraWhere: WhereOptions = {}, transaction = this.transaction): Promise<boolean> {
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

  async destroy(model: StorageModel, where: WhereOptions, transaction = this.transaction): Promise<number> {
    return model.destroy({ where, transaction, hooks: false, individualHooks: false });
  }
}
