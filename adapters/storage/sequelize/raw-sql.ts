import type { Sequelize, Transaction } from 'sequelize';
import { CoreError } from '../../../core/errors.js';
import type { Row } from './models.js';

/**
 * Batch statements run straight on the driver connection of a Sequelize transaction, with positional
 * bind parameters. The hot paths of a bulk import (patients, their match keys, row outcomes) go here:
 * Sequelize's `bulkCreate` escapes every value in JS and builds model instances (about 95 ms per 1,000
 * patients on SQLite), and its `bind` option rewrites positional parameters into named ones with a regex
 * pass over the statement (1.3 s per 1,000 patients); the driver alone takes about 35 ms.
 * Single-record writes keep going through the models.
 */

interface SqliteDatabase {
  run(sql: string, params: unknown[], callback: (this: { changes: number }, error: Error | null) => void): void;
  all(sql: string, params: unknown[], callback: (error: Error | null, rows: Row[]) => void): void;
}

interface PgClient {
  query(sql: string, params: unknown[]): Promise<{ rowCount: number | null; rows: Row[] }>;
}

/** Largest number of bound values one statement may carry: SQLite's default limit; PostgreSQL allows 65,535. */
export const MAX_BOUND_VALUES = 32_766;

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

export class RawSql {
  private readonly postgres: boolean;
  private readonly valueLists = new Map<string, string>();

  constructor(private readonly sequelize: Sequelize) {
    this.postgres = sequelize.getDialect() === 'postgres';
  }

  /**
   * `(?, ?), (?, ?)` for SQLite or `($1, $2), ($3, $4)` for PostgreSQL: `rows` tuples of `width` values.
   * Cached: a batch import asks for the same few shapes over and over.
   */
  values(rows: number, width: number): string {
    const key = `${rows}x${width}`;
    let text = this.valueLists.get(key);
    if (text === undefined) {
      const tuples: string[] = [];
      for (let row = 0, n = 1; row < rows; row++) {
        const cells: string[] = [];
        for (let column = 0; column < width; column++) cells.push(this.postgres ? `$${n++}` : '?');
        tuples.push(`(${cells.join(',')})`);
      }
      text = tuples.join(',');
      this.valueLists.set(key, text);
    }
    return text;
  }

  /** `?, ?, ?` (or `$1, $2, $3`): a list of `count` values, e.g. for `IN (...)`. */
  list(count: number): string {
    return this.values(1, count).slice(1, -1);
  }

  /** Runs a write in the transaction; returns the number of rows it changed. */
  async run(transaction: Transaction, sql: string, params: unknown[], entity = 'record'): Promise<number> {
    this.log(sql, transaction);
    const connection = (transaction as unknown as { connection: unknown }).connection;
    try {
      if (this.postgres) return (await (connection as PgClient).query(sql, params)).rowCount ?? 0;
      return await new Promise<number>((resolve, reject) => {
        (connection as SqliteDatabase).run(sql, params, function (error) {
          if (error) reject(error);
          else resolve(this.changes);
        });
      });
    } catch (error) {
      throw failure(error, sql, entity);
    }
  }

  /** Runs a read in the transaction. */
  async all(transaction: Transaction, sql: string, params: unknown[]): Promise<Row[]> {
    this.log(sql, transaction);
    const connection = (transaction as unknown as { connection: unknown }).connection;
    try {
      if (this.postgres) return (await (connection as PgClient).query(sql, params)).rows;
      return await new Promise<Row[]>((resolve, reject) => {
        (connection as SqliteDatabase).all(sql, params, (error, rows) => (error ? reject(error) : resolve(rows)));
      });
    } catch (error) {
      throw failure(error, sql, 'record');
    }
  }

  /** Honours the instance's `logging` option, as its own queries do (values are not logged: they hold PHI). */
  private log(sql: string, transaction: Transaction): void {
    const logging = (this.sequelize as unknown as { options: { logging?: unknown } }).options.logging;
    if (typeof logging === 'function') logging(`Executing (${(transaction as unknown as { id?: string }).id ?? 'default'}): ${sql}`);
  }
}
