import type { Sequelize } from 'sequelize';
import type { ApiHandler } from '../../core/api/handler.js';
import type { CoreDeps } from '../../core/deps.js';
import type { BlobPort, ClockPort, IdsPort } from '../../core/ports/index.js';
import type { S3Connection } from '../../adapters/blob/s3/s3.blob.js';
import type { Logger } from 'pino';
import type { Ports } from '../../adapters/container/tokens.js';
import { createRuntime, type RuntimeOptions } from '../../runtime/runtime.js';
import type { Tunables } from '../../runtime/settings-table.js';

/**
 * The limits and work settings (`Tunables`: `rateLimits`, `failedAuthPerMinute`, `renders`, `ccdaMaxBytes`,
 * `jobConcurrency`, `ccdaWorkers`, `searchCacheMb`, `retentionDays`, `webhooks`) are the service's settings
 * table's (runtime/settings-table.ts), with its documentation and defaults.
 */
export interface CarebridgeOptions extends Omit<Tunables, 'webhooks'> {
  /**
   * Where the API is reachable from outside, mount prefix included (`https://app.example.com/api`): the
   * base of every URL the service hands out (CSV upload, result CSV, document downloads).
   */
  publicUrl: string;
  /**
   * The database: a URL (`postgres://...`, `sqlite:<file>`, `:memory:`) or a Sequelize instance the
   * application already has (SQLite or PostgreSQL; carebridge adds its tables and leaves closing it to
   * you). SQLite in `dataDir` when absent.
   */
  database?: string | Sequelize;
  /** PostgreSQL: the schema carebridge works in (created when missing). */
  databaseSchema?: string;
  /** The default SQLite file and the generated URL signing secret live here. Default `./data`. */
  dataDir?: string;
  /** Where uploaded CSVs, result files and documents are kept. Default `<dataDir>/blobs`. */
  blobDir?: string;
  /** Or any blob storage (e.g. in memory for tests). Wins over `blobDir` and `blobUrl`. */
  blob?: BlobPort;
  /**
   * `s3://bucket/prefix`: blobs in an S3 (or S3-compatible) bucket, which every instance sharing the
   * database can reach. Wins over `blobDir`; how to reach the bucket is `s3`.
   */
  blobUrl?: string;
  /** Endpoint, region, path-style addressing and credentials for `blobUrl`; the AWS SDK's defaults otherwise. */
  s3?: S3Connection;
  /** Secret of the pre-signed URLs; generated once and kept in `dataDir` when absent. */
  urlSigningSecret?: string;
  /** Webhook delivery (see its settings in runtime/settings-table.ts), and a sender in place of the HTTP one. */
  webhooks?: RuntimeOptions['webhooks'];
  /** Run queued work (imports, document queries) and webhook deliveries in the background. Default true. */
  background?: boolean;
  /** Poll interval of the background work, ms. Default 500. */
  pollMs?: number;
  /** Background work and unexpected errors are logged here (ids and counts, never PHI). */
  logger?: Logger;
  /** A stepped clock in tests; the system clock otherwise. */
  clock?: ClockPort;
  /** Sequential ids in tests; UUID v7 otherwise. */
  ids?: IdsPort;
  /**
   * Your own implementation of any port in place of the built-in adapter, by name: `hie`, `pharmacy`, `lab`
   * (the networks), `search`, `renderer`, `ccda`, `blob`, `webhookSender`, `storage`, `queue`, `clock`,
   * `ids`, `secrets`, `urlSigner`. The built-in one is then never created; you close what you pass. An
   * implementation proves itself by passing its port's contract suite (spec/ports).
   */
  ports?: Partial<Ports>;
}

export interface Carebridge {
  /** The ports the core runs on, for use cases called directly (import them from `carebridge`). */
  readonly deps: CoreDeps;
  /** The framework-agnostic API handler: mount it with `carebridge/koa`, `createNodeListener` or your own few lines. */
  readonly handler: ApiHandler;
  /** Operator call: a new account and its API key (shown once; only its hash is stored). */
  createAccount(name: string): Promise<{ accountId: string; apiKey: string }>;
  /** Runs background work until nothing is due now (tests and scripts; the background loop does it otherwise). */
  settle(): Promise<void>;
  /** Throws when the database does not answer (for health checks). */
  checkHealth(): Promise<void>;
  /** The SQL dialect in use: `sqlite` or `postgres`. */
  readonly database: string;
  /** Stops the background work (jobs in flight finish or are handed back), closes what carebridge opened. Idempotent. */
  close(): Promise<void>;
}

/**
 * Carebridge inside an existing Node backend (embedding): the runtime's SQL profile (SQLite or PostgreSQL
 * through Sequelize, the durable queue in the same database, blobs on disk, HMAC-signed URLs, HTTP
 * webhooks, the sandbox HIE network), without an HTTP server of its own. Mount `handler` where you like;
 * `publicUrl` must say where.
 */
export async function createCarebridge(options: CarebridgeOptions): Promise<Carebridge> {
  const runtime = await createRuntime(embeddedRuntimeOptions(options));
  if (options.background ?? true) runtime.background.start();
  return {
    deps: runtime.deps,
    handler: runtime.handler,
    database: runtime.database,
    checkHealth: () => runtime.checkHealth(),
    createAccount: (name) => runtime.createAccount(name),
    settle: () => runtime.settle(),
    close: () => runtime.close(),
  };
}

/**
 * The runtime's options from the embedder's: the SQL profile, C-CDA in worker threads, and every other
 * option as given. No default is stated here: the runtime takes them from the settings table.
 */
export function embeddedRuntimeOptions(options: CarebridgeOptions): RuntimeOptions {
  const { database, databaseSchema, dataDir, blobDir, blobUrl, s3, background: _background, ...rest } = options;
  return {
    ...rest,
    profile: { kind: 'sql', dataDir, database, databaseSchema: databaseSchema || undefined, blobDir: blobDir || undefined, blobUrl, s3 },
    ccda: 'pooled',
  };
}
