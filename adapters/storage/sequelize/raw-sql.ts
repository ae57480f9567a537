import type { Sequelize, Transaction } from 'sequelize';
import { CoreError } from '../../../core/errors.js';
import { isSingleStatement } from './connection.js';
import type { Columns } from './mappers.js';
import type { Row } from './schema.js';

/**
 * Statements run straight on the driver connection of a Sequelize transaction. The hot paths of a bulk
 * import (patients, their match keys, row outcomes) go here: Sequelize's `bulkCreate` escapes every value
 * in JS and builds model instances (about 95 ms per 1,000 patients on SQLite), and its `bind` option
 * rewrites positional parameters into named ones with a regex pass over the statement (1.3 s per 1,000
 * patients). So does every other statement of the storage and of the durable queue that runs often: through
 * Sequelize's query path each statement cost the event loop far more than the database (the statement built
 * through lodash, replacements formatted in JS, and on SQLite an Error created and its stack formatted for
 * every statement, failed or not). Sequelize keeps the schema and the migrations.
 */

type RunCallback = (this: { changes: number }, error: Error | null) => void;

interface SqliteStatement {
  run(params: unknown[], callback: RunCallback): void;
  all(params: unknown[], callback: (error: Error | null, rows: Row[]) => void): void;
  finalize(callback?: () => void): void;
}

interface SqliteDatabase {
  run(sql: string, params: unknown[], callback: RunCallback): void;
  all(sql: string, params: unknown[], callback: (error: Error | null, rows: Row[]) => void): void;
  prepare(sql: string, callback: (error: Error | null) => void): SqliteStatement;
  close(callback?: (error: Error | null) => void): void;
}

/**
 * Prepared write statements kept per SQLite connection (by text): a few shapes repeat for a whole import,
 * and each table's replace and single-row insert for every document query.
 */
const PREPARED_PER_CONNECTION = 64;
/** Prepared reads kept per SQLite connection: the storage's lookups by key come in a few dozen fixed shapes. */
const PREPARED_READS_PER_CONNECTION = 64;

/**
 * The statements prepared on each SQLite connection. A batch statement of 1,000 patients is ~100 KB of
 * SQL with 16,000 parameters: preparing it again for every batch cost the database's writer about a
 * quarter of the time it spent inserting. A statement holds its connection open, so the connection's
 * `close` is wrapped to finalize them first (SQLite refuses to close with statements unfinalized).
 */
const preparedByConnection = new WeakMap<SqliteDatabase, { writes: Map<string, SqliteStatement>; reads: Map<string, SqliteStatement> }>();

function statementsOf(connection: SqliteDatabase): { writes: Map<string, SqliteStatement>; reads: Map<string, SqliteStatement> } {
  let prepared = preparedByConnection.get(connection);
  if (!prepared) {
    const statements = { writes: new Map<string, SqliteStatement>(), reads: new Map<string, SqliteStatement>() };
    prepared = statements;
    preparedByConnection.set(connection, statements);
    const close = connection.close.bind(connection);
    connection.close = (callback?: (error: Error | null) => void) => {
      const open = [...statements.writes.values(), ...statements.reads.values()];
      statements.writes.clear();
      statements.reads.clear();
      if (open.length === 0) return close(callback);
      let pending = open.length;
      for (const statement of open) statement.finalize(() => --pending === 0 && close(callback));
    };
  }
  return prepared;
}

/** Statements kept on one connection, by text, least recently used first, at most `bound`. */
interface KeptStatements {
  statements: Map<string, SqliteStatement>;
  bound: number;
}

/**
 * Runs `use` on a statement kept prepared on the connection for the next call of the same text (SQLite
 * runs the calls of one statement in turn, each with its own parameters). Past the bound the least
 * recently used is finalized, after the calls already queued on it; a statement whose call failed is
 * dropped, so the next call prepares afresh.
 */
