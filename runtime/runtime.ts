import { classifyStorageError } from '../adapters/storage/storage-full.js';
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Container } from 'inversify';
import type { Logger } from 'pino';
import type { Sequelize } from 'sequelize';
import { createAccount } from '../core/accounts.js';
import { createApiHandler, type ApiHandler } from '../core/api/handler.js';
import type { CoreConfig, CoreDeps } from '../core/deps.js';
import { describeError } from '../core/error-facts.js';
import { NotedPauses } from '../core/bulk/pause.js';
import { coreJobHandlers, resumeInterruptedWork } from '../core/jobs.js';
import { RenderSlots } from '../core/documents/render-slots.js';
import type { BlobPort, ClockPort, IdsPort, StoragePort, WebhookSenderPort } from '../core/ports/index.js';
import { pruneFinishedWork } from '../core/retention.js';
import { WebhookDispatcher } from '../core/webhooks/dispatcher.js';
import type { EndpointPauses } from '../core/webhooks/throttle.js';
import { replacePorts, resolveCoreDeps } from '../adapters/container/core-deps.js';
import { documentsModule } from '../adapters/container/documents.module.js';
import type { S3Connection } from '../adapters/blob/s3/s3.blob.js';
import { infraModule, type BlobModuleOptions } from '../adapters/container/infra.module.js';
import { queueModule } from '../adapters/container/queue.module.js';
import { storageModule } from '../adapters/container/storage.module.js';
import { TOKENS, type Ports } from '../adapters/container/tokens.js';
import { webhookModule } from '../adapters/container/webhook.module.js';
import { QueueRunner } from '../adapters/queue/runner.js';
import { noteAccount, noteRoute } from '../http/request-facts.js';
import { DeliveryLoop, RetentionSweeper } from './background.js';
import { blobStoreFor } from './blob-store.js';
import { joinInstances, newInstanceId } from './instances.js';
import { openDatabase } from './database.js';
import { sandboxDocumentsDir } from './sandbox-documents.js';
import { urlSigningSecret } from './settings.js';
import { resolveTunables, type ResolvedTunables, type Tunables } from './settings-table.js';
import { PatientSnapshots } from '../core/documents/patient-snapshots.js';

/**
 * Where the data lives. `memory`: every adapter in memory, nothing persisted (the sandbox, tests).
 * `sql`: SQLite or PostgreSQL through Sequelize, the durable queue in the same database, blobs on disk.
 */
export type RuntimeProfile =
  | {
      kind: 'memory';
      /** Another storage adapter in place of the in-memory one (adapter trials). The runtime closes it. */
      storage?: StoragePort;
    }
  | {
      kind: 'sql';
      /**
       * A URL (`postgres://...`, `sqlite:<file>`, `:memory:`) or a Sequelize instance the application already
       * has (carebridge adds its tables and leaves closing it to the application). SQLite in `dataDir` when absent.
       */
      database?: string | Sequelize;
      /** PostgreSQL: the schema carebridge works in (created when missing). */
      databaseSchema?: string;
      /** The default SQLite file, the blobs and the generated URL signing secret live here. Default `./data`. */
      dataDir?: string;
      /** Where uploaded CSVs, result files and documents are kept. Default `<dataDir>/blobs`. */
      blobDir?: string;
      /** `s3://bucket/prefix`: blobs in an S3 (or S3-compatible) bucket every instance can reach. Wins over `blobDir`. */
      blobUrl?: string;
      /** Endpoint, region, path-style addressing and credentials for `blobUrl`. */
      s3?: S3Connection;
      /**
       * Register as an instance of the database and refuse to start when the running ones disagree on the
       * public URL, the URL signing secret or the blob location. Default true; the CLI's account commands,
       * which take no work, do not register.
       */
      registerInstance?: boolean;
    };

/**
 * How the sandbox differs from the settings' defaults: it serves one developer, so one job at a time, and
 * their webhook receiver is usually on their own machine.
 */
export const MEMORY_PROFILE_DEFAULTS = { jobConcurrency: 1, webhooks: { allowPrivate: true } } as const satisfies Tunables;

/** The limits and work settings a runtime runs with: the options given, else its profile's defaults, else the table's. */
export function runtimeTunables(options: RuntimeOptions): ResolvedTunables {
  return resolveTunables(options, options.profile.kind === 'memory' ? MEMORY_PROFILE_DEFAULTS : {});
}

/**
 * The limits and work settings (`Tunables`: rate limits, renders, conversion limits, job concurrency,
 * search cache, retention, webhook delivery) are declared with their documentation and defaults in
 * runtime/settings-table.ts; the memory profile's own defaults are `MEMORY_PROFILE_DEFAULTS`.
 */
