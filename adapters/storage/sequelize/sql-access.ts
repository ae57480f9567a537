import { BaseError, type Sequelize, type Transaction } from 'sequelize';
import { CoreError } from '../../../core/errors.js';
import type { Patient } from '../../../core/domain/types.js';
import { BULK_ROW_COLUMNS, PATIENT_COLUMNS, type Columns, type RowMapper } from './mappers.js';
import { runStatement } from './connection.js';
import { Params, RawSql } from './raw-sql.js';
import { columnsOf, type ColumnKind, type ColumnOf, type Row, type TableName } from './schema.js';

export type { ColumnOf } from './schema.js';

/*
 * What every repository of the SQL storage reads and writes through, every statement on the driver
 * (RawSql): the plain reads and writes by column values (select, update, remove, insertRows, upsertRows),
 * the statements a repository writes itself (`query`, `$n` parameters), and the JSON batch statements of
 * the bulk import's hot paths. The repositories (repositories/) hold no SQL of their own but what is
 * particular to them.
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
/** Batch statements of up to this many rows stay prepared on SQLite (see `RawSql.run`): one shape per count. */
const PREPARED_BATCH_ROWS = 8;

/** The PostgreSQL type of each column kind, for casts. */
const PG_TYPES: Record<ColumnKind, string> = { text: 'text', json: 'json', boolean: 'boolean', integer: 'integer', bigint: 'bigint' };

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

/** A value a condition compares a column with. */
export type Value = string | number | boolean;
/** `column = value` conditions of a WHERE, all of which must hold; anything else is a statement of its own (`query`). */
export type Conditions<T extends TableName> = readonly (readonly [column: ColumnOf<T>, value: Value])[];
export type Order<T extends TableName> = readonly (readonly [column: ColumnOf<T>, direction: 'ASC' | 'DESC'])[];

export const OLDEST_FIRST = [
  ['created_at', 'ASC'],
  ['id', 'ASC'],
] as const;
export const NEWEST_FIRST = [
  ['created_at', 'DESC'],
  ['id', 'DESC'],
] as const;

/** `"name"`: the same identifier quoting on SQLite and PostgreSQL (column names are snake_case, never quoted themselves). */
export function quoted(name: string): string {
  return `"${name}"`;
}

const selectLists = new Map<TableName, string>();

/** `"a", "b", ...`: every column of the table, in schema.ts's order, for a SELECT. */
export function columnList(table: TableName): string {
  let list = selectLists.get(table);
  if (list === undefined) {
    list = columnsOf(table)
      .map((column) => quoted(column.name))
      .join(', ');
    selectLists.set(table, list);
  }
  return list;
}

/** The conditions of one account's row by its id: how most rows are read, replaced and removed. */
export function owned<T extends TableName>(accountId: string, id: string): Conditions<T> {
  return [
    ['account_id', accountId],
    ['id', id],
  ] as unknown as Conditions<T>;
}

/** `"a" = $1 AND "b" = $2`: the conditions, their values bound in `params`; `true` for none. */
export function whereOf<T extends TableName>(conditions: Conditions<T>, params: Params): string {
  if (conditions.length === 0) return 'true';
  return conditions.map(([column, value]) => `${quoted(column)} = ${params.add(value)}`).join(' AND ');
}

/** `ORDER BY "a" ASC, ...`, or nothing. */
export function orderOf<T extends TableName>(order: Order<T> | undefined): string {
  if (!order || order.length === 0) return '';
  return ` ORDER BY ${order.map(([column, direction]) => `${quoted(column)} ${direction}`).join(', ')}`;
}

/** Arbitrary constant: the PostgreSQL advisory lock that serialises outbox claims. */
export const OUTBOX_CLAIM_LOCK = 0x63626f78;

/** What a storage shares with the storages its transactions hand out. */
export interface Context {
  sequelize: Sequelize;
  map: RowMapper;
  /** Every statement of the repositories, on the driver connection. */
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
  readonly map: RowMapper;
  readonly raw: RawSql;

