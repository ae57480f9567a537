import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { Container } from 'inversify';
import { pino, type Logger } from 'pino';
import type { Sequelize } from 'sequelize';
import { createAccount } from '../../core/accounts.js';
import { createApiHandler, type ApiHandler } from '../../core/api/handler.js';
import type { CoreConfig, CoreDeps } from '../../core/deps.js';
import { coreJobHandlers, resumeInterruptedWork } from '../../core/jobs.js';
import type { ClockPort, IdsPort, WebhookSenderPort } from '../../core/ports/index.js';
import { deliverDueMessages, type DeliveryReport } from '../../core/webhooks/deliver.js';
import { resolveCoreDeps } from '../../adapters/container/core-deps.js';
import { documentsModule } from '../../adapters/container/documents.module.js';
import { infraModule } from '../../adapters/container/infra.module.js';
import { queueModule } from '../../adapters/container/queue.module.js';
import { storageModule } from '../../adapters/container/storage.module.js';
import { TOKENS } from '../../adapters/container/tokens.js';
import { webhookModule } from '../../adapters/container/webhook.module.js';
import { QueueRunner } from '../../adapters/queue/runner.js';
import { sandboxDocumentsDir } from '../sandbox-documents.js';
import { createKoaApp, describeError } from './app.js';
import { openDatabase } from './database.js';
import { withAccountNotes } from './request-facts.js';
import { settingsFromEnv, urlSigningSecret, type ServiceSettings } from './settings.js';

export { settingsFromEnv, type ServiceSettings } from './settings.js';

export interface ServiceOptions extends Partial<ServiceSettings> {
  /** A stepped clock in tests; the system clock otherwise. */
  clock?: ClockPort;
  /** Sequential ids in tests; UUID v7 otherwise. */
  ids?: IdsPort;
  /** Replaces the HTTP webhook sender. */
  webhookSender?: WebhookSenderPort;
  /** Replaces the pino logger built from `logLevel`. */
  logger?: Logger;
  /**
   * Run queued jobs and webhook deliveries in the background (the service). Tests that step the clock turn
   * this off and call `settle()` instead, so nothing happens behind their back. Default true.
   */
  background?: boolean;
  /** On first start with an empty database, create a sandbox account and announce its key. Default true. */
  sandboxAccount?: boolean;
  /** Where the sandbox key announcement goes; stdout when absent. */
  announce?: (text: string) => void;
  /** Poll interval of the job runner and the webhook delivery loop, ms. Default 500. */
  pollMs?: number;
}

export interface ServiceHandle {
  /** Where the service listens, e.g. `http://127.0.0.1:41234` (not necessarily the public URL). */
  url: string;
  port: number;
  /** Base of the URLs the service hands out. */
  publicUrl: string;
  deps: CoreDeps;
  handler: ApiHandler;
  logger: Logger;
  /** Set when this start created the sandbox account (its key is never retrievable again). */
  sandboxAccount?: { accountId: string; apiKey: string };
  /**
   * Runs background work until nothing is due at the current time: queued jobs, then webhook deliveries.
   * Never advances the clock. For tests and the CLI; the service does the same on its own when running.
   */
  settle(): Promise<void>;
  /**
   * Graceful stop: stop accepting connections, let in-flight requests finish, stop the job runner (its
   * leases are given back) and the delivery loop, close storage. Idempotent.
   */
  close(): Promise<void>;
}

/** How long in-flight requests get to finish on shutdown before their connections are cut. */
const SHUTDOWN_GRACE_MS = 10_000;
const DELIVERY_BATCH = 100;

