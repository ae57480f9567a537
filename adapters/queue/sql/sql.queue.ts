import type { Sequelize, Transaction } from 'sequelize';
import { runStatement, runTransaction } from '../../storage/sequelize/connection.js';
import { Params, RawSql } from '../../storage/sequelize/raw-sql.js';
import { SequelizeStorage, Umzug } from 'umzug';
import { CoreError } from '../../../core/errors.js';
import type { ClaimedJob, JobFailure, JobLane, JsonValue, NewJob, QueuePort, QueueStats } from '../../../core/ports/queue.port.js';
import {
  LANE_OF_RANK,
  LANE_RANK,
  LEASE_EXPIRED_ERROR,
  checkLeaseMs,
  checkLimit,
  checkWorkerId,
  clipError,
  parsePayload,
  prepareJob,
  resolveQueueOptions,
  retryAtMs,
  type QueueOptions,
  type ResolvedQueueOptions,
} from '../queue-common.js';
import { queueMigrations, type QueueMigrationContext } from './queue.migrations.js';

type Dialect = 'sqlite' | 'postgres';
type Row = Record<string, unknown>;

export interface SqlQueueOptions extends QueueOptions {
  /** A Sequelize instance on SQLite or PostgreSQL; the queue only adds its own two tables to it. */
  sequelize: Sequelize;
  /** PostgreSQL schema for the queue tables (created when missing); SQLite has none. */
  schema?: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
/** Serialises migration runs of several processes starting at once against one PostgreSQL database. */
const MIGRATION_LOCK_KEY = 4_242_017_003;

const num = (value: unknown): number => (typeof value === 'number' ? value : Number(value));

/**
 * The durable queue, in the table `queue_jobs` of the service's own database (SQLite or PostgreSQL),
 * so jobs survive restarts and sit next to the data they act on. Every state change is one statement
 * guarded by the job's current status and lock holder, so no step can half-apply:
 *
 * - PostgreSQL claims with `UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED LIMIT n)`, so workers
 *   in several processes each take different rows without waiting on one another.
 * - SQLite runs each write statement as a turn of the instance's one writer (`runStatement`, shared with
 *   the storage adapter: the statement on a writer's connection, no BEGIN and COMMIT around it), and a
 *   claim that must deal with a run-out lease in one transaction of the writer (`runTransaction`), so claims
 *   of this process never interleave. A write is never left to autocommit on the connection reads share:
 *   meeting a storage transaction's write lock there, it waited in SQLite's busy handler and held up every
 *   read of that connection meanwhile (the API's too), up to the busy timeout and then failed, more often
 *   the more jobs ran at once. Each turn is one statement, or a claim's three, so none is long-lived (on an
 *   in-memory database Sequelize shares one connection, and a long one there would swallow the storage's
 *   concurrent queries).
 *
 * Times are stored as epoch milliseconds (BIGINT) from the clock port, never the database's clock, so a
 * stepped clock drives leases and retries in tests exactly as in the memory queue.
 *
 * Statements run on the driver (`RawSql`, as the storage's do), kept prepared on SQLite: a claim and a
 * completion are the statements the service runs most, and through Sequelize's query path each cost the
 * event loop several times what it cost the database.
 */
export class SqlQueue implements QueuePort {
  private readonly raw: RawSql;

  private constructor(
    private readonly sequelize: Sequelize,
    private readonly dialect: Dialect,
    /** Quoted, schema-qualified table name. */
    private readonly table: string,
    private readonly options: ResolvedQueueOptions,
  ) {
    // Not logged: idle workers poll with claims.
    this.raw = new RawSql(sequelize, { logging: false });
  }

  /** Creates (or upgrades) the queue tables, then returns a queue on them. Safe to call from many processes. */
  static async open(options: SqlQueueOptions): Promise<SqlQueue> {
    const { sequelize, schema } = options;
    const dialect = sequelize.getDialect();
    if (dialect !== 'sqlite' && dialect !== 'postgres') {
      throw new CoreError('NOT_IMPLEMENTED', `SqlQueue supports sqlite and postgres, not ${dialect}`);
    }
    if (schema !== undefined) {
      if (dialect !== 'postgres') throw new CoreError('BAD_REQUEST', 'SqlQueue: a schema is only supported on PostgreSQL');
      if (!IDENTIFIER.test(schema)) throw new CoreError('BAD_REQUEST', 'SqlQueue: schema must be a plain SQL identifier');
    }
    const table = schema === undefined ? '"queue_jobs"' : `"${schema}"."queue_jobs"`;
    await migrate({ sequelize, dialect, table, schema });
    return new SqlQueue(sequelize, dialect, table, resolveQueueOptions(options));
  }