export interface RuntimeOptions extends Omit<Tunables, 'webhooks'> {
  profile: RuntimeProfile;
  /** Base of every URL the service hands out, mount prefix included. */
  publicUrl: string;
  /** Any blob storage, in place of the profile's (memory, or files in `blobDir`). */
  blob?: BlobPort;
  /** Secret of the pre-signed URLs. Memory: random per runtime. SQL: generated once and kept in `dataDir`. */
  urlSigningSecret?: string;
  /** Webhook delivery (see `TUNABLES.webhooks`), and a sender in place of the HTTP one (HMAC-signed, with timeouts). */
  webhooks?: Tunables['webhooks'] & { sender?: WebhookSenderPort };
  /**
   * Where C-CDA documents are converted: on the calling thread, or in a pool of `ccdaWorkers` threads.
   * Default: in process in memory (a sandbox serves one developer and threads would each load the converter
   * again), a pool in SQL.
   */
  ccda?: 'in-process' | 'pooled';
  /** The C-CDA documents the sandbox HIE network serves. Default `SANDBOX_DOCUMENTS_DIR`, else the repository's. */
  sandboxDocumentsDir?: string;
  /** Poll interval of the background work, ms. Default 500 (50 in memory). */
  pollMs?: number;
  /**
   * Re-queue bulk imports a previous stop interrupted, at creation, and every minute while the background
   * runs those whose job died without ending them. Default true in SQL.
   */
  resumeInterruptedWork?: boolean;
  /** Background work and unexpected errors are logged here (ids and counts, never PHI). */
  logger?: Logger;
  /** A stepped clock in tests; the system clock otherwise. */
  clock?: ClockPort;
  /** Sequential ids in tests; UUID v7 otherwise. */
  ids?: IdsPort;
  /**
   * Your own implementation of any port, in place of the built-in adapter: the HIE, pharmacy or laboratory
   * network, the search index, the renderer, the C-CDA converter, the blob store, the webhook sender, the
   * storage or queue (they must pass the port's contract suite in spec/ports). The built-in adapter of a
   * port given here is never created; you close what you pass.
   */
  ports?: Partial<Ports>;
}

/** Background work of one process: the job runner, webhook deliveries, retention sweeps. */
export interface RuntimeBackground {
  /** Starts the loops. Idempotent. */
  start(): void;
  /** Stops them: jobs in flight finish or hand their leases back. Idempotent. */
  stop(): Promise<void>;
  readonly running: boolean;
}

/** The service put together once: what every host (embedded, memory, Koa service, CLI) runs on. */
export interface Runtime {
  /** The ports the core runs on. */
  readonly deps: CoreDeps;
  /** The framework-agnostic API handler; writes wake the background work when it runs. */
  readonly handler: ApiHandler;
  readonly background: RuntimeBackground;
  /** `memory`, `sqlite` or `postgres`. */
  readonly database: string;
  /** Operator call: a new account and its API key (shown once; only its hash is stored). */
  createAccount(name: string): Promise<{ accountId: string; apiKey: string }>;
  /**
   * Runs background work until nothing is due at the current time: queued jobs, then webhook deliveries.
   * Never advances the clock (tests step it). The background loop does the same on its own.
   */
  settle(): Promise<void>;
  /** Throws when the database does not answer (health checks). */
  checkHealth(): Promise<void>;
  /** Stops the background work and closes what the runtime opened. Idempotent. */
  close(): Promise<void>;
}

/** How often a running service looks for bulk imports whose job died without ending them. */
const RESUME_SWEEP_MS = 60_000;
/** A running import writes every few seconds; one unchanged this long may have lost its job. */
const RESUME_AFTER_QUIET_MS = 5 * 60_000;

/** Messages one webhook delivery claim takes at most (a poll's, an endpoint's refill): enough to keep 16 requests in flight on each of many endpoints. */
const DELIVERY_BATCH = 500;

