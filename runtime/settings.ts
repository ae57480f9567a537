import type { RateLimits } from '../core/api/rate-limit.js';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { blobSettingsFromEnv, type BlobSettings } from './blob-settings.js';
import { readSettings, type Tunables } from './settings-table.js';

/** What the service reads from its environment. */
export interface ServiceSettings extends BlobSettings {
  /** `PORT`, 8080. 0 picks a free port. */
  port: number;
  /** `HOST`: the address to listen on; every interface when absent. */
  host?: string;
  /** `DATA_DIR`, `./data`: the SQLite file, blobs and the generated URL signing secret live here. */
  dataDir: string;
  /** `DATABASE_URL`: `postgres://...` for PostgreSQL, `sqlite:<file>`; SQLite in DATA_DIR when absent. */
  databaseUrl?: string;
  /** `DATABASE_SCHEMA`: PostgreSQL schema to work in (created when missing); `public` when absent. */
  databaseSchema?: string;
  /** `PUBLIC_URL`: base of the URLs handed out; `http://localhost:<port>` when absent. */
  publicUrl?: string;
  /** `WEBHOOK_ALLOW_PRIVATE=true`: allow loopback/private webhook URLs (development only). */
  webhookAllowPrivate: boolean;
  /** `WEBHOOK_RATE_LIMIT`: at most this many webhook messages a second per endpoint; no limit when unset. */
  webhookRateLimit?: number;
  /** `RETENTION_DAYS`: days delivered webhooks and finished jobs are kept, 7. */
  retentionDays: number;
  /** `WEBHOOK_CONCURRENCY`: webhook requests in flight at once per endpoint, 16. */
  webhookConcurrency: number;
  /** `WEBHOOK_LEASE_SECONDS`: how long an instance's claim on outbox messages lasts, 300 when absent. */
  webhookLeaseSeconds?: number;
  /** `WEBHOOK_DISABLE_AFTER_DAYS`: days an endpoint fails every attempt before it is disabled, 5; 0 (`off`) never. */
  webhookDisableAfterDays: number;
  /** `URL_SIGNING_SECRET`: else generated once and kept in DATA_DIR, so URLs survive restarts. */
  urlSigningSecret?: string;
  /** `LOG_LEVEL`: pino level, `info`. */
  logLevel: string;
  /** `SEARCH_CACHE_MB`: memory for patients' search indexes (estimated), 64. */
  searchCacheMb: number;
  /** `JOB_CONCURRENCY`: queued jobs run at once by this process, 8; background work takes at most half. */
  jobConcurrency: number;
  /** `CCDA_WORKERS`: threads converting C-CDA documents; one per core but the event loop's (at least 1) when absent. */
  ccdaWorkers?: number;
  /** `RATE_LIMITS`: requests per minute per account by route class, e.g. `create=600,consolidated=60`; `off`, or 0 for a class, disables. */
  rateLimits?: RateLimits;
  /** `FAILED_AUTH_LIMIT`: wrong API keys allowed per client address and minute, 20; `off` or 0 disables. */
  failedAuthPerMinute: number;
  /** `RENDER_CONCURRENCY`: renders (HTML, PDF) run at once by this process, every account together, 2. */
  renderConcurrency: number;
  /** `RENDER_QUEUE`: renders that may wait for a slot, 8; one more answers 503 BUSY. */
  renderQueue: number;
  /** `HEADERS_TIMEOUT_SECONDS`: time a client has to send a request's headers, 30; then 408 and the connection is closed. */
  headersTimeoutMs: number;
  /** `REQUEST_TIMEOUT_SECONDS`: time a client has to send a whole request, 300 (an upload may be 200 MB); then 408. */
  requestTimeoutMs: number;
  /** `KEEP_ALIVE_TIMEOUT_SECONDS`: how long an idle connection is kept open for a next request, 5. */
  keepAliveTimeoutMs: number;
  /** `MAX_CONNECTIONS`: connections open at once, 1024; past it a new connection is closed unanswered. */
  maxConnections: number;
  /** `CCDA_MAX_MB`: largest C-CDA document converted, MB (1 to 1024); larger ones are stored but not converted. Default 32. */
  ccdaMaxBytes?: number;
}