function withPrepared<T>(
  connection: SqliteDatabase,
  kept: KeptStatements,
  sql: string,
  use: (statement: SqliteStatement, done: (error: Error | null, value?: T) => void) => void,
): Promise<T> {
  const { statements, bound } = kept;
  const call = (statement: SqliteStatement) =>
    new Promise<T>((resolve, reject) => {
      use(statement, (error, value) => {
        if (!error) return resolve(value as T);
        if (statements.get(sql) === statement) {
          statements.delete(sql);
          statement.finalize();
        }
        reject(error);
      });
    });
  const cached = statements.get(sql);
  if (cached) {
    // Most recently used last: the first is the one to evict.
    statements.delete(sql);
    statements.set(sql, cached);
    return call(cached);
  }
  return new Promise<T>((resolve, reject) => {
    // Called only once prepared: a call queued on a statement whose prepare fails is never called back.
    const statement = connection.prepare(sql, (error) => {
      if (error) return reject(error);
      if (statements.has(sql)) {
        // Another call prepared the same text meanwhile and kept its statement: this one is used once.
        call(statement).then(resolve, reject).finally(() => statement.finalize());
        return;
      }
      if (statements.size >= bound) {
        const [oldest, evicted] = statements.entries().next().value!;
        statements.delete(oldest);
        evicted.finalize();
      }
      statements.set(sql, statement);
      call(statement).then(resolve, reject);
    });
  });
}

function runPrepared(connection: SqliteDatabase, sql: string, params: unknown[]): Promise<number> {
  return withPrepared<number>(connection, { statements: statementsOf(connection).writes, bound: PREPARED_PER_CONNECTION }, sql, (statement, done) =>
    statement.run(params, function (error) {
      done(error, this.changes);
    }),
  );
}

function allPrepared(connection: SqliteDatabase, sql: string, params: unknown[]): Promise<Row[]> {
  return withPrepared<Row[]>(connection, { statements: statementsOf(connection).reads, bound: PREPARED_READS_PER_CONNECTION }, sql, (statement, done) =>
    statement.all(params, done),
  );
}

interface ConnectionManager {
  getConnection(options: { type: 'SELECT' | 'SQL' }): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<void>;
}

interface PgClient {
  query(sql: string, params: unknown[]): Promise<{ rowCount: number | null; rows: Row[] }>;
}

/** The last statement sent on each PostgreSQL connection: the next waits for it (see `onPgClient`). */
const pgTails = new WeakMap<PgClient, Promise<unknown>>();

/**
 * Runs statements on one PostgreSQL connection one after the other. The storage sends a batch's
 * independent writes together (SQLite's single writer queues them); a pg client would queue them too,
 * but that behaviour is deprecated and goes away in pg 9, so they queue here instead.
 */
function onPgClient(client: PgClient, sql: string, params: unknown[]): Promise<{ rowCount: number | null; rows: Row[] }> {
  const previous = pgTails.get(client) ?? Promise.resolve();
  const run = () => client.query(sql, params);
  const next = previous.then(run, run);
  pgTails.set(client, next.catch(() => undefined));
  return next;
}

/**
 * A failed raw statement: what `guarded` lets out of the adapter. The driver's error (PostgreSQL's `detail`
 * quotes the offending values, which may be PHI) and the statement stay in the non-enumerable cause.
 */
function failure(error: unknown, sql: string, entity: string): CoreError {
  const driver = error as { code?: unknown; message?: unknown };
  const code = typeof driver.code === 'string' ? driver.code : undefined;
  const message = typeof driver.message === 'string' ? driver.message : '';
  const unique = code === '23505' || (code === 'SQLITE_CONSTRAINT' && /UNIQUE|PRIMARY KEY/.test(message));
  const cause = Object.assign(error instanceof Error ? error : new Error(String(error)), { sql });
  if (unique) return new CoreError('CONFLICT', `${entity} already exists`, { cause });
  return new CoreError('INTERNAL', `storage query failed (${code ?? 'driver error'})`, { cause, ...(code ? { details: { code } } : {}) });
}

/**
 * The values of one statement as it is built: `add` binds a value and answers its placeholder, `$n`. A
 * placeholder may appear several times in the statement (SQLite reads `$n` as its `?n`, see `RawSql`), so a
 * value used twice is bound once.
 */
export class Params {
  readonly values: unknown[] = [];

  add(value: unknown): string {
    this.values.push(value === undefined ? null : value);
    return `$${this.values.length}`;
  }

  /** `$k, $k+1, ...`: the placeholders of a list of values, e.g. for `IN (...)`. */
  list(values: readonly unknown[]): string {
    return values.map((value) => this.add(value)).join(', ');
  }
}

/** The transactions of `runStatement` that have run their one statement. */
const statementsRun = new WeakSet<Transaction>();

/** Statement texts rewritten for SQLite, by their PostgreSQL text: a few dozen shapes repeat. */
const SQLITE_TEXTS_KEPT = 256;

