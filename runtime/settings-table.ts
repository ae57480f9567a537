import { z } from 'zod';
import { DEFAULT_FAILED_AUTH_PER_MINUTE, DEFAULT_RATE_LIMITS, RATE_LIMIT_CLASSES, type RateLimits } from '../core/api/rate-limit.js';
import { DEFAULT_RENDER_CONCURRENCY, DEFAULT_RENDER_QUEUE } from '../core/documents/render-slots.js';
import { DEFAULT_RETENTION_DAYS } from '../core/retention.js';
import { DEFAULT_DISABLE_AFTER_MS } from '../core/webhooks/health.js';
import { DEFAULT_DELIVERY_LEASE_MS, DEFAULT_ENDPOINT_CONCURRENCY } from '../core/webhooks/delivery.js';
import { DEFAULT_MAX_CONVERSION_BYTES } from '../core/deps.js';
import { DEFAULT_SEARCH_CACHE_BYTES } from '../adapters/search/minisearch.search-index.js';

const DAY_MS = 24 * 3_600_000;

/**
 * Every setting the service reads from its environment, once: its variable, what `serve --help` and the
 * README's settings table say its default is, a line of help, and how its text becomes a value (a zod
 * schema, whose failure names the variable and the rule). The environment parser, `serve --help` and the
 * check of the README's table all read this list.
 */
export interface SettingSpec<Value = unknown> {
  variable: string;
  /** The part of `serve --help` it is listed in. */
  group: 'Settings' | 'Files in a bucket' | 'Limits' | 'Work';
  /** The default as a person reads it (`8080`, `every interface`, `none`). */
  shownDefault: string;
  /** One line for `serve --help`. */
  help: string;
  /** What a value must be, for the error naming the variable. */
  rule: string;
  /** From the trimmed, non-empty text to the value; absent for settings read elsewhere (the bucket's). */
  schema?: z.ZodType<Value, string>;
  /** The value when the variable is unset (none: the setting stays absent). */
  fallback?: Value;
}

/**
 * A setting that is also an option of every host (`createCarebridge`, `MemoryHost`, the runtime): the
 * JSDoc on its key in `TUNABLES` is the option's documentation, and its default is the variable's, so a
 * host cannot state another by mistake.
 */
export interface TunableSpec<Value = unknown, Option = Value> extends SettingSpec<Value> {
  schema: z.ZodType<Value, string>;
  /** The option's value from the variable's, where their units differ (the variable in seconds, the option in ms). */
  toOption?: (value: Value) => Option;
  /**
   * `none`: the hosts leave the option unset when it is not given, although the service's variable has a
   * default. An application embedding carebridge may limit requests its own way, before carebridge sees them.
   */
  optionDefault?: 'none';
}

/** A tunable that has a default for the hosts (the type tells `ResolvedTunables` which ones). */
type DefaultedTunable<Value, Option> = TunableSpec<Value, Option> & { fallback: Value; optionDefault?: undefined };

function tunable<Value, Option = Value>(spec: DefaultedTunable<Value, Option>): DefaultedTunable<Value, Option>;
function tunable<Value, Option = Value>(spec: TunableSpec<Value, Option>): TunableSpec<Value, Option>;
function tunable<Value, Option>(spec: TunableSpec<Value, Option>): TunableSpec<Value, Option> {
  return spec;
}

const MB = 1024 * 1024;
/**
 * Jobs at once: most of a document query's time is waiting (for the converter's thread, the database's one
 * writer, the network), so several run side by side to keep the cores busy. With 4 (2 of them background)
 * the journey benchmark converted 23-29 documents a second with the cores 1.2 busy; with 8, 30-35 (12 and
 * 16 did no better), the API's p99 unchanged.
 */
