import path from 'node:path';
import { Sequelize, Transaction } from 'sequelize';
import { CoreError } from '../../../core/errors.js';
import { Mutex } from '../mutex.js';
import { currentRank } from '../../work-rank.js';

export interface SequelizeConnectionOptions {
  /**
   * `postgres://user@host:port/db` for PostgreSQL; `sqlite:<file>` or `:memory:` (also `sqlite::memory:`)
   * for SQLite. When absent: SQLite in `<dataDir>/carebridge.sqlite`.
   */
  url?: string;
  /** Directory of the default SQLite file; `./data` when absent. */
  dataDir?: string;
  /** PostgreSQL only: the schema every connection works in (its `search_path`), e.g. to isolate tests. */
  schema?: string;
  /** Logs SQL through console.debug. Off by default: SQL carries PHI in its values. */
  logging?: boolean;
}

/** How long a SQLite connection waits for another writer (another process, or a write outside a transaction). */
const SQLITE_BUSY_TIMEOUT_MS = 5_000;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Opens a Sequelize instance for the storage and the adapters that share its database (the durable queue).
 * SQLite gets WAL mode, `synchronous=NORMAL` and a busy timeout on every connection it opens.
 */
export async function openSequelize(options: string | SequelizeConnectionOptions = {}): Promise<Sequelize> {
  const settings = typeof options === 'string' ? { url: options } : options;
  const logging = settings.logging ? (sql: string) => console.debug(sql) : false;
  const url = settings.url;

  if (url !== undefined && /^postgres(ql)?:\/\//.test(url)) {
    const schema = settings.schema;
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
      throw new Error(`schema must match ${SCHEMA_NAME.source}`);
    }
    const sequelize = new Sequelize(url, {
      dialect: 'postgres',
      logging,
      // search_path as a connection parameter: it holds for every pooled connection, with no extra round trip.
      dialectOptions: schema === undefined ? {} : { options: `-c search_path=${schema}` },
      pool: { max: 10, min: 0, idle: 10_000 },
    });
    await sequelize.authenticate();
    return sequelize;
  }

  if (settings.schema !== undefined) throw new Error('schema applies to PostgreSQL only');
  const storage = sqliteStorage(url, settings.dataDir);
  const sequelize = new Sequelize({ dialect: 'sqlite', storage, logging });
  configureSqlite(sequelize);
  await sequelize.authenticate();
  return sequelize;
}