  async enqueue(job: NewJob): Promise<string> {
    const nowMs = this.nowMs();
    const prepared = prepareJob(job, this.options, nowMs);
    // A few rounds are enough: a round only repeats when the job holding the key finished in between.
    for (let round = 0; round < 5; round += 1) {
      // The turn: after the key's last active job, but never one its lane has already passed (the lowest
      // pending turn), so a key that queues behind another key's backlog is served within a round.
      const greatest = this.dialect === 'postgres' ? 'GREATEST' : 'MAX';
      const inserted = await this.writeReturning(
        `INSERT INTO ${this.table} (id, type, payload, status, dedupe_key, attempts, max_attempts, run_at, created_at, updated_at, lane, fairness_key, turn)
         VALUES ($1, $2, $3, 'pending', $4, 0, $5, $6, $7, $7, $8, $9,
           ${greatest}(
             COALESCE((SELECT MAX(turn) + 1 FROM ${this.table} WHERE lane = $10 AND fairness_key = $11 AND status IN ('pending', 'running')), 0),
             COALESCE((SELECT MIN(turn) FROM ${this.table} WHERE status = 'pending' AND lane = $10), 0)))
         ON CONFLICT (dedupe_key) WHERE status IN ('pending', 'running') DO NOTHING
         RETURNING id`,
        // Lane and key bound twice: PostgreSQL types a parameter the column's type (VARCHAR) in VALUES and text in a comparison.
        [prepared.id, prepared.type, prepared.payload, prepared.key ?? null, prepared.maxAttempts, prepared.runAtMs, nowMs, LANE_RANK[prepared.lane], prepared.fairnessKey, LANE_RANK[prepared.lane], prepared.fairnessKey],
      );
      if (inserted[0]) return String(inserted[0].id);
      const existing = await this.select(`SELECT id FROM ${this.table} WHERE dedupe_key = $1 AND status IN ('pending', 'running')`, [prepared.key ?? null]);
      if (existing[0]) {
        if (prepared.lane === 'interactive') await this.promote(String(existing[0].id), nowMs);
        return String(existing[0].id);
      }
    }
    throw new CoreError('CONFLICT', 'could not enqueue the job: its key kept changing hands');
  }

  /** A pending background job moves to the interactive lane, at the turn it would get if queued now. */
  private async promote(id: string, nowMs: number): Promise<void> {
    const greatest = this.dialect === 'postgres' ? 'GREATEST' : 'MAX';
    await this.run(
      `UPDATE ${this.table}
       SET lane = 0, updated_at = $2, turn = ${greatest}(
         COALESCE((SELECT MAX(k.turn) + 1 FROM ${this.table} k WHERE k.lane = 0 AND k.fairness_key = ${this.table}.fairness_key AND k.status IN ('pending', 'running')), 0),
         COALESCE((SELECT MIN(p.turn) FROM ${this.table} p WHERE p.status = 'pending' AND p.lane = 0), 0))
       WHERE id = $1 AND status = 'pending' AND lane = 1`,
      [id, nowMs],
    );
  }