const DEFAULT_JOB_CONCURRENCY = 8;
/** Enough for a client on a slow link to send its headers; a client holding a connection with them is cut. */
const DEFAULT_HEADERS_TIMEOUT_SECONDS = 30;
/** A whole request, upload included: 200 MB takes about 3 minutes at 10 Mbit/s. */
const DEFAULT_REQUEST_TIMEOUT_SECONDS = 300;
/** Long enough for a client's next request, short enough that idle connections do not pile up. */
const DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS = 5;
/** Far above what one instance serves at once; a flood of idle connections cannot take every file descriptor. */
const DEFAULT_MAX_CONNECTIONS = 1024;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Number() of the text, as the settings always read numbers; NaN fails every check after it. */
const number = z.string().transform((text) => Number(text));
const whole = (min: number, max: number) => number.pipe(z.number().int().min(min).max(max));
const amount = (min: number, max: number) => number.pipe(z.number().min(min).max(max));
const text = z.string();
const flag = z.string().transform((value, context) => {
  const normalised = value.toLowerCase();
  if (['true', '1', 'yes'].includes(normalised)) return true;
  if (['false', '0', 'no'].includes(normalised)) return false;
  context.addIssue({ code: 'custom', message: 'not true or false' });
  return z.NEVER;
});

/** `off`, or a whole number from 0 to `max` (0 is off too). */
const offOrWhole = (max: number) => z.string().transform((value) => (value.toLowerCase() === 'off' ? 0 : Number(value))).pipe(z.number().int().min(0).max(max));

/**
 * `RATE_LIMITS`: the defaults, changed class by class (`create=1200,documentQuery=60`), or `off`: every
 * class 0 (no limit), a value of its own so that it wins over the defaults settings are merged onto.
 */
const rateLimits = z.string().transform((value, context): RateLimits => {
  if (value.toLowerCase() === 'off') return Object.fromEntries(RATE_LIMIT_CLASSES.map((name) => [name, 0])) as unknown as RateLimits;
  const limits: RateLimits = { ...DEFAULT_RATE_LIMITS };
  for (const part of value.split(',')) {
    const [name, count] = part.split('=').map((piece) => piece.trim());
    const perMinute = Number(count);
    if (!name || !(name in limits) || count === undefined || count === '' || !Number.isInteger(perMinute) || perMinute < 0 || perMinute > 1_000_000) {
      context.addIssue({ code: 'custom', message: 'not class=requests-per-minute pairs' });
      return z.NEVER;
    }
    limits[name as keyof RateLimits] = perMinute;
  }
  return limits;
});

const RENDERS = {
  /** Renders for people run at once in this process, every account together. Default 2: renders share the thread that serves requests. */
  concurrency: tunable({ variable: 'RENDER_CONCURRENCY', group: 'Limits', shownDefault: String(DEFAULT_RENDER_CONCURRENCY), help: 'HTML/PDF renders at once, every account together', rule: 'a whole number from 1 to 256', schema: whole(1, 256), fallback: DEFAULT_RENDER_CONCURRENCY }),
  /** Renders that may wait for a slot; one more request answers 503 BUSY with Retry-After. Default 8. */
  queue: tunable({ variable: 'RENDER_QUEUE', group: 'Limits', shownDefault: String(DEFAULT_RENDER_QUEUE), help: 'renders waiting for a slot before 503 BUSY', rule: 'a whole number from 0 to 10000', schema: whole(0, 10_000), fallback: DEFAULT_RENDER_QUEUE }),
};