function sqliteStorage(url: string | undefined, dataDir: string | undefined): string {
  if (url === undefined) return path.resolve(dataDir ?? './data', 'carebridge.sqlite');
  if (url === ':memory:' || url === 'sqlite::memory:') return ':memory:';
  if (url.startsWith('sqlite:')) return path.resolve(url.slice('sqlite:'.length).replace(/^\/\//, ''));
  throw new Error('url must start with postgres://, postgresql:// or sqlite:, or be :memory:');
}

interface SqliteConnection {
  configure(option: 'busyTimeout', value: number): void;
  exec(sql: string, callback: (error: Error | null) => void): void;
  close(callback?: (error: Error | null) => void): void;
  /** Set by Sequelize on a transaction's connection: the transaction id. */
  uuid?: string;
}

interface SqliteConnectionManager {
  connections: Record<string, SqliteConnection>;
  getConnection(options?: { uuid?: string }): Promise<SqliteConnection>;
  releaseConnection(connection: SqliteConnection, force?: boolean): unknown;
  _onProcessExit(): Promise<void>;
}

/** Idle transaction connections kept open for the next transactions (on disk only). */
const IDLE_TRANSACTION_CONNECTIONS = 2;

/**
 * Pages of WAL after which a commit checkpoints it into the database file (SQLite's default is 1,000,
 * 4 MB). A bulk import writes a few MB per batch; checkpointing every other batch copied and synced the
 * same index pages again and again, on the commit's path.
 */
const WAL_AUTOCHECKPOINT_PAGES = 16_384;

/**
 * Page cache of a transaction (writer) connection, in KiB (SQLite's default is 2 MB). Blocking keys land at
 * random places of their index, so with the default cache most inserts of an import's batch re-read their
 * page through the WAL; 32 MB holds the index of a few hundred thousand patients. The shared connection of
 * reads outside transactions keeps the default. The cache grows only as pages are used.
 */
const WRITER_CACHE_KIB = 32_768;

const configuredInstances = new WeakSet<Sequelize>();

/**
 * Gives every connection of a SQLite instance WAL mode (on disk), `synchronous=NORMAL` and a busy timeout.
 * Idempotent; a no-op on other dialects. `openSequelize` calls it; `SequelizeStorage.open` calls it on an
 * instance it is given, so the settings hold whoever created the instance.
 *
 * Sequelize's SQLite dialect opens one connection per transaction and runs no connect hooks, so the
 * pragmas are applied by wrapping its `getConnection`, once per connection. It also closes each
 * transaction's connection at the end: opening one (file, pragmas, schema) cost 25-90 ms per transaction
 * of a bulk import, and its page cache started cold. So a released transaction connection is kept (up to
 * IDLE_TRANSACTION_CONNECTIONS) and handed to the next transaction; each transaction still has a
 * connection of its own while it runs.
 */
export function configureSqlite(sequelize: Sequelize): void {
  if (sequelize.getDialect() !== 'sqlite' || configuredInstances.has(sequelize)) return;
  configuredInstances.add(sequelize);
  const storage = (sequelize as unknown as { options: { storage?: string } }).options.storage;
  const onDisk = storage !== undefined && storage !== '' && storage !== ':memory:';
  const manager = (sequelize as unknown as { connectionManager: SqliteConnectionManager }).connectionManager;
  const getConnection = manager.getConnection.bind(manager);
  const releaseConnection = manager.releaseConnection.bind(manager);
  const onProcessExit = manager._onProcessExit.bind(manager);
  const configured = new WeakSet<SqliteConnection>();
  const pragmas = onDisk
    ? `PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=${WAL_AUTOCHECKPOINT_PAGES};`
    : 'PRAGMA synchronous=NORMAL;';
  const idle: SqliteConnection[] = [];
  let closing = false;
  manager.getConnection = async (options?: { uuid?: string }) => {
    const uuid = options?.uuid;
    if (onDisk && uuid !== undefined && uuid !== 'default' && manager.connections[uuid] === undefined) {
      const reused = idle.pop();
      if (reused) {
        manager.connections[uuid] = reused;
        return reused;
      }
    }
    const connection = await getConnection(options);
    if (!configured.has(connection)) {
      configured.add(connection);
      connection.configure('busyTimeout', SQLITE_BUSY_TIMEOUT_MS);
      const writer = uuid !== undefined && uuid !== 'default';
      const connectionPragmas = writer ? `${pragmas} PRAGMA cache_size=-${WRITER_CACHE_KIB};` : pragmas;
      await new Promise<void>((resolve, reject) => connection.exec(connectionPragmas, (error) => (error ? reject(error) : resolve())));
    }
    return connection;
  };
  manager.releaseConnection = (connection: SqliteConnection, force?: boolean) => {
    if (onDisk && !closing && force !== true && connection.uuid !== undefined && idle.length < IDLE_TRANSACTION_CONNECTIONS) {
      delete manager.connections[connection.uuid];
      connection.uuid = undefined;
      idle.push(connection);
      return;
    }
    return releaseConnection(connection, force);
  };
  controlTransactionsOnDriver(sequelize);
  // `sequelize.close()` closes the connections Sequelize knows of; the idle ones are closed with them.
  manager._onProcessExit = async () => {
    closing = true;
    await Promise.all(idle.splice(0).map((connection) => new Promise<void>((resolve) => connection.close(() => resolve()))));
    await onProcessExit();
  };
}

interface TransactionControl {
  startTransaction(transaction: Transaction, options?: object): Promise<unknown>;
  commitTransaction(transaction: Transaction, options?: object): Promise<unknown>;
  rollbackTransaction(transaction: Transaction, options?: object): Promise<unknown>;
}

/** What Sequelize keeps on its Transaction beside the public type: the connection it runs on, its parent. */
interface TransactionInternals {
  connection?: SqliteConnection;
  parent?: Transaction;
  finished?: string;
  id: string;
  options: { type?: string; [SINGLE_STATEMENT]?: boolean };
}

/** The option that marks a transaction of `runStatement`: no BEGIN, COMMIT or ROLLBACK is sent for it. */
const SINGLE_STATEMENT = 'carebridgeSingleStatement';

/** Whether the transaction is `runStatement`'s: one statement, autocommitted on the writer's connection. */
export function isSingleStatement(transaction: Transaction): boolean {
  return (transaction as unknown as TransactionInternals).options[SINGLE_STATEMENT] === true;
}

/**
 * BEGIN, COMMIT and ROLLBACK of SQLite transactions run straight on the transaction's connection. Through
 * Sequelize each is a query like any other: the statement built through its query generator, logged, run
 * under `serialize`, and an Error created whose stack is formatted when the statement ends, whether it
 * failed or not: 0.34 ms of the event loop per empty transaction against 0.04 ms on the driver, and a
 * journey commits several transactions per document (the queue's claims and completions, the outbox's,
 * each step's). Savepoints (a nested transaction) keep Sequelize's own path.
 */
function controlTransactionsOnDriver(sequelize: Sequelize): void {
  const queryInterface = sequelize.getQueryInterface() as unknown as TransactionControl;
  const options = (sequelize as unknown as { options: { logging?: unknown } }).options;
  const start = queryInterface.startTransaction.bind(queryInterface);
  const commit = queryInterface.commitTransaction.bind(queryInterface);
  const rollback = queryInterface.rollbackTransaction.bind(queryInterface);
  const exec = (transaction: TransactionInternals, sql: string) => {
    if (typeof options.logging === 'function') options.logging(`Executing (${transaction.id}): ${sql}`);
    const connection = transaction.connection!;
    return new Promise<void>((resolve, reject) => connection.exec(sql, (error) => (error ? reject(transactionFailure(error, sql)) : resolve())));
  };
  queryInterface.startTransaction = (transaction, rest) => {
    const internals = transaction as unknown as TransactionInternals;
    if (internals.options[SINGLE_STATEMENT] === true) return Promise.resolve();
    if (internals.parent || !internals.connection) return start(transaction, rest);
    return exec(internals, `BEGIN ${internals.options.type ?? 'DEFERRED'} TRANSACTION;`);
  };
  /** COMMIT or ROLLBACK: finished as soon as it is sent, whatever its outcome, as Sequelize marks it. */
  const end = (statement: 'COMMIT' | 'ROLLBACK', state: string, sequelizes: TransactionControl['commitTransaction']): TransactionControl['commitTransaction'] =>
    async (transaction, rest) => {
      const internals = transaction as unknown as TransactionInternals;
      if (internals.options[SINGLE_STATEMENT] === true) {
        // Its one statement committed itself, or, failing, undid itself: SQLite makes every statement atomic.
        internals.finished = state;
        return;
      }
      if (internals.parent || !internals.connection) return sequelizes(transaction, rest);
      const done = exec(internals, `${statement};`);
      internals.finished = state;
      await done;
    };
  queryInterface.commitTransaction = end('COMMIT', 'commit', commit);
  queryInterface.rollbackTransaction = end('ROLLBACK', 'rollback', rollback);
}

/** A failed BEGIN, COMMIT or ROLLBACK as the storage's other driver failures leave it: the driver's code, the driver's error as the cause. */
function transactionFailure(error: Error, sql: string): CoreError {
  const code = (error as { code?: unknown }).code;
  const named = typeof code === 'string' ? code : 'driver error';
  return new CoreError('INTERNAL', `storage transaction failed (${sql.replace(/ .*|;$/g, '')}: ${named})`, { cause: error, ...(typeof code === 'string' ? { details: { code } } : {}) });
}

const sqliteWriters = new WeakMap<Sequelize, Mutex>();

/**
 * Runs `work` in a managed transaction (committed when it resolves, rolled back when it throws).
 * On SQLite, transactions of the same Sequelize instance run one at a time and take the write lock at BEGIN
 * (IMMEDIATE), so they never fail with SQLITE_BUSY against each other; adapters sharing the instance (the
 * durable queue) should open their transactions through this function too. Background work (work-rank.ts)
 * waits for the writer behind urgent work.
 */
export async function runTransaction<T>(sequelize: Sequelize, work: (transaction: Transaction) => Promise<T>): Promise<T> {
  if (sequelize.getDialect() !== 'sqlite') return sequelize.transaction((transaction) => work(transaction));
  return writerOf(sequelize).run(() => sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE }, (transaction) => work(transaction)), currentRank());
}

