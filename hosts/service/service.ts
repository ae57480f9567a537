import 'reflect-metadata';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import type { ApiHandler } from '../../core/api/handler.js';
import type { CoreDeps } from '../../core/deps.js';
import type { ClockPort, IdsPort, WebhookSenderPort } from '../../core/ports/index.js';
import { statusForCode } from '../../core/errors.js';
import { createKoaApp } from '../../http/koa.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';
import { settingsFromEnv, type ServiceSettings } from '../../runtime/settings.js';
import { resolveTunables } from '../../runtime/settings-table.js';

export { settingsFromEnv, type ServiceSettings } from '../../runtime/settings.js';

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
  const server = createServer(
    {
      headersTimeout: settings.headersTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      keepAliveTimeout: settings.keepAliveTimeoutMs,
      // Node looks for expired requests only this often (30 s by default): a few times per timeout, so a
      // slow client is cut soon after its time is up rather than up to 30 s later.
      connectionsCheckingInterval: Math.max(10, Math.min(settings.headersTimeoutMs, 30_000) / 4),
    },
    (req, res) => {
      if (ready) return ready(req, res);
      const status = statusForCode('STARTING');
      res.writeHead(status, { 'content-type': 'application/problem+json', 'retry-after': '1' });
      res.end(JSON.stringify({ status, title: 'Service Unavailable', detail: 'The service is starting', code: 'STARTING' }));
    },
  );
  // Past it Node closes a new connection at once, unanswered: cheaper than answering, and what a client
  // retrying with backoff handles like any refused connection.
  server.maxConnections = settings.maxConnections;
  const address = await listen(server, settings.port, settings.host);
  const url = `http://${urlHost(settings.host)}:${address.port}`;
  const publicUrl = (settings.publicUrl ?? url).replace(/\/+$/, '');

  // Each option given, else the environment's (or the table's) value for it, group by group.
  const tunables = resolveTunables(options.tunables ?? {}, defaults.tunables);
  let runtime: Runtime | undefined;
  try {
    runtime = await createRuntime({
      profile: {
        kind: 'sql',
        dataDir: settings.dataDir,
        database: settings.databaseUrl || undefined,
        databaseSchema: settings.databaseSchema,
        blobUrl: settings.blobUrl,
        s3: settings.s3,
      },
      publicUrl,
      urlSigningSecret: settings.urlSigningSecret || undefined,
      ccda: 'pooled',
      ...tunables,
      webhooks: { ...tunables.webhooks, sender: options.webhookSender },
      pollMs,
      logger,
      clock: options.clock,
      ids: options.ids,
    });
    const { deps, handler } = runtime;
    if (background) runtime.background.start();

    let sandboxAccount: ServiceHandle['sandboxAccount'];
    if ((options.sandboxAccount ?? true) && (await deps.storage.accounts.list()).length === 0) {
      sandboxAccount = await runtime.createAccount('Sandbox');
      (options.announce ?? ((text: string) => process.stdout.write(text)))(sandboxAnnouncement(publicUrl, sandboxAccount.accountId, sandboxAccount.apiKey));
      logger.info({ accountId: sandboxAccount.accountId }, 'created the sandbox account');
    }

    const running = runtime;
    const app = createKoaApp(handler, {
      logger: logger.child({ component: 'http' }),
      openApi: { serverUrl: publicUrl },
      health: async () => {
        await running.checkHealth();
        return { status: 'ok' };
      },
    });
    ready = app.callback();
    logger.info({ url, publicUrl, database: runtime.database }, 'carebridge is listening');

    let closing: Promise<void> | undefined;
    return {
      url,
      port: address.port,
      publicUrl,
      deps,
      handler,
      logger,
      ...(sandboxAccount ? { sandboxAccount } : {}),
      settle: () => running.settle(),
      close() {
        closing ??= (async () => {
          await stopServer(server);
          await running.close();
          logger.info('carebridge stopped');
        })();
        return closing;
      },
    };
  } catch (error) {
    await stopServer(server).catch(() => undefined);
    await runtime?.close().catch(() => undefined);
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
