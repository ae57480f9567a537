import type { RateLimits } from '../../core/api/rate-limit.js';
import type { Sequelize } from 'sequelize';
import type { ApiHandler } from '../../core/api/handler.js';
import type { CoreDeps } from '../../core/deps.js';
import type { BlobPort, ClockPort, IdsPort, WebhookSenderPort } from '../../core/ports/index.js';
import type { S3Connection } from '../../adapters/blob/s3/s3.blob.js';
import type { Logger } from 'pino';
import type { Ports } from '../../adapters/container/tokens.js';
import { createRuntime } from '../../runtime/runtime.js';
import { DEFAULT_JOB_CONCURRENCY } from '../../runtime/settings-table.js';

export interface CarebridgeOptions {
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
  webhooks?: {
    /** Accept webhook URLs on loopback/private networks (development, tests). Default false. */
    allowPrivate?: boolean;
    /** Replaces the HTTP sender (HMAC-signed, with timeouts). */
    sender?: WebhookSenderPort;
    /** Requests in flight at once per webhook endpoint. Default 16. */
    endpointConcurrency?: number;
    /** At most this many messages a second to each endpoint. Default: no limit. */
    rateLimitPerSecond?: number;
    /**
     * An endpoint whose every attempt failed this long is disabled and the account told (a
     * `webhook.endpoint-disabled` message on its other endpoints). Default 5 days; 0 never disables.
     */
    disableAfterMs?: number;
    /**
     * How long a delivery pass's claim on its messages lasts; an instance that dies holds its messages
     * this long. Keep it above the longest pass (about 500 / endpointConcurrency x 4 s). Default 5 minutes.
     */
    leaseMs?: number;
  };
  /**
   * Threads converting C-CDA documents, off the thread that serves requests. Default one per core but the
   * one that serves requests (at least 1).
   */
  ccdaWorkers?: number;
  /**
   * Requests per minute per account by route class (429 RATE_LIMITED with Retry-After past them), e.g.
   * `DEFAULT_RATE_LIMITS`. None when absent: the application embedding carebridge may have its own.
   */
  rateLimits?: RateLimits;
  /**
   * Wrong API keys allowed per client address and minute (429 TOO_MANY_FAILED_ATTEMPTS past them, for any
   * key, until Retry-After), e.g. `DEFAULT_FAILED_AUTH_PER_MINUTE`. The address is the socket's peer as
   * `carebridge/koa` and `createNodeListener` see it; behind a proxy that is the proxy, so every client
   * shares one count. None when absent, like `rateLimits`.
   */
  failedAuthPerMinute?: number;
  /**
   * Renders (consolidated data and C-CDA documents as HTML or PDF) run at once, every account together,
   * and how many more may wait for a slot; one more request answers 503 BUSY with Retry-After. Default 2
   * and 8: renders share the thread that serves requests.
   */
  renders?: { concurrency?: number; queue?: number };
  /**
   * Days delivered webhook messages and finished queue jobs are kept before they are pruned (in small
   * batches, in the background). Default 7.
   */
  retentionDays?: number;
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
   * Memory for patients' search indexes, in MB (estimated). Patients searched least recently are dropped
   * beyond it and rebuilt from storage on their next search. Default 64.
   */
  searchCacheMb?: number;
  /**
   * Queued jobs run at once (imports, document queries, conversions), default 4. Background work (the
   * document queries of an import) takes at most half of them, so imports and queries a person started
   * always find a slot.
   */
  jobConcurrency?: number;
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
  const runtime = await createRuntime({
    profile: {
      kind: 'sql',
      dataDir: options.dataDir ?? './data',
      ...(options.database !== undefined ? { database: options.database } : {}),
      ...(options.databaseSchema ? { databaseSchema: options.databaseSchema } : {}),
      ...(options.blobDir ? { blobDir: options.blobDir } : {}),
      ...(options.blobUrl !== undefined ? { blobUrl: options.blobUrl, ...(options.s3 ? { s3: options.s3 } : {}) } : {}),
    },
    publicUrl: options.publicUrl,
    ...(options.blob ? { blob: options.blob } : {}),
    ...(options.urlSigningSecret !== undefined ? { urlSigningSecret: options.urlSigningSecret } : {}),
    webhooks: { allowPrivate: options.webhooks?.allowPrivate ?? false, ...options.webhooks },
    ccda: { kind: 'pooled', ...(options.ccdaWorkers !== undefined ? { maxThreads: options.ccdaWorkers } : {}) },
    ...(options.rateLimits ? { rateLimits: options.rateLimits } : {}),
    ...(options.failedAuthPerMinute ? { failedAuthPerMinute: options.failedAuthPerMinute } : {}),
    ...(options.renders ? { renders: options.renders } : {}),
    jobConcurrency: options.jobConcurrency ?? DEFAULT_JOB_CONCURRENCY,
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
    ...(options.retentionDays !== undefined ? { retentionDays: options.retentionDays } : {}),
    ...(options.searchCacheMb !== undefined ? { searchCacheBytes: Math.round(options.searchCacheMb * 1024 * 1024) } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.ids ? { ids: options.ids } : {}),
    ...(options.ports ? { ports: options.ports } : {}),
  });
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
