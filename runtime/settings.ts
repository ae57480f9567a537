import { DEFAULT_FAILED_AUTH_PER_MINUTE, DEFAULT_RATE_LIMITS, type RateLimits } from '../core/api/rate-limit.js';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { DEFAULT_RETENTION_DAYS } from '../core/retention.js';
import { DEFAULT_RENDER_CONCURRENCY, DEFAULT_RENDER_QUEUE } from '../core/documents/render-slots.js';
import { blobSettingsFromEnv, type BlobSettings } from './blob-settings.js';

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
  /** `URL_SIGNING_SECRET`: else generated once and kept in DATA_DIR, so URLs survive restarts. */
  urlSigningSecret?: string;
  /** `LOG_LEVEL`: pino level, `info`. */
  logLevel: string;
  /** `SEARCH_CACHE_MB`: memory for patients' search indexes (estimated), 64. */
  searchCacheMb: number;
  /** `JOB_CONCURRENCY`: queued jobs run at once by this process, 4; background work takes at most half. */
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

/**
 * Jobs at once: most of a document query's time is waiting (the database writer, file flushes, the
 * converter's threads), so a few run side by side to keep the cores busy.
 */
const DEFAULT_JOB_CONCURRENCY = 4;

/** What the search indexes of the patients searched last may take; a patient's index is ~0.1-1.5 MB. */
const DEFAULT_SEARCH_CACHE_MB = 64;

/** Enough for a client on a slow link to send its headers; a client holding a connection with them is cut. */
const DEFAULT_HEADERS_TIMEOUT_SECONDS = 30;
/** A whole request, upload included: 200 MB takes about 3 minutes at 10 Mbit/s. */
const DEFAULT_REQUEST_TIMEOUT_SECONDS = 300;
/** Long enough for a client's next request, short enough that idle connections do not pile up. */
const DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS = 5;
/** Far above what one instance serves at once; a flood of idle connections cannot take every file descriptor. */
const DEFAULT_MAX_CONNECTIONS = 1024;

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

function flag(value: string | undefined, name: string): boolean {
  if (value === undefined || value.trim() === '') return false;
  const normalised = value.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(normalised)) return true;
  if (['false', '0', 'no'].includes(normalised)) return false;
  throw new Error(`${name} must be true or false, not "${value}"`);
}

const nonEmpty = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim());

