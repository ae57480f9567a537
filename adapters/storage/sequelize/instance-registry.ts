import type { Sequelize, Transaction } from 'sequelize';
import { runTransaction } from './connection.js';
import { RawSql } from './raw-sql.js';

/** One running instance of the service, as it registered itself in the database it shares. */
export interface InstanceRecord {
  instanceId: string;
  /** The base of the URLs it hands out. */
  publicUrl: string;
  /** A one-way fingerprint of its URL signing secret (never the secret). */
  secretFingerprint: string;
  /** Where its blobs live (`s3://bucket/prefix at <endpoint>`, `file:///path`); empty when unknown. */
  blobLocation: string;
  /** Epoch ms. */
  startedAt: number;
  /** Epoch ms of its last heartbeat. */
  heartbeatAt: number;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
/** Any constant: the advisory lock that makes joining one at a time on PostgreSQL. */
const JOIN_LOCK_KEY = 716_253_001;

/**
 * The table `carebridge_instances` of a shared database: each instance of the service keeps a row with
 * the settings that must agree between instances and a heartbeat. Created when missing.
 */
export class SqlInstanceRegistry {
  private readonly table: string;
  private readonly dialect: string;
  private readonly raw: RawSql;

  constructor(
    private readonly sequelize: Sequelize,
    options: { schema?: string } = {},
  ) {
    this.dialect = sequelize.getDialect();
    this.raw = new RawSql(sequelize);
    if (options.schema !== undefined && !IDENTIFIER.test(options.schema)) throw new Error('SqlInstanceRegistry: schema must be a plain SQL identifier');
    this.table = options.schema === undefined || this.dialect !== 'postgres' ? '"carebridge_instances"' : `"${options.schema}"."carebridge_instances"`;
  }

  /**
   * One joining instance at a time (an advisory lock on PostgreSQL, the write lock on SQLite): hands the
   * registered instances that are not `gone` to `check` and registers `self` when `check` returns. When
   * `check` throws, nothing is registered and the error is rethrown. Joining again with the same id replaces
   * the row. Returns the instances that are `gone`, still registered: their caller ends what they held,
   * then `leave`s them in their name.
   */
  async join(self: InstanceRecord, gone: (record: InstanceRecord) => boolean, check: (live: InstanceRecord[]) => void): Promise<InstanceRecord[]> {
    return runTransaction(this.sequelize, async (transaction) => {
      if (this.dialect === 'postgres') await this.raw.all(transaction, `SELECT pg_advisory_xact_lock(${JOIN_LOCK_KEY})`, []);
      await this.sequelize.query(
        `CREATE TABLE IF NOT EXISTS ${this.table} (
           instance_id TEXT PRIMARY KEY,
           public_url TEXT NOT NULL,
           secret_fingerprint TEXT NOT NULL,
           blob_location TEXT NOT NULL,
           started_at BIGINT NOT NULL,
           heartbeat_at BIGINT NOT NULL
         )`,
        { transaction },
      );
      const others = (await this.list(transaction)).filter((record) => record.instanceId !== self.instanceId);
      check(others.filter((record) => !gone(record)));
      await this.upsert(self, transaction);
      return others.filter(gone);
    });
  }

  /** Records a heartbeat; writes the whole row back if it was removed meanwhile (this instance looked stale). */
  async heartbeat(self: InstanceRecord): Promise<void> {
    // Through the one writer on SQLite, as every write there: left to autocommit on the connection reads
    // share, it waited in the busy handler while a transaction held the database, and the reads behind it.
    await runTransaction(this.sequelize, (transaction) => this.upsert(self, transaction));
  }

  /** Removes the instance's row; a missing row is not an error. */
  async leave(instanceId: string): Promise<void> {
    await runTransaction(this.sequelize, (transaction) => this.raw.runOnce(transaction, `DELETE FROM ${this.table} WHERE instance_id = $1`, [instanceId]));
  }

  /** Every registered instance, live or not, oldest start first. */
  async list(transaction?: Transaction): Promise<InstanceRecord[]> {
    const rows = await this.raw.all(
      transaction,
      `SELECT instance_id, public_url, secret_fingerprint, blob_location, started_at, heartbeat_at FROM ${this.table} ORDER BY started_at, instance_id`,
      [],
    );
    return rows.map((row) => ({
      instanceId: String(row.instance_id),
      publicUrl: String(row.public_url),
      secretFingerprint: String(row.secret_fingerprint),
      blobLocation: String(row.blob_location),
      // PostgreSQL hands BIGINT back as text.
      startedAt: Number(row.started_at),
      heartbeatAt: Number(row.heartbeat_at),
    }));
  }

  private async upsert(record: InstanceRecord, transaction: Transaction): Promise<void> {
    await this.raw.run(
      transaction,
      `INSERT INTO ${this.table} (instance_id, public_url, secret_fingerprint, blob_location, started_at, heartbeat_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
      [record.instanceId, record.publicUrl, record.secretFingerprint, record.blobLocation, record.startedAt, record.heartbeatAt],
    );
  }
}