/**
 * Runs ONE write statement: `work` must run exactly one statement through `RawSql` (a second throws), on
 * the transaction it is given. A statement is atomic on its own, so no BEGIN and COMMIT are sent around
 * it: on SQLite it runs on a connection of the writer, its turn taken as `runTransaction`'s, and it costs
 * one trip to the driver where a transaction costs three. Each trip waits for the event loop, and in a
 * journey the loop is busy: the BEGINs and COMMITs around single statements (a job's enqueue, claim and
 * completion, a query's insert, a webhook claim) held the writer about a fifth of the time. SQLite takes the
 * write lock when a writing statement begins, waiting in the busy handler like BEGIN IMMEDIATE. Elsewhere
 * `work` is given no transaction: the statement autocommits on a pooled connection.
 */
export async function runStatement<T>(sequelize: Sequelize, work: (transaction: Transaction | undefined) => Promise<T>): Promise<T> {
  if (sequelize.getDialect() !== 'sqlite') return work(undefined);
  const options = { type: Transaction.TYPES.IMMEDIATE, [SINGLE_STATEMENT]: true };
  return writerOf(sequelize).run(() => sequelize.transaction(options, (transaction) => work(transaction)), currentRank());
}

/** The SQLite instance's one writer. */
function writerOf(sequelize: Sequelize): Mutex {
  let writer = sqliteWriters.get(sequelize);
  if (!writer) {
    writer = new Mutex();
    sqliteWriters.set(sequelize, writer);
  }
  return writer;
}