/** One webhook delivery pass at a time in this process (the outbox does not claim messages). */
class DeliveryLoop {
  private running: Promise<void> | undefined;
  private stopped = true;
  private wakeUp: (() => void) | undefined;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly deliver: () => Promise<DeliveryReport>,
    private readonly pollMs: number,
    private readonly logger: Logger,
  ) {}

  /** One pass, never overlapping another (the background loop and `settle` share this). */
  pass(): Promise<DeliveryReport> {
    const result = this.tail.then(() => this.deliver());
    this.tail = result.catch(() => undefined);
    return result;
  }

  start(): void {
    if (this.running) return;
    this.stopped = false;
    this.running = (async () => {
      while (!this.stopped) {
        let attempted = 0;
        try {
          const report = await this.pass();
          attempted = report.delivered + report.failed + report.parked;
        } catch (error) {
          this.logger.warn({ err: describeError(error) }, 'webhook delivery pass failed; will retry');
        }
        // A busy pass may have left more due work: go again at once; otherwise wait for the next tick.
        if (attempted === 0 && !this.stopped) await this.sleep();
      }
    })();
  }

  wake(): void {
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.running;
    this.running = undefined;
    await this.tail;
  }

  private sleep(): Promise<void> {
    return new Promise<void>((done) => {
      const timer = setTimeout(finish, this.pollMs);
      function finish() {
        clearTimeout(timer);
        done();
      }
      this.wakeUp = finish;
    }).finally(() => {
      this.wakeUp = undefined;
    });
  }
}

function listen(server: Server, port: number, host: string | undefined): Promise<AddressInfo> {
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      done(server.address() as AddressInfo);
    });
  });
}