const WEBHOOKS = {
  /** Accept webhook URLs on loopback/private networks (development, tests). Default false; true in the sandbox (memory) host. */
  allowPrivate: tunable({ variable: 'WEBHOOK_ALLOW_PRIVATE', group: 'Work', shownDefault: 'false', help: 'allow loopback/private webhook URLs, development only', rule: 'true or false', schema: flag, fallback: false }),
  /** Requests in flight at once per webhook endpoint. Default 16. */
  endpointConcurrency: tunable({
    variable: 'WEBHOOK_CONCURRENCY',
    group: 'Work',
    shownDefault: String(DEFAULT_ENDPOINT_CONCURRENCY),
    help: 'webhook requests in flight per endpoint',
    rule: 'a whole number from 1 to 256',
    schema: whole(1, 256),
    fallback: DEFAULT_ENDPOINT_CONCURRENCY,
  }),
  /** At most this many messages a second to each endpoint. Default: no limit. */
  rateLimitPerSecond: tunable({ variable: 'WEBHOOK_RATE_LIMIT', group: 'Work', shownDefault: 'none', help: 'webhook messages a second per endpoint', rule: 'a number of messages per second from 1 to 100000', schema: amount(1, 100_000) }),
  /**
   * How long a delivery pass's claim on its messages lasts, ms; an instance that dies holds its messages
   * this long. Keep it above the longest pass (about 500 / endpointConcurrency x 4 s). Default 5 minutes.
   */
  leaseMs: tunable({
    variable: 'WEBHOOK_LEASE_SECONDS',
    group: 'Work',
    shownDefault: String(DEFAULT_DELIVERY_LEASE_MS / 1000),
    help: "an instance's claim on the messages it sends",
    rule: 'a whole number of seconds from 10 to 3600',
    schema: whole(10, 3_600),
    toOption: (seconds: number) => seconds * 1000,
  }),
  /**
   * An endpoint whose every attempt failed this long (ms) is disabled at its next failed attempt, and the
   * account told (a `webhook.endpoint-disabled` message on its other endpoints). Default 5 days; 0 never disables.
   */
  disableAfterMs: tunable({
    variable: 'WEBHOOK_DISABLE_AFTER_DAYS',
    group: 'Work',
    shownDefault: String(DEFAULT_DISABLE_AFTER_MS / DAY_MS),
    help: 'days a webhook endpoint fails every attempt before it is disabled, or off',
    rule: '"off" or a number of days from 0.01 to 3650',
    schema: z
      .string()
      .transform((value) => (value.toLowerCase() === 'off' ? 0 : Number(value)))
      .pipe(z.number().refine((days) => days === 0 || (days >= 0.01 && days <= 3650), 'out of range')),
    fallback: DEFAULT_DISABLE_AFTER_MS / DAY_MS,
    toOption: (days: number) => Math.round(days * DAY_MS),
  }),
};

/**
 * The settings that are also options of every host, by the option's name (`webhooks` and `renders` are
 * groups of options). `Tunables` is the options' type, made from this object: the JSDoc written here is what
 * an embedder reads on `createCarebridge({ jobConcurrency })`.
 */