export class RawSql {
  private readonly postgres: boolean;
  private readonly logging: boolean;
  /** Statement texts by shape; a batch import asks for the same few shapes over and over. Bounded: a row count is part of a shape. */
  private readonly texts = new Map<string, string>();
  /** SQLite's text of each statement written with `$n` placeholders (see `dialectText`). */
  private readonly sqliteTexts = new Map<string, string>();

  /** `logging: false` keeps this helper's statements out of the instance's log (the queue's polling would flood it). */
  constructor(
    private readonly sequelize: Sequelize,
    options: { logging?: boolean } = {},
  ) {
    this.postgres = sequelize.getDialect() === 'postgres';
    this.logging = options.logging !== false;
  }

  private cached(key: string, build: () => string): string {
    let text = this.texts.get(key);
    if (text === undefined) {
      text = build();
      if (this.texts.size >= 32) this.texts.delete(this.texts.keys().next().value!);
      this.texts.set(key, text);
    }
    return text;
  }

  /**
   * The statement as the dialect reads it. Statements are written once, with PostgreSQL's `$n`; SQLite's
   * `?n` is the same numbered parameter (bound from the same position, usable several times), so for
   * SQLite each `$n` becomes `?n`. Statements written with plain `?` (SQLite only) pass unchanged.
   */
  private dialectText(sql: string): string {
    if (this.postgres || !sql.includes('$')) return sql;
    let text = this.sqliteTexts.get(sql);
    if (text === undefined) {
      text = sql.replace(/\$(\d+)/g, '?$1');
      if (this.sqliteTexts.size >= SQLITE_TEXTS_KEPT) this.sqliteTexts.delete(this.sqliteTexts.keys().next().value!);
      this.sqliteTexts.set(sql, text);
    }
    return text;
  }

  /** `(?, ?), (?, ?)` for SQLite or `($1, $2), ($3, $4)` for PostgreSQL: `rows` tuples of `width` values. */
  values(rows: number, width: number): string {
    return this.cached(`values\u0000${rows}\u0000${width}`, () => {
      const tuples: string[] = [];
      for (let row = 0, n = 1; row < rows; row++) {
        const cells: string[] = [];
        for (let column = 0; column < width; column++) cells.push(this.postgres ? `$${n++}` : '?');
        tuples.push(`(${cells.join(',')})`);
      }
      return tuples.join(',');
    });
  }

  /**
   * `INSERT INTO table (columns) SELECT ... FROM <the rows of a JSON array>` + `suffix`: the whole batch is
   * ONE bound parameter, the JSON text of an array of rows (each an array in column order; nested values
   * as JSON, not as text). For narrow rows it is cheaper on both sides than binding value by value: 1,000
   * row outcomes cost the event loop 0.5 ms instead of 3 ms, and SQLite about as much.
   */
  insertFromJson(table: string, columns: Columns, suffix = ''): string {
    return this.cached(`json\u0000${table}\u0000${suffix}`, () => {
      const fields = columns.map(([, kind], i) => {
        if (kind === 'json') return `value -> ${i}`;
        if (!this.postgres || kind === 'text') return `value ->> ${i}`;
        return `CAST(value ->> ${i} AS ${kind})`;
      });
      const rows = this.postgres ? 'json_array_elements(CAST($1 AS json)) AS rows(value)' : 'json_each(?)';
      // `WHERE true`: SQLite's reading of INSERT ... SELECT ... ON CONFLICT needs it.
      return `INSERT INTO ${table} (${columns.map(([name]) => name).join(', ')}) SELECT ${fields.join(', ')} FROM ${rows} WHERE true${suffix}`;
    });
  }

  /**
   * `INSERT INTO table (columns) VALUES (?, ...), ...` + `suffix` for `rows` rows, each value bound on its
   * own (nested values as JSON text). Costs the event loop more than `insertFromJson` (node-sqlite3 binds
   * value by value) but the database less: for the 16 columns of a patient, reading them back out of JSON
   * took SQLite 23 ms per 1,000 rows against 8 ms bound, and the database's writer is what a bulk import
   * waits on.
   */
  insertValues(table: string, columns: Columns, rows: number, suffix = ''): string {
    return this.cached(`insert\u0000${table}\u0000${rows}\u0000${suffix}`, () => {
      return `INSERT INTO ${table} (${columns.map(([name]) => name).join(', ')}) VALUES ${this.values(rows, columns.length)}${suffix}`;
    });
  }