  async claim(options: { workerId: string; limit: number; leaseMs: number; types?: readonly string[]; lanes?: readonly JobLane[] }): Promise<ClaimedJob[]> {
    checkWorkerId(options.workerId);
    checkLimit(options.limit);
    checkLeaseMs(options.leaseMs);
    // Most claims find nothing: a free slot asks for interactive work first, and in a journey there is
    // none. A read says so without a turn of the writer: nothing pending is due and no lease has run out
    // (whose job the claim would take over or mark dead). A job that lands after the read is the next
    // claim's, as if this one had run earlier.
    const due = await this.dueToClaim(options);
    if (due === 'nothing') return [];
    // Without a run-out lease to deal with, a claim is one statement (a turn of the writer without BEGIN
    // and COMMIT on SQLite, see `runStatement`); with one, its statements share one transaction of the
    // writer, which also keeps two claims of this process apart. Claims are the queue's most frequent
    // write (every idle slot asks).
    if (due === 'pending') return runStatement(this.sequelize, (transaction) => this.claimIn(options, transaction, due));
    return this.dialect === 'sqlite' ? runTransaction(this.sequelize, (transaction) => this.claimIn(options, transaction, due)) : this.claimIn(options, undefined, due);
  }

  /**
   * What a claim with these filters would find now: a run-out lease to deal with (`expired`, whatever else
   * is due), pending jobs due and nothing else (`pending`), or `nothing`.
   */
  private async dueToClaim(options: { types?: readonly string[]; lanes?: readonly JobLane[] }): Promise<'expired' | 'pending' | 'nothing'> {
    const params = new Params();
    const now = params.add(this.nowMs());
    const filters = claimFilters(options, params);
    const pending = options.types?.length === 0 || options.lanes?.length === 0 ? 'false' : `EXISTS (SELECT 1 FROM ${this.table} WHERE status = 'pending' AND run_at <= ${now} ${filters})`;
    const [row] = await this.select(`SELECT EXISTS (SELECT 1 FROM ${this.table} WHERE status = 'running' AND lease_until <= ${now}) AS expired, ${pending} AS pending`, params.values);
    // PostgreSQL answers booleans, SQLite 0 or 1: either is 1 as a number.
    if (num(row?.expired) === 1) return 'expired';
    return num(row?.pending) === 1 ? 'pending' : 'nothing';
  }

  /**
   * The claim's statements. `due` is what `dueToClaim` saw: with `pending`, only the statement taking
   * pending jobs runs; a lease that ran out since is dealt with by the next claim, as if this one had run
   * earlier.
   */
  private async claimIn(
    options: { workerId: string; limit: number; leaseMs: number; types?: readonly string[]; lanes?: readonly JobLane[] },
    transaction: Transaction | undefined,
    due: 'expired' | 'pending',
  ): Promise<ClaimedJob[]> {
    const nowMs = this.nowMs();
    // Both multi-row statements skip rows another worker has locked, so concurrent claims never wait on
    // each other and can never deadlock; a skipped row is picked up by a later claim.
    const lock = this.dialect === 'postgres' ? 'FOR UPDATE SKIP LOCKED' : '';
    if (due === 'expired') {
      await this.raw.run(
        transaction,
        `UPDATE ${this.table}
         SET status = 'dead', locked_by = NULL, lease_until = NULL, last_error = $2, updated_at = $1
         WHERE id IN (
           SELECT id FROM ${this.table}
           WHERE status = 'running' AND lease_until <= $1 AND attempts >= max_attempts
           ${lock}
         )`,
        [nowMs, LEASE_EXPIRED_ERROR],
      );
    }
    if (options.limit === 0 || options.types?.length === 0 || options.lanes?.length === 0) return [];
    const take = (due: 'expired' | 'pending', limit: number) => {
      const params = new Params();
      const now = params.add(nowMs);
      const where = due === 'expired' ? `status = 'running' AND lease_until <= ${now} AND attempts < max_attempts` : `status = 'pending' AND run_at <= ${now}`;
      const filters = claimFilters(options, params);
      return this.raw.all(
        transaction,
        `UPDATE ${this.table}
         SET status = 'running', locked_by = ${params.add(options.workerId)}, lease_until = ${params.add(nowMs + options.leaseMs)}, attempts = attempts + 1, updated_at = ${now}
         WHERE id IN (
           SELECT id FROM ${this.table}
           WHERE ${where} ${filters}
           ORDER BY lane, turn, run_at, id
           LIMIT ${params.add(limit)}
           ${lock}
         )
         RETURNING id, type, payload, attempts, max_attempts, run_at, lease_until, lane, turn`,
        params.values,
        { keepPrepared: true },
      );
    };
    // Jobs of a worker that died first (rare), then pending ones. Apart, each statement walks one index in
    // claim order and stops at its limit, where one OR of both would sort every due job on every claim.
    const rows = due === 'expired' ? await take('expired', options.limit) : [];
    if (rows.length < options.limit) rows.push(...(await take('pending', options.limit - rows.length)));
    // RETURNING follows no ORDER BY; the port promises claim order.
    rows.sort((a, b) => num(a.lane) - num(b.lane) || num(a.turn) - num(b.turn) || num(a.run_at) - num(b.run_at) || (String(a.id) < String(b.id) ? -1 : 1));
    return rows.map((row) => ({
      id: String(row.id),
      type: String(row.type),
      payload: parsePayload(String(row.payload)),
      attempt: num(row.attempts),
      maxAttempts: num(row.max_attempts),
      leaseUntil: new Date(num(row.lease_until)).toISOString(),
      lane: LANE_OF_RANK[num(row.lane)] ?? 'interactive',
    }));
  }