export const TUNABLES = {
  /**
   * Requests per minute per account by route class (429 RATE_LIMITED with Retry-After past them), e.g.
   * `DEFAULT_RATE_LIMITS`. None when absent (the service's `RATE_LIMITS` has defaults): the application
   * embedding carebridge may have its own.
   */
  rateLimits: tunable({
    variable: 'RATE_LIMITS',
    group: 'Limits',
    shownDefault: 'standard=6000,create=600,documentQuery=120,consolidated=120',
    help: 'requests a minute per account by route class, or off',
    rule: `"off" or class=requests-per-minute pairs (classes: ${RATE_LIMIT_CLASSES.join(', ')})`,
    schema: rateLimits,
    fallback: DEFAULT_RATE_LIMITS,
    optionDefault: 'none',
  }),
  /**
   * Wrong API keys allowed per client address and minute (429 TOO_MANY_FAILED_ATTEMPTS past them, for any
   * key, until Retry-After), e.g. `DEFAULT_FAILED_AUTH_PER_MINUTE`; 0 counts nothing. The address is the
   * socket's peer as `carebridge/koa` and `createNodeListener` see it; behind a proxy that is the proxy, so
   * every client shares one count. None when absent, like `rateLimits`.
   */
  failedAuthPerMinute: tunable({
    variable: 'FAILED_AUTH_LIMIT',
    group: 'Limits',
    shownDefault: String(DEFAULT_FAILED_AUTH_PER_MINUTE),
    help: 'wrong API keys a minute per client address before 429, or off',
    rule: '"off" or a whole number of wrong API keys per minute (0 to 1000000)',
    schema: offOrWhole(1_000_000),
    fallback: DEFAULT_FAILED_AUTH_PER_MINUTE,
    optionDefault: 'none',
  }),
  /**
   * Renders (consolidated data and C-CDA documents as HTML or PDF) run at once, every account together,
   * and how many more may wait for a slot; one more request answers 503 BUSY with Retry-After.
   */
  renders: RENDERS,
  /**
   * Largest C-CDA document converted, bytes; a larger one is stored and listed, and its conversion fails
   * saying its size and the limit (converting takes about 16 times a document's size in memory). Default 32 MB.
   */
  ccdaMaxBytes: tunable({
    variable: 'CCDA_MAX_MB',
    group: 'Limits',
    shownDefault: String(DEFAULT_MAX_CONVERSION_BYTES / MB),
    help: 'largest C-CDA document converted',
    rule: 'a number of megabytes from 1 to 1024',
    schema: amount(1, 1024),
    toOption: (megabytes: number) => Math.round(megabytes * MB),
  }),
  /**
   * Queued jobs run at once (imports, document queries, conversions), default 4 (1 in the sandbox host).
   * Background work (the document queries of an import) takes at most half of them, so imports and
   * queries a person started always find a slot.
   */
  jobConcurrency: tunable({
    variable: 'JOB_CONCURRENCY',
    group: 'Work',
    shownDefault: String(DEFAULT_JOB_CONCURRENCY),
    help: 'queued jobs at once; background work takes at most half',
    rule: 'a whole number from 2 to 256',
    schema: whole(2, 256),
    fallback: DEFAULT_JOB_CONCURRENCY,
  }),
  /**
   * Threads converting C-CDA documents, off the thread that serves requests. Default one per core but the
   * one that serves requests (at least 1). The sandbox host converts on its own thread.
   */
  ccdaWorkers: tunable({ variable: 'CCDA_WORKERS', group: 'Work', shownDefault: 'cores - 1 (at least 1)', help: 'C-CDA conversion threads', rule: 'a whole number from 1 to 256', schema: whole(1, 256) }),
  /**
   * Memory for patients' search indexes, in MB (estimated). Patients searched least recently are dropped
   * beyond it and rebuilt from storage on their next search. Default 64.
   */
  searchCacheMb: tunable({
    variable: 'SEARCH_CACHE_MB',
    group: 'Work',
    shownDefault: String(DEFAULT_SEARCH_CACHE_BYTES / MB),
    help: 'memory for search indexes',
    rule: 'a number of megabytes (1 or more)',
    schema: amount(1, Number.MAX_SAFE_INTEGER),
    fallback: DEFAULT_SEARCH_CACHE_BYTES / MB,
  }),
  /**
   * Days delivered webhook messages and finished queue jobs are kept before they are pruned (in small
   * batches, in the background). Default 7.
   */
  retentionDays: tunable({
    variable: 'RETENTION_DAYS',
    group: 'Work',
    shownDefault: String(DEFAULT_RETENTION_DAYS),
    help: 'days delivered webhooks and finished jobs are kept',
    rule: 'a number of days from 1 to 3650',
    schema: amount(1, 3650),
    fallback: DEFAULT_RETENTION_DAYS,
  }),
  /** Webhook delivery. */
  webhooks: WEBHOOKS,
};

type TunableTree = { readonly [name: string]: TunableSpec<never, unknown> | TunableTree };
type OptionOf<Spec> = Spec extends { toOption: (value: never) => infer Option } ? Option : Spec extends TunableSpec<infer Value> ? Value : never;

/** The options `TUNABLES` makes, every one optional, each documented where its setting is declared. */
export type Tunables<Tree = typeof TUNABLES> = { [Name in keyof Tree]?: Tree[Name] extends { variable: string } ? OptionOf<Tree[Name]> : Tunables<Tree[Name]> };

/** The options with the hosts' defaults filled in: undefined only where a setting has none for the hosts. */
export type ResolvedTunables<Tree = typeof TUNABLES> = {
  [Name in keyof Tree]: Tree[Name] extends { variable: string }
    ? Tree[Name] extends { fallback: unknown; optionDefault?: undefined }
      ? OptionOf<Tree[Name]>
      : OptionOf<Tree[Name]> | undefined
    : ResolvedTunables<Tree[Name]>;
};

function isTunable(entry: TunableSpec<never, unknown> | TunableTree): entry is TunableSpec<never, unknown> {
  return typeof (entry as { variable?: unknown }).variable === 'string';
}

function tunableLeaves(tree: TunableTree): TunableSpec<never, unknown>[] {
  return Object.values(tree).flatMap((entry) => (isTunable(entry) ? [entry] : tunableLeaves(entry)));
}

function optionOf(spec: TunableSpec<never, unknown>, value: unknown): unknown {
  return value === undefined || !spec.toOption ? value : (spec.toOption as (given: unknown) => unknown)(value);
}

