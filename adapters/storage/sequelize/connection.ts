import path from 'node:path';
import { Sequelize, Transaction } from 'sequelize';
import { Mutex } from '../mutex.js';

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
}

const configuredInstances = new WeakSet<Sequelize>();

/**
 * Gives every connection of a SQLite instance WAL mode (on disk), `synchronous=NORMAL` and a busy timeout.
 * Idempotent; a no-op on other dialects. `openSequelize` calls it; `SequelizeStorage.open` calls it on an
 * instance it is given, so the settings hold whoever created the instance.
 *
 * Sequelize's SQLite dialect opens one connection per transaction and runs no connect hooks, so the
 * pragmas are applied by wrapping its `getConnection`, once per connection.
 */
export function configureSqlite(sequelize: Sequelize): void {
  if (sequelize.getDialect() !== 'sqlite' || configuredInstances.has(sequelize)) return;
  configuredInstances.add(sequelize);
  const storage = (sequelize as unknown as { options: { storage?: string } }).options.storage;
  const onDisk = storage !== undefined && storage !== '' && storage !== ':memory:';
  const manager = (sequelize as unknown as { connectionManager: { getConnection(options?: unknown): Promise<SqliteConnection> } })
    .connectionManager;
  const getConnection = manager.getConnection.bind(manager);
  const configured = new WeakSet<SqliteConnection>();
  const pragmas = onDisk ? 'PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;' : 'PRAGMA synchronous=NORMAL;';
  manager.getConnection = async (options?: unknown) => {
    const connection = await getConnection(options);
    if (!configured.has(connection)) {
      configured.add(connection);
      connection.configure('busyTimeout', SQLITE_BUSY_TIMEOUT_MS);
      await new Promise<void>((resolve, reject) => connection.exec(pragmas, (error) => (error ? reject(error) : resolve())));
    }
    return connection;
  };
}

const sqliteWriters = new WeakMap<Sequelize, Mutex>();

/**
 * Runs `work` in a managed transaction (committed when it resolves, rolled back when it throws).
 * On SQLite, transactions of the same Sequelize instance run one at a time and take the write lock at BEGIN
 * (IMMEDIATE), so they never fail with SQLITE_BUSY against each other; adapters sharing the instance (the
 * durable queue) should open their transactions through this function too.
 */
export async function runTransaction<T>(sequelize: Sequelize, work: (transaction: Transaction) => Promise<T>): Promise<T> {
  if (sequelize.getDialect() !== 'sqlite') return sequelize.transaction((transaction) => work(transaction));
  let writer = sqliteWriters.get(sequelize);
  if (!writer) {
    writer = new Mutex();
    sqliteWriters.set(sequelize, writer);
  }
  return writer.run(() => sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE }, (transaction) => work(transaction)));
}