  /** `?,?,?` (or `$first,...`): a list of `count` values, e.g. for `IN (...)`; `first` numbers PostgreSQL's. */
  list(count: number, first = 1): string {
    if (!this.postgres || first === 1) return this.values(1, count).slice(1, -1);
    return Array.from({ length: count }, (_, i) => `$${first + i}`).join(',');
  }

  /**
   * Runs a write in the transaction; returns the number of rows it changed. On SQLite the statement stays
   * prepared on the connection for the next run of the same text (see `preparedByConnection`). Without a
   * transaction (PostgreSQL only) the statement commits on its own, on a pooled connection.
   */
  async run(transaction: Transaction | undefined, sql: string, params: unknown[], entity = 'record'): Promise<number> {
    return (await this.execute(transaction, sql, params, { rows: false, keep: true, entity })).changes;
  }

  /**
   * `run` without keeping the statement prepared: for statements of many shapes (single records, batches of
   * any size), which would only push the bulk import's few out of the connection's small set, and whose
   * eviction would finalize a statement another run may still be using.
   */
  async runOnce(transaction: Transaction | undefined, sql: string, params: unknown[], entity = 'record'): Promise<number> {
    return (await this.execute(transaction, sql, params, { rows: false, keep: false, entity })).changes;
  }

  /**
   * Runs a statement whose rows come back (a read, or a write with RETURNING) in the transaction, or, without
   * one, on a connection of the instance (SQLite's shared one, for reads only; a pooled one on PostgreSQL,
   * given back afterwards). `keepPrepared` keeps it prepared on a SQLite connection: for fixed shapes.
   */
  async all(transaction: Transaction | undefined, sql: string, params: unknown[], options: { keepPrepared?: boolean; entity?: string } = {}): Promise<Row[]> {
    return (await this.execute(transaction, sql, params, { rows: true, keep: options.keepPrepared === true, entity: options.entity ?? 'record' })).rows;
  }

  private async execute(
    transaction: Transaction | undefined,
    sql: string,
    params: unknown[],
    how: { rows: boolean; keep: boolean; entity: string },
  ): Promise<{ rows: Row[]; changes: number }> {
    if (!transaction && !how.rows && !this.postgres) {
      // On SQLite a write autocommitted on the shared connection waits in the busy handler while a transaction
      // holds the database, and every read of that connection behind it: writes go through the one writer.
      throw new CoreError('INTERNAL', 'a write on SQLite runs in a transaction of the writer (runTransaction)');
    }
    if (transaction && isSingleStatement(transaction)) {
      if (statementsRun.has(transaction)) throw new CoreError('INTERNAL', 'a second statement in the turn of one statement (runStatement)');
      statementsRun.add(transaction);
    }
    const text = this.dialectText(sql);
    this.log(text, transaction);
    const manager = (this.sequelize as unknown as { connectionManager: ConnectionManager }).connectionManager;
    const connection = transaction
      ? (transaction as unknown as { connection: unknown }).connection
      : await manager.getConnection({ type: how.rows && /^\s*SELECT\b/i.test(text) ? 'SELECT' : 'SQL' });
    try {
      if (this.postgres) {
        const result = await onPgClient(connection as PgClient, text, params);
        return { rows: result.rows, changes: result.rowCount ?? 0 };
      }
      const sqlite = connection as SqliteDatabase;
      if (how.rows) {
        if (how.keep) return { rows: await allPrepared(sqlite, text, params), changes: 0 };
        return { rows: await new Promise<Row[]>((resolve, reject) => sqlite.all(text, params, (error, rows) => (error ? reject(error) : resolve(rows)))), changes: 0 };
      }
      if (how.keep) return { rows: [], changes: await runPrepared(sqlite, text, params) };
      return {
        rows: [],
        changes: await new Promise<number>((resolve, reject) => {
          sqlite.run(text, params, function (error) {
            if (error) reject(error);
            else resolve(this.changes);
          });
        }),
      };
    } catch (error) {
      throw failure(error, text, how.entity);
    } finally {
      if (!transaction) await manager.releaseConnection(connection);
    }
  }

  /**
   * Honours the instance's `logging` option as its own queries do: the statement, and the options with the
   * statement's transaction (values are not logged: they hold PHI).
   */
  private log(sql: string, transaction: Transaction | undefined): void {
    if (!this.logging) return;
    const logging = (this.sequelize as unknown as { options: { logging?: unknown } }).options.logging;
    if (typeof logging !== 'function') return;
    logging(`Executing (${(transaction as unknown as { id?: string } | undefined)?.id ?? 'default'}): ${sql}`, { transaction });
  }
}