/** A whole number from `min` to `max` in `name`, `fallback` when unset; throws naming the variable otherwise. */
function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = nonEmpty(env[name]);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be a whole number from ${min} to ${max}, not "${text}"`);
  return value;
}

/** Settings from environment variables; throws with the variable's name when one is malformed. */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): ServiceSettings {
  const portText = nonEmpty(env.PORT) ?? '8080';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`PORT must be a port number (0-65535), not "${portText}"`);
  const logLevel = (nonEmpty(env.LOG_LEVEL) ?? 'info').toLowerCase();
  if (!LOG_LEVELS.has(logLevel)) throw new Error(`LOG_LEVEL must be one of ${[...LOG_LEVELS].join(', ')}`);
  const publicUrl = nonEmpty(env.PUBLIC_URL);
  if (publicUrl !== undefined && !/^https?:\/\/[^/]/.test(publicUrl)) throw new Error('PUBLIC_URL must start with http:// or https://');
  const searchCacheText = nonEmpty(env.SEARCH_CACHE_MB) ?? String(DEFAULT_SEARCH_CACHE_MB);
  const searchCacheMb = Number(searchCacheText);
  if (!Number.isFinite(searchCacheMb) || searchCacheMb < 1) throw new Error(`SEARCH_CACHE_MB must be a number of megabytes (1 or more), not "${searchCacheText}"`);
  const jobConcurrencyText = nonEmpty(env.JOB_CONCURRENCY) ?? String(DEFAULT_JOB_CONCURRENCY);
  const jobConcurrency = Number(jobConcurrencyText);
  if (!Number.isInteger(jobConcurrency) || jobConcurrency < 2 || jobConcurrency > 256) {
    throw new Error(`JOB_CONCURRENCY must be a whole number from 2 to 256, not "${jobConcurrencyText}"`);
  }
  const workersText = nonEmpty(env.CCDA_WORKERS);
  const ccdaWorkers = workersText === undefined ? undefined : Number(workersText);
  if (ccdaWorkers !== undefined && !(Number.isInteger(ccdaWorkers) && ccdaWorkers >= 1 && ccdaWorkers <= 256)) {
    throw new Error(`CCDA_WORKERS must be a whole number from 1 to 256, not "${workersText}"`);
  }
  const maxMbText = nonEmpty(env.CCDA_MAX_MB);
  const ccdaMaxMb = maxMbText === undefined ? undefined : Number(maxMbText);
  if (ccdaMaxMb !== undefined && !(Number.isFinite(ccdaMaxMb) && ccdaMaxMb >= 1 && ccdaMaxMb <= 1024)) {
    throw new Error(`CCDA_MAX_MB must be a number of megabytes from 1 to 1024, not "${maxMbText}"`);
  }
  const rateLimits = rateLimitsOf(nonEmpty(env.RATE_LIMITS));
  const failedAuthText = nonEmpty(env.FAILED_AUTH_LIMIT) ?? String(DEFAULT_FAILED_AUTH_PER_MINUTE);
  const failedAuthPerMinute = failedAuthText.toLowerCase() === 'off' ? 0 : Number(failedAuthText);
  if (!Number.isInteger(failedAuthPerMinute) || failedAuthPerMinute < 0 || failedAuthPerMinute > 1_000_000) {
    throw new Error(`FAILED_AUTH_LIMIT must be "off" or a whole number of wrong API keys per minute (0 to 1000000), not "${failedAuthText}"`);
  }
  const renderConcurrency = wholeNumber(env, 'RENDER_CONCURRENCY', DEFAULT_RENDER_CONCURRENCY, 1, 256);
  const renderQueue = wholeNumber(env, 'RENDER_QUEUE', DEFAULT_RENDER_QUEUE, 0, 10_000);
  const headersTimeoutMs = wholeNumber(env, 'HEADERS_TIMEOUT_SECONDS', DEFAULT_HEADERS_TIMEOUT_SECONDS, 1, 3_600) * 1000;
  const requestTimeoutMs = wholeNumber(env, 'REQUEST_TIMEOUT_SECONDS', DEFAULT_REQUEST_TIMEOUT_SECONDS, 1, 86_400) * 1000;
  if (headersTimeoutMs > requestTimeoutMs) throw new Error('HEADERS_TIMEOUT_SECONDS must not be more than REQUEST_TIMEOUT_SECONDS: the headers are part of the request');
  const keepAliveTimeoutMs = wholeNumber(env, 'KEEP_ALIVE_TIMEOUT_SECONDS', DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS, 1, 3_600) * 1000;
  const maxConnections = wholeNumber(env, 'MAX_CONNECTIONS', DEFAULT_MAX_CONNECTIONS, 1, 1_000_000);
  const concurrencyText = nonEmpty(env.WEBHOOK_CONCURRENCY) ?? '16';
  const webhookConcurrency = Number(concurrencyText);
  if (!Number.isInteger(webhookConcurrency) || webhookConcurrency < 1 || webhookConcurrency > 256) {
    throw new Error(`WEBHOOK_CONCURRENCY must be a whole number from 1 to 256, not "${concurrencyText}"`);
  }
  const retentionText = nonEmpty(env.RETENTION_DAYS) ?? String(DEFAULT_RETENTION_DAYS);
  const retentionDays = Number(retentionText);
  if (!Number.isFinite(retentionDays) || retentionDays < 1 || retentionDays > 3650) {
    throw new Error(`RETENTION_DAYS must be a number of days from 1 to 3650, not "${retentionText}"`);
  }
  const rateText = nonEmpty(env.WEBHOOK_RATE_LIMIT);
  const webhookRateLimit = rateText === undefined ? undefined : Number(rateText);
  if (webhookRateLimit !== undefined && !(Number.isFinite(webhookRateLimit) && webhookRateLimit >= 1 && webhookRateLimit <= 100_000)) {
    throw new Error(`WEBHOOK_RATE_LIMIT must be a number of messages per second from 1 to 100000, not "${rateText}"`);
  }
  const leaseText = nonEmpty(env.WEBHOOK_LEASE_SECONDS);
  const webhookLeaseSeconds = leaseText === undefined ? undefined : Number(leaseText);
  if (webhookLeaseSeconds !== undefined && !(Number.isInteger(webhookLeaseSeconds) && webhookLeaseSeconds >= 10 && webhookLeaseSeconds <= 3600)) {
    throw new Error(`WEBHOOK_LEASE_SECONDS must be a whole number of seconds from 10 to 3600, not "${leaseText}"`);
  }
  const settings: ServiceSettings = {
    port,
    retentionDays,
    jobConcurrency,
    webhookConcurrency,
    dataDir: nonEmpty(env.DATA_DIR) ?? './data',
    webhookAllowPrivate: flag(env.WEBHOOK_ALLOW_PRIVATE, 'WEBHOOK_ALLOW_PRIVATE'),
    logLevel,
    searchCacheMb,
    failedAuthPerMinute,
    renderConcurrency,
    renderQueue,
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs,
    maxConnections,
  };
  const optional = {
    host: nonEmpty(env.HOST),
    databaseUrl: nonEmpty(env.DATABASE_URL),
    databaseSchema: nonEmpty(env.DATABASE_SCHEMA),
    publicUrl,
    urlSigningSecret: nonEmpty(env.URL_SIGNING_SECRET),
    ccdaWorkers,
    rateLimits,
    ...(ccdaMaxMb !== undefined ? { ccdaMaxBytes: Math.round(ccdaMaxMb * 1024 * 1024) } : {}),
    webhookRateLimit,
    webhookLeaseSeconds,
    ...blobSettingsFromEnv(env),
  };
  for (const [name, value] of Object.entries(optional)) if (value !== undefined) Object.assign(settings, { [name]: value });
  return settings;
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

/**
 * `RATE_LIMITS`: the defaults, changed class by class (`create=1200,documentQuery=60`), or `off`: every
 * class 0 (no limit), a value of its own so that it wins over the defaults settings are merged onto.
 */
function rateLimitsOf(text: string | undefined): RateLimits {
  if (text === undefined) return DEFAULT_RATE_LIMITS;
  if (text.toLowerCase() === 'off') return { standard: 0, create: 0, documentQuery: 0, consolidated: 0 };
  const limits: RateLimits = { ...DEFAULT_RATE_LIMITS };
  for (const part of text.split(',')) {
    const [name, value] = part.split('=').map((piece) => piece.trim());
    const perMinute = Number(value);
    if (!name || !(name in limits) || value === undefined || value === '' || !Number.isInteger(perMinute) || perMinute < 0 || perMinute > 1_000_000) {
      throw new Error(`RATE_LIMITS must be "off" or class=requests-per-minute pairs (classes: ${Object.keys(limits).join(', ')}), not "${text}"`);
    }
    limits[name as keyof RateLimits] = perMinute;
  }
  return limits;
}