  async complete(jobId: string, workerId: string): Promise<void> {
    await this.run(
      `UPDATE ${this.table}
       SET status = 'done', locked_by = NULL, lease_until = NULL, updated_at = $3
       WHERE id = $1 AND status = 'running' AND locked_by = $2`,
      [jobId, workerId, this.nowMs()],
    );
  }

  async fail(jobId: string, workerId: string, failure: JobFailure): Promise<'retrying' | 'dead' | 'lost'> {
    const nowMs = this.nowMs();
    const [held] = await this.select(
      `SELECT attempts, max_attempts FROM ${this.table} WHERE id = $1 AND status = 'running' AND locked_by = $2`,
      [jobId, workerId],
    );
    if (!held) return 'lost';
    const attempts = num(held.attempts);
    const counts = failure.countsAsAttempt !== false;
    const dead = counts && attempts >= num(held.max_attempts);
    const runAt = dead ? null : retryAtMs(failure, attempts, nowMs, this.options);
    // Guarded by the attempt count read above: if the lease changed hands in between, nothing is written.
    const updated = await this.writeReturning(
      `UPDATE ${this.table}
       SET status = $1, run_at = COALESCE($2, run_at), locked_by = NULL, lease_until = NULL,
           last_error = $3, updated_at = $4, attempts = $5
       WHERE id = $6 AND status = 'running' AND locked_by = $7 AND attempts = $8
       RETURNING id`,
      [dead ? 'dead' : 'pending', runAt, clipError(failure.error), nowMs, counts ? attempts : Math.max(0, attempts - 1), jobId, workerId, attempts],
    );
    if (updated.length === 0) return 'lost';
    return dead ? 'dead' : 'retrying';
  }

  async extendLease(jobId: string, workerId: string, leaseMs: number): Promise<boolean> {
    checkLeaseMs(leaseMs);
    const nowMs = this.nowMs();
    const updated = await this.writeReturning(
      `UPDATE ${this.table} SET lease_until = $1, updated_at = $2
       WHERE id = $3 AND status = 'running' AND locked_by = $4
       RETURNING id`,
      [nowMs + leaseMs, nowMs, jobId, workerId],
    );
    return updated.length > 0;
  }

  async releaseAll(workerId: string): Promise<void> {
    // A released job was never run to an outcome, so its claim does not count as an attempt.
    await this.run(
      `UPDATE ${this.table}
       SET status = 'pending', locked_by = NULL, lease_until = NULL,
           attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_at = $2
       WHERE status = 'running' AND locked_by = $1`,
      [workerId, this.nowMs()],
    );
  }

  async expireLeases(workerId: string): Promise<void> {
    await this.run(
      `UPDATE ${this.table} SET lease_until = $2, updated_at = $2
       WHERE status = 'running' AND locked_by = $1 AND lease_until > $2`,
      [workerId, this.nowMs()],
    );
  }

  async nextRunAt(): Promise<string | undefined> {
    const [row] = await this.select(`SELECT MIN(run_at) AS next FROM ${this.table} WHERE status = 'pending'`, []);
    return row?.next === null || row?.next === undefined ? undefined : new Date(num(row.next)).toISOString();
  }

