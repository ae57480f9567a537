import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Container } from 'inversify';
import type { Logger } from 'pino';
import type { Sequelize } from 'sequelize';
import { createAccount } from '../../core/accounts.js';
import { createApiHandler, type ApiHandler } from '../../core/api/handler.js';
import type { CoreConfig, CoreDeps } from '../../core/deps.js';
import { coreJobHandlers, resumeInterruptedWork } from '../../core/jobs.js';
import type { BlobPort, ClockPort, IdsPort, WebhookSenderPort } from '../../core/ports/index.js';
import { deliverDueMessages, type DeliveryReport, type EndpointPauses } from '../../core/webhooks/deliver.js';
import { DEFAULT_RETENTION_DAYS, pruneFinishedWork, type RetentionReport } from '../../core/retention.js';
import { resolveCoreDeps } from '../../adapters/container/core-deps.js';
import { documentsModule } from '../../adapters/container/documents.module.js';
import { infraModule } from '../../adapters/container/infra.module.js';
import { queueModule } from '../../adapters/container/queue.module.js';
import { storageModule } from '../../adapters/container/storage.module.js';
import { TOKENS } from '../../adapters/container/tokens.js';
import { webhookModule } from '../../adapters/container/webhook.module.js';
import { QueueRunner } from '../../adapters/queue/runner.js';
import type { S3Connection } from '../../adapters/blob/s3/s3.blob.js';
import { openDatabase } from '../koa/database.js';
import { blobStoreFor } from './blob-store.js';
import { joinInstances } from './instances.js';
import { urlSigningSecret } from '../koa/settings.js';
import { describeError } from '../error-facts.js';
import { noteAccount } from '../koa/request-facts.js';
import { sandboxDocumentsDir } from '../sandbox-documents.js';

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

/** Messages taken per delivery pass: enough to keep 16 requests in flight on each of many endpoints. */
const DELIVERY_BATCH = 500;

function searchCacheOption(megabytes: number | undefined): { searchCacheBytes?: number } {
  return megabytes === undefined ? {} : { searchCacheBytes: Math.round(megabytes * 1024 * 1024) };
}


/** How often the background prunes delivered webhooks and finished jobs past their retention. */
const RETENTION_SWEEP_MS = 10 * 60_000;

/** Prunes past-retention history now and then; one sweep at a time, never one that holds the writer long. */
class RetentionSweeper {
  private timers: NodeJS.Timeout[] = [];
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly sweep: () => Promise<RetentionReport>,
    private readonly logger: Logger | undefined,
  ) {}

  start(): void {
    if (this.timers.length > 0) return;
    this.stopped = false;
    const tick = () => {
      this.running = this.running.then(async () => {
        if (this.stopped) return;
        try {
          const report = await this.sweep();
          if (report.messages + report.jobs > 0) this.logger?.info(report, 'pruned delivered webhooks and finished jobs past retention');
        } catch (error) {
          this.logger?.warn({ err: describeError(error) }, 'retention sweep failed; will retry');
        }
      });
    };
    // The first sweep soon after start, not ten minutes later: a restarted service catches up at once.
    this.timers = [setTimeout(tick, 5_000), setInterval(tick, RETENTION_SWEEP_MS)];
    for (const timer of this.timers) timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
    await this.running;
  }
}

/** One webhook delivery pass at a time (the outbox does not claim messages), in the background or on demand. */
class DeliveryLoop {
  private tail: Promise<unknown> = Promise.resolve();
  private loop: Promise<void> | undefined;
  private stopped = true;
  private wakeUp: (() => void) | undefined;

  constructor(
    private readonly deliver: () => Promise<DeliveryReport>,
    private readonly pollMs: number,
    private readonly logger: Logger | undefined,
  ) {}