/**
 * Creates the runtime of a profile: the container of adapters, the core's dependencies, the API handler,
 * the job runner, webhook delivery and retention. Background work starts only when a host says
 * (`background.start()`), so tests and the CLI run nothing behind their back.
 */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const profile = options.profile;
  const memory = profile.kind === 'memory';
  const logger = options.logger;
  const tuning = runtimeTunables(options);
  const dataDir = profile.kind === 'sql' ? (profile.dataDir ?? './data') : undefined;
  // An empty schema name or blob folder means none, as an unset one does.
  const databaseSchema = profile.kind === 'sql' ? profile.databaseSchema || undefined : undefined;
  const givenSequelize = profile.kind === 'sql' && typeof profile.database === 'object' ? profile.database : undefined;
  const sequelize =
    profile.kind === 'memory'
      ? undefined
      : (givenSequelize ??
        (await openDatabase({
          dataDir: dataDir!,
          databaseUrl: typeof profile.database === 'string' ? profile.database : undefined,
          databaseSchema,
        })));
  const ownsSequelize = sequelize !== undefined && givenSequelize === undefined;

  const container = new Container();
  let instances: { leave(): Promise<void> } | undefined;
  try {
    const config: CoreConfig = {
      publicUrl: options.publicUrl.replace(/\/+$/, ''),
      webhookAllowPrivate: tuning.webhooks.allowPrivate,
      maxConversionBytes: tuning.ccdaMaxBytes,
    };
    container.bind(TOKENS.config).toConstantValue(config);
    const blobStore: { module: BlobModuleOptions; location: string | undefined } =
      profile.kind === 'memory'
        ? { module: options.blob ? { kind: 'instance', blob: options.blob } : { kind: 'memory' }, location: undefined }
        : blobStoreFor(
            { blob: options.blob, blobUrl: profile.blobUrl, s3: profile.s3, blobDir: profile.blobDir || undefined },
            dataDir!,
          );
    const urlSecret = options.urlSigningSecret ?? (dataDir === undefined ? randomBytes(32).toString('hex') : await urlSigningSecret(dataDir, undefined));
    container.load(
      infraModule({ urlSecret, blob: blobStore.module, clock: options.clock, ids: options.ids }),
      profile.kind === 'memory'
        ? storageModule(profile.storage ? { kind: 'instance', storage: profile.storage } : { kind: 'memory' })
        : storageModule({ kind: 'sequelize', sequelize: sequelize! }),
      profile.kind === 'memory'
        ? queueModule({ kind: 'memory' })
        : queueModule({ kind: 'sql', sequelize: sequelize!, schema: databaseSchema }),
      documentsModule({
        sandboxDocumentsDir: options.sandboxDocumentsDir ?? sandboxDocumentsDir(),
        ccda: (options.ccda ?? (memory ? 'in-process' : 'pooled')) === 'pooled' ? { kind: 'pooled', maxThreads: tuning.ccdaWorkers } : { kind: 'in-process' },
        searchCacheBytes: Math.round(tuning.searchCacheMb * 1024 * 1024),
      }),
    );
    if (options.webhooks?.sender) container.bind(TOKENS.webhookSender).toConstantValue(options.webhooks.sender);
    else container.load(webhookModule({ logger: logger?.child({ component: 'webhooks' }) }));
    if (options.ports) await replacePorts(container, options.ports);
    // Pauses of the imports this process runs, kept here too: the storage may refuse to take them.
    const deps: CoreDeps = {
      ...(await resolveCoreDeps(container)),
      pauses: new NotedPauses(),
      snapshots: new PatientSnapshots(),
      renders: new RenderSlots(tuning.renders.concurrency, tuning.renders.queue),
    };

    const workerId = newInstanceId();
    if (profile.kind === 'sql' && (profile.registerInstance ?? true)) {
      // Before any work is taken: an instance whose settings disagree with the running ones must not start.
      instances = await joinInstances(sequelize!, {
        schema: databaseSchema,
        identity: { instanceId: workerId, publicUrl: config.publicUrl, urlSigningSecret: urlSecret, blobLocation: blobStore.location },
        releaseGone: async (instanceId) => {
          await deps.queue.expireLeases(instanceId);
          await deps.storage.outbox.releaseClaims(instanceId);
        },
        logger: logger?.child({ component: 'instances' }),
      });
    }
    const pollMs = options.pollMs ?? (memory ? 50 : 500);
    const jobConcurrency = tuning.jobConcurrency;
    let running = false;
    const runner = new QueueRunner({
      queue: deps.queue,
      clock: deps.clock,
      handlers: coreJobHandlers(deps, { classifyError: classifyStorageError }),
      workerId,
      concurrency: jobConcurrency,
      // Half the slots at most for background work, so an import or a query a person started always finds
      // one free.
      backgroundConcurrency: Math.max(1, Math.floor(jobConcurrency / 2)),
      // Short enough that a restarted process takes over a killed one's jobs within seconds; the runner renews
      // a live lease every third of it, so long jobs keep theirs.
      leaseMs: 15_000,
      pollMs,
      // A finished job (an import's completion) may have stored webhooks: deliver them now, not at the next poll.
      onJobFinished: () => {
        if (running) delivery.wake();
      },
      logger: logger?.child({ component: 'queue' }),
    });
    // Kept across passes: a receiver's Retry-After pause also covers the messages created after it asked.
    const endpointPauses: EndpointPauses = new Map();
    const ratePerSecond = tuning.webhooks.rateLimitPerSecond;
    const rateLimit = ratePerSecond === undefined ? undefined : { perSecond: ratePerSecond, buckets: new Map<string, { tokens: number; atMs: number }>() };
    const webhookLogger = logger?.child({ component: 'webhooks' });
    const dispatcher = new WebhookDispatcher(
      {
        ...deps,
        random: Math.random,
        endpointPauses,
        workerId,
        endpointConcurrency: tuning.webhooks.endpointConcurrency,
        rateLimit,
        leaseMs: tuning.webhooks.leaseMs,
        disableAfterMs: tuning.webhooks.disableAfterMs,
      },
      {
        limit: DELIVERY_BATCH,
        // Its endpoint may have had messages created since its last claim: a poll takes them now.
        onLaneEnd: () => delivery.wake(),
        onError: (error) => webhookLogger?.warn({ err: describeError(error) }, 'webhook delivery to an endpoint stopped on an error; its messages are taken again'),
      },
    );
    const delivery = new DeliveryLoop(dispatcher, pollMs, webhookLogger);
    const retention = new RetentionSweeper(
      () =>
        pruneFinishedWork(deps, {
          days: tuning.retentionDays,
          pause: () => new Promise<void>((done) => setImmediate(done)),
        }),
      logger?.child({ component: 'retention' }),
    );
    const core = createApiHandler(deps, {
      // The account a request authenticated as is noted for its access log (ids only).
      onAuthenticated: noteAccount,
      onRouted: noteRoute,
      classifyError: classifyStorageError,
      rateLimits: tuning.rateLimits,
      failedAuthPerMinute: tuning.failedAuthPerMinute,
      onUnexpectedError: (error, request) =>
        logger?.error({ err: describeError(error), requestId: request.requestId, method: request.method, route: core.routeOf(request) ?? null }, 'unexpected error'),
    });
    // A write may have queued a job or a webhook: look now rather than at the next poll.
    const handler: ApiHandler = Object.assign(
      async (request: Parameters<ApiHandler>[0]) => {
        const response = await core(request);
        if (running && request.method.toUpperCase() !== 'GET') {
          runner.wake();
          delivery.wake();
        }
        return response;
      },
      { routes: core.routes, routeOf: core.routeOf },
    );

    const resumeWork = options.resumeInterruptedWork ?? !memory;
    if (resumeWork) {
      const { resumed } = await resumeInterruptedWork(deps);
      if (resumed > 0) logger?.info({ resumed }, 'resumed bulk imports interrupted by the last stop');
    }
    // Also while running: an import whose job died without ending the request would otherwise wait for the
    // next start. On a full disk a job's failure may not be written, and each claim after its lease ran out
    // uses up an attempt. Queuing is deduplicated by key, so a live job is never doubled.
    let resumeTimer: ReturnType<typeof setInterval> | undefined;
    let resuming: Promise<unknown> = Promise.resolve();

    const background: RuntimeBackground = {
      get running() {
        return running;
      },
      start() {
        if (running) return;
        running = true;
        runner.start();
        delivery.start();
        retention.start();
        if (resumeWork) {
          resumeTimer = setInterval(() => {
            resuming = resuming
              .then(() => resumeInterruptedWork(deps, { unchangedForMs: RESUME_AFTER_QUIET_MS }))
              .catch((error: unknown) => logger?.warn({ err: describeError(error) }, 'could not look for interrupted bulk imports; will retry'));
          }, RESUME_SWEEP_MS);
          resumeTimer.unref();
        }
      },
      async stop() {
        running = false;
        clearInterval(resumeTimer);
        resumeTimer = undefined;
        await resuming;
        await retention.stop();
        await delivery.stop();
        await runner.stop();
      },
    };

    let closing: Promise<void> | undefined;
    return {
      deps,
      handler,
      background,
      database: sequelize?.getDialect() ?? 'memory',
      async checkHealth() {
        await sequelize?.authenticate();
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
          await background.stop();
          await instances?.leave();
          // A storage handed to the memory profile is the runtime's to close; the container closes its own.
          if (profile.kind === 'memory' && profile.storage) await profile.storage.close();
          await container.unbindAllAsync();
          if (ownsSequelize) await sequelize!.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    await instances?.leave().catch(() => undefined);
    await container.unbindAllAsync().catch(() => undefined);
    if (ownsSequelize) await sequelize!.close().catch(() => undefined);
    throw error;
  }
}