  constructor(
    readonly context: Context,
    readonly transaction: Transaction | undefined,
    readonly atomic: <T>(work: (transaction: Transaction) => Promise<T>) => Promise<T>,
  ) {
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
      for (const patient of chunk) this.map.patients.values(patient, values);
      await this.raw.run(transaction, this.raw.insertValues('patients', PATIENT_COLUMNS, chunk.length, suffix), values, 'patient');
    }
  }

  /**
   * The rows of the table where every condition holds, whole. The document flow reads this way several times
   * per document; each shape is fixed, so the statement stays prepared on SQLite.
   */
  async select<T extends TableName>(table: T, conditions: Conditions<T>, order?: Order<T>, limit?: number): Promise<Row[]> {
    const params = new Params();
    let sql = `SELECT ${columnList(table)} FROM ${quoted(table)} WHERE ${whereOf(conditions, params)}${orderOf(order)}`;
    // The limit bound, not written in: callers ask for many limits of one shape.
    if (limit !== undefined) sql += ` LIMIT ${params.add(Math.max(0, Math.floor(limit)))}`;
    return this.raw.all(this.transaction, sql, params.values, { keepPrepared: true });
  }

  /** The first row `select` would return, or undefined. */
  async selectOne<T extends TableName>(table: T, conditions: Conditions<T>, order?: Order<T>): Promise<Row | undefined> {
    return (await this.select(table, conditions, order, 1))[0];
  }

  /** The number of rows of the table where every condition holds. */
  async count<T extends TableName>(table: T, conditions: Conditions<T>): Promise<number> {
    const params = new Params();
    const [row] = await this.raw.all(this.transaction, `SELECT COUNT(*) AS n FROM ${quoted(table)} WHERE ${whereOf(conditions, params)}`, params.values, { keepPrepared: true });
    // PostgreSQL returns COUNT as a string.
    return Number(row?.n ?? 0);
  }

  /**
   * A statement of the repository's own, `$n` placeholders for `params` (see `Params`): reads with
   * operators, aggregates, writes with RETURNING (inside `writing`). In this access's transaction unless
   * given one; `keepPrepared` for statements of one fixed shape that run often.
   */
  async query(sql: string, params: Params | readonly unknown[], options: { transaction?: Transaction; keepPrepared?: boolean } = {}): Promise<Row[]> {
    return this.raw.all(options.transaction ?? this.transaction, sql, params instanceof Params ? params.values : [...params], { keepPrepared: options.keepPrepared });
  }

  /** Inserts; a duplicate key becomes CONFLICT, the code every adapter of the port throws. */
  async insertRows(table: TableName, rows: readonly Row[], entity: string, transaction = this.transaction): Promise<void> {
    await this.writeRows(table, rows, '', transaction, entity);
  }

  /** Rows of the model in multi-row INSERTs, each value bound on its own; `suffix` follows (an upsert clause). */
  async writeRows(table: TableName, rows: readonly Row[], suffix: string, transaction: Transaction | undefined, entity: string): Promise<void> {
    if (rows.length === 0) return;
    const names = columnsOf(table).map((column) => column.name);
    const columns: Columns = names.map((name) => [name, 'text'] as const);
    // Within SQLite's 32,766 bound variables whatever the width.
    const perStatement = Math.min(ROWS_PER_STATEMENT, Math.floor(30_000 / names.length));
    const write = async (tx: Transaction | undefined) => {
      for (const chunk of chunks(rows, perStatement)) {
        const values: unknown[] = [];
        for (const row of chunk) for (const name of names) values.push(this.bindable(row[name]));
        await this.runBatch(tx, this.raw.insertValues(table, columns, chunk.length, suffix), values, chunk.length, entity);
      }
    };
    // Outside a transaction, through the writer all the same: on SQLite a write on the shared connection can
    // meet a transaction's write lock with SQLITE_BUSY at once, whatever the busy timeout; the writer queues.
    if (transaction) await write(transaction);
    else await this.writes(Math.ceil(rows.length / perStatement), write);
  }

  /**
   * A batch statement of `rows` rows: a few rows have a few shapes per table and clause, kept prepared on
   * SQLite; larger batches, of any size, are run once.
   */
  private async runBatch(transaction: Transaction | undefined, sql: string, values: unknown[], rows: number, entity: string): Promise<void> {
    if (rows <= PREPARED_BATCH_ROWS) await this.raw.run(transaction, sql, values, entity);
    else await this.raw.runOnce(transaction, sql, values, entity);
  }

  /**
   * Inserts or replaces by primary key: `INSERT ... ON CONFLICT (key) DO UPDATE` on the driver. `unchanged`
   * columns are written when the row is new and left as stored when it is replaced.
   */
  async upsertRows<T extends TableName>(table: T, rows: readonly Row[], entity: string, transaction = this.transaction, unchanged: readonly ColumnOf<T>[] = []): Promise<void> {
    const columns = columnsOf(table);
    const keys = columns.filter((column) => column.primaryKey).map((column) => column.name);
    const suffix = upsertClause(keys, columns.map((column) => [column.name, 'text'] as const), unchanged);
    await this.writeRows(table, rows, suffix, transaction, entity);
  }

  /** `work` in the caller's transaction when there is one, else in a transaction of its own (see `writeRows`). */
  async writing<T>(work: (transaction: Transaction) => Promise<T>, transaction = this.transaction): Promise<T> {
    return transaction ? work(transaction) : this.atomic(work);
  }

  /**
   * `writing` for work that runs ONE statement: outside the caller's transaction it runs as a turn of the
   * writer without BEGIN and COMMIT (`runStatement`), one trip to the driver instead of three.
   */
  async single<T>(work: (transaction: Transaction | undefined) => Promise<T>, transaction = this.transaction): Promise<T> {
    return transaction ? work(transaction) : runStatement(this.context.sequelize, work);
  }

  /** `single` for work of one statement, `writing` for work of more: `statements` says which it runs. */
  async writes<T>(statements: number, work: (transaction: Transaction | undefined) => Promise<T>): Promise<T> {
    return statements > 1 ? this.writing(work) : this.single(work);
  }

  /** A row value as the driver binds it: PostgreSQL's driver would turn an array into an array literal, not JSON. */
  bindable(value: unknown): unknown {
    if (value === undefined) return null;
    if (this.context.postgres && value !== null && typeof value === 'object' && !(value instanceof Date)) return JSON.stringify(value);
    return value;
  }

  /**
   * Replaces the account's row with this id (every column of `row` but the two keys); `false` when it is
   * missing, another account's, or fails one of the `extra` conditions.
   */
  async replace<T extends TableName>(table: T, row: Row, entity: string, extra: Conditions<T> = [], transaction = this.transaction): Promise<boolean> {
    const { id, account_id, ...values } = row;
    const params = new Params();
    const sets = Object.entries(values).map(([column, value]) => `${quoted(column)} = ${params.add(this.bindable(value))}`);
    const where = whereOf([['id', id as string], ['account_id', account_id as string], ...extra] as unknown as Conditions<T>, params);
    const sql = `UPDATE ${quoted(table)} SET ${sets.join(', ')} WHERE ${where}`;
    // Outside a transaction, through the writer (see `writeRows`). Kept prepared: a table's replace has one
    // shape (two with a condition), and preparing and finalizing around the write tripled its trips to SQLite.
    return this.single(async (tx) => (await this.raw.run(tx, sql, params.values, entity)) > 0, transaction);
  }

  /**
   * `replace` for many rows in few statements (`UPDATE ... FROM (VALUES ...)`): each row of the table with
   * the same account and id gets the row's other columns; rows missing are skipped. A row given twice is
   * written as its last version. In the caller's transaction, or in one of its own (see `writes`).
   */
  async replaceMany<T extends TableName>(table: T, rows: readonly Row[], entity: string): Promise<void> {
    if (rows.length === 0) return;
    const kinds = new Map(columnsOf(table).map((column) => [column.name, column.kind] as const));
    // The keys first: VALUES names its columns column1, column2, ... on SQLite and PostgreSQL alike.
    const names = ['id', 'account_id', ...[...kinds.keys()].filter((name) => name !== 'id' && name !== 'account_id')];
    const perStatement = Math.min(ROWS_PER_STATEMENT, Math.floor(30_000 / names.length));
    const statements = chunks(lastByKey(rows, (row) => `${String(row.account_id)}\u0000${String(row.id)}`), perStatement);
    const target = quoted(table);
    const sets = names.slice(2).map((name, i) => `${quoted(name)} = v.column${i + 3}`).join(', ');
    await this.writes(statements.length, async (transaction) => {
      for (const chunk of statements) {
        const params = new Params();
        // PostgreSQL types a parameter in VALUES as text: each is cast to its column's type.
        const value = (row: Row, name: string) => {
          const placeholder = params.add(this.bindable(row[name]));
          return this.context.postgres ? `CAST(${placeholder} AS ${PG_TYPES[kinds.get(name)!]})` : placeholder;
        };
        const tuples = chunk.map((row) => `(${names.map((name) => value(row, name)).join(', ')})`).join(', ');
        const sql = `UPDATE ${target} SET ${sets} FROM (VALUES ${tuples}) AS v WHERE ${target}."id" = v.column1 AND ${target}."account_id" = v.column2`;
        await this.runBatch(transaction, sql, params.values, chunk.length, entity);
      }
    });
  }

  /** Deletes the rows of the table where every condition holds; returns how many. */
  async remove<T extends TableName>(table: T, conditions: Conditions<T>, transaction = this.transaction): Promise<number> {
    const params = new Params();
    const sql = `DELETE FROM ${quoted(table)} WHERE ${whereOf(conditions, params)}`;
    return this.single((tx) => this.raw.runOnce(tx, sql, params.values, table), transaction);
  }
}