function resolveTree(tree: TunableTree, given: Record<string, unknown> | undefined, overrides: Record<string, unknown> | undefined): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(tree).map(([name, entry]) => {
      if (!isTunable(entry)) return [name, resolveTree(entry, given?.[name] as Record<string, unknown> | undefined, overrides?.[name] as Record<string, unknown> | undefined)];
      const fallback = entry.optionDefault === 'none' ? undefined : optionOf(entry, entry.fallback);
      return [name, given?.[name] ?? overrides?.[name] ?? fallback];
    }),
  );
}

function optionsFromValues(tree: TunableTree, values: ReadonlyMap<string, unknown>): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(tree)) {
    if (!isTunable(entry)) {
      const group = optionsFromValues(entry, values);
      if (Object.keys(group).length > 0) options[name] = group;
      continue;
    }
    const value = values.get(entry.variable);
    if (value !== undefined) options[name] = optionOf(entry, value);
  }
  return options;
}

/**
 * The options the settings' values give (`readSettings`), each under its name in `TUNABLES` and converted
 * as its entry says (days to milliseconds, megabytes to bytes...); a setting with no value and no default
 * is absent.
 */
export function tunablesFromValues(values: ReadonlyMap<string, unknown>): Tunables {
  return optionsFromValues(TUNABLES as unknown as TunableTree, values) as Tunables;
}

/**
 * The tunables a host runs with: each given option, else the host's own default where it states one
 * (`overrides`: the sandbox's, say), else the setting's default in the table.
 */
export function resolveTunables(given: Tunables, overrides: Tunables = {}): ResolvedTunables {
  return resolveTree(TUNABLES as unknown as TunableTree, given as Record<string, unknown>, overrides as Record<string, unknown>) as ResolvedTunables;
}

const SERVICE_SETTINGS: readonly SettingSpec[] = [
  { variable: 'PORT', group: 'Settings', shownDefault: '8080', help: 'port to listen on; 0 picks a free one', rule: 'a port number (0-65535)', schema: whole(0, 65_535), fallback: 8080 },
  { variable: 'HOST', group: 'Settings', shownDefault: 'every interface', help: 'address to listen on', rule: 'an address', schema: text },
  { variable: 'DATA_DIR', group: 'Settings', shownDefault: './data', help: 'SQLite file, files, generated URL signing secret', rule: 'a directory', schema: text, fallback: './data' },
  { variable: 'DATABASE_URL', group: 'Settings', shownDefault: 'SQLite in DATA_DIR', help: 'postgres://... or sqlite:<file>', rule: 'a database URL', schema: text },
  { variable: 'DATABASE_SCHEMA', group: 'Settings', shownDefault: 'public', help: 'PostgreSQL schema', rule: 'a schema name', schema: text },
  {
    variable: 'PUBLIC_URL',
    group: 'Settings',
    shownDefault: 'http://localhost:<port>',
    help: 'base of the URLs handed out',
    rule: 'a URL starting with http:// or https://',
    schema: text.regex(/^https?:\/\/[^/]/),
  },
  { variable: 'URL_SIGNING_SECRET', group: 'Settings', shownDefault: 'generated', help: 'secret of pre-signed URLs, kept in DATA_DIR when generated', rule: 'a secret', schema: text },
  { variable: 'LOG_LEVEL', group: 'Settings', shownDefault: 'info', help: 'pino level', rule: `one of ${LOG_LEVELS.join(', ')}`, schema: z.string().transform((value) => value.toLowerCase()).pipe(z.enum(LOG_LEVELS)), fallback: 'info' },
  { variable: 'SANDBOX_DOCUMENTS_DIR', group: 'Settings', shownDefault: 'sandbox-data/ccda', help: 'folder of C-CDA documents the sandbox HIE serves', rule: 'a directory' },

  { variable: 'BLOB_URL', group: 'Files in a bucket', shownDefault: 'files in DATA_DIR/blobs', help: 's3://bucket/prefix for files', rule: 'an s3:// URL' },
  { variable: 'S3_ENDPOINT', group: 'Files in a bucket', shownDefault: 'AWS', help: 'an S3-compatible server instead of AWS, e.g. http://minio:9000', rule: 'a URL' },
  { variable: 'S3_REGION', group: 'Files in a bucket', shownDefault: 'AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1', help: "the bucket's region", rule: 'a region' },
  { variable: 'S3_FORCE_PATH_STYLE', group: 'Files in a bucket', shownDefault: 'false', help: 'true: the bucket in the path, as most S3-compatible servers want', rule: 'true or false' },
  {
    variable: 'S3_ACCESS_KEY_ID',
    group: 'Files in a bucket',
    shownDefault: 'AWS_ACCESS_KEY_ID, else the instance role or profile',
    help: "with S3_SECRET_ACCESS_KEY: the bucket's credentials",
    rule: 'a key id',
  },
  { variable: 'S3_SECRET_ACCESS_KEY', group: 'Files in a bucket', shownDefault: 'AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN', help: 'with S3_ACCESS_KEY_ID', rule: 'a secret' },

  {
    variable: 'HEADERS_TIMEOUT_SECONDS',
    group: 'Limits',
    shownDefault: String(DEFAULT_HEADERS_TIMEOUT_SECONDS),
    help: "time to send a request's headers, then 408 and close",
    rule: 'a whole number from 1 to 3600',
    schema: whole(1, 3_600),
    fallback: DEFAULT_HEADERS_TIMEOUT_SECONDS,
  },
  {
    variable: 'REQUEST_TIMEOUT_SECONDS',
    group: 'Limits',
    shownDefault: String(DEFAULT_REQUEST_TIMEOUT_SECONDS),
    help: 'time to send a whole request, uploads included',
    rule: 'a whole number from 1 to 86400',
    schema: whole(1, 86_400),
    fallback: DEFAULT_REQUEST_TIMEOUT_SECONDS,
  },
  {
    variable: 'KEEP_ALIVE_TIMEOUT_SECONDS',
    group: 'Limits',
    shownDefault: String(DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS),
    help: 'idle time before a kept-alive connection is closed',
    rule: 'a whole number from 1 to 3600',
    schema: whole(1, 3_600),
    fallback: DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS,
  },
  {
    variable: 'MAX_CONNECTIONS',
    group: 'Limits',
    shownDefault: String(DEFAULT_MAX_CONNECTIONS),
    help: 'connections open at once; more are closed unanswered',
    rule: 'a whole number from 1 to 1000000',
    schema: whole(1, 1_000_000),
    fallback: DEFAULT_MAX_CONNECTIONS,
  },
];