function urlHost(host: string | undefined): string {
  if (!host || host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * The composition root of the standalone service: settings in, a listening HTTP server with its background
 * work out. SQLite (or PostgreSQL) storage and durable queue on one Sequelize instance, blobs on disk,
 * HMAC-signed URLs, HTTP webhooks, the sandbox HIE network.
 */
export async function startService(options: ServiceOptions = settingsFromEnv()): Promise<ServiceHandle> {
  const defaults = settingsFromEnv({});
  const settings: ServiceSettings & ServiceOptions = { ...defaults, ...options };
  const logger = options.logger ?? pino({ level: settings.logLevel, base: { service: 'carebridge' } });
  const background = options.background ?? true;
  const pollMs = options.pollMs ?? 500;

  // Listening first tells the real port (PORT=0) before the public URL is fixed; until the service is
  // ready, requests get a 503.
  let ready: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => {
    if (ready) return ready(req, res);
    res.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' });
    res.end(JSON.stringify({ status: 503, title: 'Service Unavailable', detail: 'The service is starting', code: 'STARTING' }));
  });
  const address = await listen(server, settings.port, settings.host);
  const url = `http://${urlHost(settings.host)}:${address.port}`;
  const publicUrl = (settings.publicUrl ?? url).replace(/\/+$/, '');

  let sequelize: Sequelize | undefined;
  let container: Container | undefined;
  try {
    sequelize = await openDatabase(settings);
    const config: CoreConfig = { publicUrl, webhookAllowPrivate: settings.webhookAllowPrivate };
    container = new Container();
    container.bind(TOKENS.config).toConstantValue(config);
    container.load(
      infraModule({
        urlSecret: await urlSigningSecret(settings.dataDir, settings.urlSigningSecret),
        blob: { kind: 'fs', root: join(resolve(settings.dataDir), 'blobs') },
        ...(options.clock ? { clock: options.clock } : {}),
        ...(options.ids ? { ids: options.ids } : {}),
      }),
      storageModule({ kind: 'sequelize', sequelize }),
      queueModule({ kind: 'sql', sequelize, ...(settings.databaseSchema ? { schema: settings.databaseSchema } : {}) }),
      documentsModule({ sandboxDocumentsDir: sandboxDocumentsDir() }),
    );
    if (options.webhookSender) container.bind(TOKENS.webhookSender).toConstantValue(options.webhookSender);
    else container.load(webhookModule);
    const deps = await resolveCoreDeps(container);

    const runner = new QueueRunner({
      queue: deps.queue,
      clock: deps.clock,
      handlers: coreJobHandlers(deps),
      workerId: `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
      concurrency: 2,
      // Short enough that a restarted service takes over a killed one's jobs within seconds; the runner renews
      // a live lease every third of it, so long jobs keep theirs.
      leaseMs: 15_000,
      pollMs,
      logger: logger.child({ component: 'queue' }),
    });
    const delivery = new DeliveryLoop(
      () => deliverDueMessages({ ...deps, random: Math.random }, { limit: DELIVERY_BATCH }),
      pollMs,
      logger.child({ component: 'webhooks' }),
    );

    const core = createApiHandler(
      { ...deps, storage: withAccountNotes(deps.storage) },
      {
        onUnexpectedError: (error, request) =>
          logger.error({ err: describeError(error), method: request.method, route: core.routeOf(request) ?? null }, 'unexpected error'),
      },
    );
    // A write may have queued a job or a webhook: look now rather than at the next poll.
    const handler: ApiHandler = Object.assign(
      async (request: Parameters<ApiHandler>[0]) => {
        const response = await core(request);
        if (request.method !== 'GET' && background) {
          runner.wake();
          delivery.wake();
        }
        return response;
      },
      { routes: core.routes, routeOf: core.routeOf },
    );

    const { resumed } = await resumeInterruptedWork(deps);
    if (resumed > 0) logger.info({ resumed }, 'resumed bulk imports interrupted by the last stop');

    let sandboxAccount: ServiceHandle['sandboxAccount'];
    if ((options.sandboxAccount ?? true) && (await deps.storage.accounts.list()).length === 0) {
      const { account, apiKey } = await createAccount(deps, { name: 'Sandbox' });
      sandboxAccount = { accountId: account.id, apiKey };
      (options.announce ?? ((text: string) => process.stdout.write(text)))(sandboxAnnouncement(publicUrl, account.id, apiKey));
      logger.info({ accountId: account.id }, 'created the sandbox account');
    }

    const app = createKoaApp(handler, {
      logger: logger.child({ component: 'http' }),
      openApi: { serverUrl: publicUrl },
      health: async () => {
        await sequelize!.authenticate();
        return { status: 'ok' };
      },
    });
    ready = app.callback();
    if (background) {
      runner.start();
      delivery.start();
    }
    logger.info({ url, publicUrl, database: sequelize.getDialect() }, 'carebridge is listening');

    let closing: Promise<void> | undefined;
    const openContainer = container;
    const openSequelizeInstance = sequelize;
    return {
      url,
      port: address.port,
      publicUrl,
      deps,
      handler,
      logger,
      ...(sandboxAccount ? { sandboxAccount } : {}),
      async settle() {
        for (let round = 0; round < 1_000; round++) {
          const ran = await runner.drain();
          const report = await delivery.pass();
          if (ran === 0 && report.delivered + report.failed + report.parked === 0) return;
        }
      },
      close() {
        closing ??= (async () => {
          await stopServer(server);
          await delivery.stop();
          await runner.stop();
          await openContainer.unbindAllAsync();
          await openSequelizeInstance.close();
          logger.info('carebridge stopped');
        })();
        return closing;
      },
    };
  } catch (error) {
    await stopServer(server).catch(() => undefined);
    await container?.unbindAllAsync().catch(() => undefined);
    await sequelize?.close().catch(() => undefined);
    throw error;
  }
}

/** Stops accepting, lets requests in flight finish (cutting them after a grace period), closes idle keep-alives. */
function stopServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((done) => {
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    const cut = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    server.close(() => {
      clearInterval(idle);
      clearTimeout(cut);
      done();
    });
    server.closeIdleConnections();
  });
}

function sandboxAnnouncement(publicUrl: string, accountId: string, apiKey: string): string {
  return [
    '',
    `carebridge: created the sandbox account ${accountId}.`,
    'Its API key is shown this once (only its hash is stored):',
    '',
    `  ${apiKey}`,
    '',
    'Try it:',
    `  curl -s -H "x-api-key: ${apiKey}" ${publicUrl}/medical/v1/facility`,
    '',
    `API documentation: ${publicUrl}/docs`,
    '',
    '',
  ].join('\n');
}