  async stats(): Promise<QueueStats> {
    const rows = await this.select(`SELECT status, COUNT(*) AS n FROM ${this.table} GROUP BY status`, []);
    const stats: QueueStats = { pending: 0, running: 0, dead: 0, done: 0 };
    for (const row of rows) {
      const status = String(row.status) as keyof QueueStats;
      if (status in stats) stats[status] = num(row.n);
    }
    return stats;
  }

  async prune(before: string, limit: number): Promise<number> {
    checkLimit(limit);
    const rows = await this.writeReturning(
      `DELETE FROM ${this.table} WHERE id IN (
         SELECT id FROM ${this.table} WHERE status IN ('done', 'dead') AND updated_at < $1 ORDER BY updated_at, id LIMIT $2)
       RETURNING id`,
      [Date.parse(before), limit],
    );
    return rows.length;
  }

  async dead(limit = 100): Promise<{ id: string; type: string; payload: JsonValue; attempts: number; lastError?: string }[]> {
    checkLimit(limit);
    const rows = await this.select(
      `SELECT id, type, payload, attempts, last_error FROM ${this.table} WHERE status = 'dead' ORDER BY id LIMIT $1`,
      [limit],
    );
    return rows.map((row) => {
      const entry: { id: string; type: string; payload: JsonValue; attempts: number; lastError?: string } = {
        id: String(row.id),
        type: String(row.type),
        payload: parsePayload(String(row.payload)),
        attempts: num(row.attempts),
      };
      if (row.last_error !== null && row.last_error !== undefined) entry.lastError = String(row.last_error);
      return entry;
    });
  }

  private nowMs(): number {
    return this.options.clock.now().getTime();
  }

  /** A read, outside any transaction; `$n` placeholders for `params`. */
  private async select(sql: string, params: unknown[]): Promise<Row[]> {
    return this.raw.all(undefined, sql, params, { keepPrepared: true });
  }

  /** A write statement whose rows come back (RETURNING), as a turn of the writer (see the class comment). */
  private async writeReturning(sql: string, params: unknown[]): Promise<Row[]> {
    return runStatement(this.sequelize, (transaction) => this.raw.all(transaction, sql, params, { keepPrepared: true }));
  }

  /** A write statement, as a turn of the writer (see the class comment). */
  private async run(sql: string, params: unknown[]): Promise<void> {
    await runStatement(this.sequelize, (transaction) => this.raw.run(transaction, sql, params));
  }
}

/** A claim's `types` and `lanes` as SQL conditions, their values added to `params`. */
function claimFilters(options: { types?: readonly string[]; lanes?: readonly JobLane[] }, params: Params): string {
  const types = options.types === undefined ? '' : `AND type IN (${params.list(options.types)})`;
  const lanes = options.lanes === undefined ? '' : `AND lane IN (${params.list(options.lanes.map((lane) => LANE_RANK[lane]))})`;
  return `${types} ${lanes}`;
}

async function migrate(context: QueueMigrationContext & { schema: string | undefined }): Promise<void> {
  const { sequelize, dialect, schema } = context;
  const run = async () => {
    if (schema !== undefined) await sequelize.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`, { logging: false });
    const umzug = new Umzug<QueueMigrationContext>({
      migrations: queueMigrations,
      context,
      storage: new SequelizeStorage({
        sequelize,
        // Its own meta table and model name, so it never meets the storage adapter's migrations.
        modelName: `carebridge_queue_migrations_${schema ?? 'default'}`,
        tableName: 'queue_migrations',
        ...(schema === undefined ? {} : { schema }),
      }),
      logger: undefined,
    });
    await umzug.up();
  };
  // The lock below needs a second pooled connection for the migrations; with a pool of one, go without.
  const poolMax = (sequelize as unknown as { options: { pool?: { max?: number } } }).options.pool?.max ?? 5;
  if (dialect !== 'postgres' || poolMax < 2) return run();
  // The transaction only holds the advisory lock; the migrations run on other pooled connections while
  // it waits, and the lock is released when it commits.
  await sequelize.transaction(async (transaction) => {
    await sequelize.query('SELECT pg_advisory_xact_lock(:key)', { replacements: { key: MIGRATION_LOCK_KEY }, transaction, logging: false });
    await run();
  });
}