const GROUPS: readonly SettingSpec['group'][] = ['Settings', 'Files in a bucket', 'Limits', 'Work'];

/**
 * Every setting, by group (the order of `serve --help` and the README's table): within a group the
 * tunables first, in the order of `TUNABLES`, then the service's own.
 */
export const SETTINGS: readonly SettingSpec[] = [...tunableLeaves(TUNABLES as unknown as TunableTree), ...SERVICE_SETTINGS].sort(
  (a, b) => GROUPS.indexOf(a.group) - GROUPS.indexOf(b.group),
);

/**
 * The values of the settings that have a schema, by variable: parsed from the trimmed text, the fallback
 * when unset or blank, absent when neither. Throws naming the variable, its rule and the text given.
 */
export function readSettings(env: NodeJS.ProcessEnv): Map<string, unknown> {
  const values = new Map<string, unknown>();
  for (const setting of SETTINGS) {
    if (!setting.schema) continue;
    const given = env[setting.variable]?.trim();
    if (given === undefined || given === '') {
      if (setting.fallback !== undefined) values.set(setting.variable, setting.fallback);
      continue;
    }
    const parsed = setting.schema.safeParse(given);
    if (!parsed.success) throw new Error(`${setting.variable} must be ${setting.rule}, not "${given}"`);
    values.set(setting.variable, parsed.data);
  }
  return values;
}

/** `carebridge serve --help`, from the table. */
export function serveUsage(): string {
  const lines = ['carebridge serve — runs the HTTP service (same as npm start)', '', 'Settings, from the environment (the README\'s settings table says more):'];
  let group: SettingSpec['group'] | undefined;
  for (const setting of SETTINGS) {
    if (setting.group !== group) {
      if (group !== undefined) lines.push('', `${setting.group}:`);
      group = setting.group;
    }
    const line = `  ${setting.variable.padEnd(28)}${setting.help} (default ${setting.shownDefault})`;
    lines.push(line);
  }
  return `${lines.join('\n')}\n`;
}