  pass(): Promise<DeliveryReport> {
    const result = this.tail.then(() => this.deliver());
    this.tail = result.catch(() => undefined);
    return result;
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = (async () => {
      while (!this.stopped) {
        let attempted = 0;
        try {
          const report = await this.pass();
          attempted = report.delivered + report.failed + report.parked;
        } catch (error) {
          this.logger?.warn({ err: describeError(error) }, 'webhook delivery pass failed; will retry');
        }
        if (attempted === 0 && !this.stopped) {
          await new Promise<void>((done) => {
            const timer = setTimeout(done, this.pollMs);
            this.wakeUp = () => {
              clearTimeout(timer);
              done();
            };
          });
          this.wakeUp = undefined;
        }
      }
    })();
  }

  wake(): void {
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loop;
    this.loop = undefined;
    await this.tail;
  }
}

/**
 * Carebridge inside an existing Node backend (embedding): the same adapters as the standalone
 * service (SQLite or PostgreSQL through Sequelize, the durable queue in the same database, blobs on disk,
 * HMAC-signed URLs, HTTP webhooks, the sandbox HIE network), without an HTTP server of its own. Mount
 * `handler` where you like; `publicUrl` must say where.
 */
/** See `CarebridgeOptions.jobConcurrency`. */
const DEFAULT_JOB_CONCURRENCY = 4;