/** Settings from environment variables (the table in settings-table.ts); throws with the variable's name when one is malformed. */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): ServiceSettings {
  const read = readSettings(env);
  const value = <T>(variable: string) => read.get(variable) as T;
  const seconds = (variable: string) => value<number>(variable) * 1000;
  if (value<number>('HEADERS_TIMEOUT_SECONDS') > value<number>('REQUEST_TIMEOUT_SECONDS')) {
    throw new Error('HEADERS_TIMEOUT_SECONDS must not be more than REQUEST_TIMEOUT_SECONDS: the headers are part of the request');
  }
  const ccdaMaxMb = value<number | undefined>('CCDA_MAX_MB');
  const settings: ServiceSettings = {
    port: value('PORT'),
    retentionDays: value('RETENTION_DAYS'),
    jobConcurrency: value('JOB_CONCURRENCY'),
    webhookConcurrency: value('WEBHOOK_CONCURRENCY'),
    webhookDisableAfterDays: value('WEBHOOK_DISABLE_AFTER_DAYS'),
    dataDir: value('DATA_DIR'),
    webhookAllowPrivate: value('WEBHOOK_ALLOW_PRIVATE'),
    logLevel: value('LOG_LEVEL'),
    searchCacheMb: value('SEARCH_CACHE_MB'),
    failedAuthPerMinute: value('FAILED_AUTH_LIMIT'),
    renderConcurrency: value('RENDER_CONCURRENCY'),
    renderQueue: value('RENDER_QUEUE'),
    headersTimeoutMs: seconds('HEADERS_TIMEOUT_SECONDS'),
    requestTimeoutMs: seconds('REQUEST_TIMEOUT_SECONDS'),
    keepAliveTimeoutMs: seconds('KEEP_ALIVE_TIMEOUT_SECONDS'),
    maxConnections: value('MAX_CONNECTIONS'),
    rateLimits: value('RATE_LIMITS'),
  };
  // Settings with no default stay absent rather than present as undefined.
  const optional = {
    host: value<string | undefined>('HOST'),
    databaseUrl: value<string | undefined>('DATABASE_URL'),
    databaseSchema: value<string | undefined>('DATABASE_SCHEMA'),
    publicUrl: value<string | undefined>('PUBLIC_URL'),
    urlSigningSecret: value<string | undefined>('URL_SIGNING_SECRET'),
    ccdaWorkers: value<number | undefined>('CCDA_WORKERS'),
    ccdaMaxBytes: ccdaMaxMb === undefined ? undefined : Math.round(ccdaMaxMb * 1024 * 1024),
    webhookRateLimit: value<number | undefined>('WEBHOOK_RATE_LIMIT'),
    webhookLeaseSeconds: value<number | undefined>('WEBHOOK_LEASE_SECONDS'),
    ...blobSettingsFromEnv(env),
  };
  for (const [name, given] of Object.entries(optional)) if (given !== undefined) Object.assign(settings, { [name]: given });
  return settings;
}

/**
 * The tunables as the service's settings give them, under the hosts' option names: every one the
 * environment sets or defaults, so the service runs with the table's defaults, `RATE_LIMITS` and
 * `FAILED_AUTH_LIMIT` included (the embedded host has none of its own).
 */
export function tunablesOf(settings: ServiceSettings): Tunables {
  return {
    rateLimits: settings.rateLimits,
    failedAuthPerMinute: settings.failedAuthPerMinute,
    renders: { concurrency: settings.renderConcurrency, queue: settings.renderQueue },
    ccdaMaxBytes: settings.ccdaMaxBytes,
    jobConcurrency: settings.jobConcurrency,
    ccdaWorkers: settings.ccdaWorkers,
    searchCacheMb: settings.searchCacheMb,
    retentionDays: settings.retentionDays,
    webhooks: {
      allowPrivate: settings.webhookAllowPrivate,
      endpointConcurrency: settings.webhookConcurrency,
      rateLimitPerSecond: settings.webhookRateLimit,
      leaseMs: settings.webhookLeaseSeconds === undefined ? undefined : settings.webhookLeaseSeconds * 1000,
      disableAfterMs: Math.round(settings.webhookDisableAfterDays * 24 * 3_600_000),
    },
  };
}

const SECRET_FILE = 'url-signing-secret';

/**
 * The secret pre-signed URLs are signed with: the given one, else the one stored in `dataDir`, else a new
 * one written there (owner-only) so URLs handed out before a restart still verify after it.
 */
export async function urlSigningSecret(dataDir: string, given: string | undefined): Promise<string> {
  if (given !== undefined) return given;
  const file = join(resolve(dataDir), SECRET_FILE);
  await mkdir(resolve(dataDir), { recursive: true });
  try {
    await writeFile(file, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    // Another process (or an earlier start) wrote it first: use theirs.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const secret = (await readFile(file, 'utf8')).trim();
  if (secret.length < 16) throw new Error(`${file} holds no usable secret; delete it to have a new one generated`);
  return secret;
}