export async function createCarebridge(options: CarebridgeOptions): Promise<Carebridge> {
  const dataDir = options.dataDir ?? './data';
  const background = options.background ?? true;
  const pollMs = options.pollMs ?? 500;
  const jobConcurrency = options.jobConcurrency ?? DEFAULT_JOB_CONCURRENCY;
  const logger = options.logger;
  const givenSequelize = typeof options.database === 'object' ? options.database : undefined;
  const sequelize =
    givenSequelize ??
    (await openDatabase({
      dataDir,
      ...(typeof options.database === 'string' ? { databaseUrl: options.database } : {}),
      ...(options.databaseSchema ? { databaseSchema: options.databaseSchema } : {}),
    }));

  const container = new Container();
  let instances: { leave(): Promise<void> } | undefined;
  try {
    const blobStore = blobStoreFor(options, dataDir);
    const urlSecret = await urlSigningSecret(dataDir, options.urlSigningSecret);
    const config: CoreConfig = { publicUrl: options.publicUrl.replace(/\/+$/, ''), webhookAllowPrivate: options.webhooks?.allowPrivate ?? false };
    container.bind(TOKENS.config).toConstantValue(config);
    container.load(
      infraModule({
        urlSecret,
        blob: blobStore.module,
        ...(options.clock ? { clock: options.clock } : {}),
        ...(options.ids ? { ids: options.ids } : {}),
      }),
      storageModule({ kind: 'sequelize', sequelize }),
      queueModule({ kind: 'sql', sequelize, ...(options.databaseSchema ? { schema: options.databaseSchema } : {}) }),
      documentsModule({
        sandboxDocumentsDir: sandboxDocumentsDir(),
        ccda: { kind: 'pooled', ...(options.ccdaWorkers !== undefined ? { maxThreads: options.ccdaWorkers } : {}) },
        ...searchCacheOption(options.searchCacheMb),
      }),
    );
    if (options.webhooks?.sender) container.bind(TOKENS.webhookSender).toConstantValue(options.webhooks.sender);
    else container.load(webhookModule(logger ? { logger: logger.child({ component: 'webhooks' }) } : {}));
    const deps = await resolveCoreDeps(container);

    // Unique per process: instances sharing one database tell their job leases and outbox claims apart by it.
    const workerId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    // Before any work is taken: an instance whose settings disagree with the running ones must not start.
    instances = await joinInstances(sequelize, {
      ...(options.databaseSchema ? { schema: options.databaseSchema } : {}),
      identity: { instanceId: workerId, publicUrl: config.publicUrl, urlSigningSecret: urlSecret, blobLocation: blobStore.location },
      ...(logger ? { logger: logger.child({ component: 'instances' }) } : {}),
    });
    const registration = instances;
    const runner = new QueueRunner({
      queue: deps.queue,
      clock: deps.clock,
      handlers: coreJobHandlers(deps),
      workerId,
      concurrency: jobConcurrency,
      // Half the slots at most for background work: more of it only queues on the database's one writer
      // (the journey benchmark finished no sooner with 7 than with 2) while imports and the API wait.
      backgroundConcurrency: Math.max(1, Math.floor(jobConcurrency / 2)),
      // Short enough that a restarted process takes over a killed one's jobs within seconds; the runner renews
      // a live lease every third of it, so long jobs keep theirs.
      leaseMs: 15_000,
      pollMs,
      // A finished job (an import's completion) may have stored webhooks: deliver them now, not at the next poll.
      onJobFinished: () => {
        if (background) delivery.wake();
      },
      ...(logger ? { logger: logger.child({ component: 'queue' }) } : {}),
    });
    // Kept across passes: a receiver's Retry-After pause also covers the messages created after it asked.
    const endpointPauses: EndpointPauses = new Map();
    const endpointConcurrency = options.webhooks?.endpointConcurrency;
    const ratePerSecond = options.webhooks?.rateLimitPerSecond;
    const rateLimit = ratePerSecond === undefined ? undefined : { perSecond: ratePerSecond, buckets: new Map<string, { tokens: number; atMs: number }>() };
    const delivery = new DeliveryLoop(
      () =>
        deliverDueMessages(
          {
            ...deps,
            random: Math.random,
            endpointPauses,
            workerId,
            ...(endpointConcurrency !== undefined ? { endpointConcurrency } : {}),
            ...(rateLimit ? { rateLimit } : {}),
            ...(options.webhooks?.leaseMs !== undefined ? { leaseMs: options.webhooks.leaseMs } : {}),
          },
          { limit: DELIVERY_BATCH },
        ),
      pollMs,
      logger?.child({ component: 'webhooks' }),
    );
    const retention = new RetentionSweeper(
      () =>
        pruneFinishedWork(deps, {
          days: options.retentionDays ?? DEFAULT_RETENTION_DAYS,
          pause: () => new Promise<void>((done) => setImmediate(done)),
        }),
      logger?.child({ component: 'retention' }),
    );
    const core = createApiHandler(deps, {
      // The account a request authenticated as is noted for its access log (ids only).
      onAuthenticated: noteAccount,
      onUnexpectedError: (error, request) =>
        logger?.error({ err: describeError(error), requestId: request.requestId, method: request.method, route: core.routeOf(request) ?? null }, 'unexpected error'),
    });
    // A write may have queued a job or a webhook: look now rather than at the next poll.
    const handler: ApiHandler = Object.assign(
      async (request: Parameters<ApiHandler>[0]) => {
        const response = await core(request);
        if (request.method.toUpperCase() !== 'GET' && background) {
          runner.wake();
          delivery.wake();
        }
        return response;
      },
      { routes: core.routes, routeOf: core.routeOf },
    );

    const { resumed } = await resumeInterruptedWork(deps);
    if (resumed > 0) logger?.info({ resumed }, 'resumed bulk imports interrupted by the last stop');
    if (background) {
      runner.start();
      delivery.start();
      retention.start();
    }

    let closing: Promise<void> | undefined;
    return {
      deps,
      handler,
      database: sequelize.getDialect(),
      async checkHealth() {
        await sequelize.authenticate();
      },
      async createAccount(name) {
        const { account, apiKey } = await createAccount(deps, { name });
        return { accountId: account.id, apiKey };
      },
      async settle() {
        for (let round = 0; round < 1_000; round++) {
          const ran = await runner.drain();
          const report = await delivery.pass();
          if (ran === 0 && report.delivered + report.failed + report.parked === 0) return;
        }
      },
      close() {
        closing ??= (async () => {
          await retention.stop();
          await delivery.stop();
          await runner.stop();
          await registration.leave();
          await container.unbindAllAsync();
          if (!givenSequelize) await sequelize.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    await instances?.leave();
    await container.unbindAllAsync().catch(() => undefined);
    if (!givenSequelize) await sequelize.close().catch(() => undefined);
    throw error;
  }
}
