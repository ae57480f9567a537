import { stat } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CarebridgeApiError, CarebridgeClient, CarebridgeError, CarebridgeNetworkError } from '../../client/index.js';
import { settingsFromEnv } from '../../runtime/settings.js';
import { serveUsage } from '../../runtime/settings-table.js';

/** Where the CLI writes and what it reads: the process in `main.ts`, collectors in tests. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  /** Whether stderr is a terminal: the import progress then redraws one line instead of printing many. */
  interactive?: boolean;
}

export const USAGE = `carebridge — the carebridge medical data service and its operator tools

Usage:
  carebridge serve
      Runs the HTTP service (same as npm start). Settings come from the environment; "carebridge serve
      --help" lists them with their defaults.

  carebridge account create --name NAME [--json]
      Creates an account directly in the database (DATABASE_URL or DATA_DIR) and prints its id and API
      key. The key is shown this once: only its hash is stored.
  carebridge account list [--json]
      Lists accounts: id, name, the visible start of the key, creation time.
  carebridge account rotate-key --id ACCOUNT_ID [--json]
      Gives the account a new API key (shown this once) and retires the old one: running services stop
      accepting it within 5 seconds (they remember a key's account that long).

  carebridge facility create --name NAME --npi NPI --address-line1 LINE [--address-line2 LINE]
                             --city CITY --state ST --zip ZIP [--tin TIN] [--api-key KEY] [--url URL] [--json]
      Creates a facility through the API of a running service.

  carebridge import FILE.csv [--facility ID] [--dry-run] [--out RESULT.csv] [--api-key KEY] [--url URL] [--json]
      Runs a bulk patient create against a running service: starts the request, uploads the file
      (streamed), shows progress, and writes the result CSV (default: FILE.result.csv).

  --api-key defaults to $CAREBRIDGE_API_KEY; --url to $CAREBRIDGE_URL, else $PUBLIC_URL, else
  http://localhost:$PORT (8080).
`;

export const SERVE_USAGE = serveUsage();

class UsageError extends Error {}

/** A failure the user can act on, already worded; the CLI prints it and exits 1. */
class CliFailure extends Error {}

type Values = Record<string, string | boolean | undefined>;

function parse(args: string[], options: ParseArgsConfig['options']): { values: Values; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
    return { values: values as Values, positionals };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

function optional(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

/**
 * Runs one CLI command. Returns the exit code: 0 done, 1 failed (the service refused, the import failed),
 * 2 wrong usage. Never prints row data: only counts, ids and the service's own messages.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        if (parse(rest, {}).values.help) {
          io.stdout(SERVE_USAGE);
          return 0;
        }
        // Loaded on demand, like the database modules below: the HTTP-only commands start faster without them.
        return await (await import('./run.js')).runService(io.env);
      case 'account':
        return await accountCommand(rest, io);
      case 'facility':
        return await facilityCommand(rest, io);
      case 'import':
        return await importCommand(rest, io);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.stdout(USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`carebridge: ${error.message}\nRun "carebridge help" for usage.\n`);
      return 2;
    }
    if (error instanceof CliFailure) {
      io.stderr(`carebridge: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

async function accountCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'create' && sub !== 'list' && sub !== 'rotate-key') {
    throw new UsageError(`account: expected "create", "list" or "rotate-key", got ${sub ? `"${sub}"` : 'nothing'}`);
  }
  const { values } = parse(rest, { name: { type: 'string' }, id: { type: 'string' }, json: { type: 'boolean' } });
  const settings = settingsFromEnv(io.env);
  const [{ rotateApiKey }, { createRuntime }] = await Promise.all([import('../../core/accounts.js'), import('../../runtime/runtime.js')]);
  // The service's own runtime, with nothing running in the background and nothing resumed: an account
  // command only reads and writes accounts, next to a service that may be running on the same database.
  const runtime = await createRuntime({
    profile: {
      kind: 'sql',
      dataDir: settings.dataDir,
      ...(settings.databaseUrl ? { database: settings.databaseUrl } : {}),
      ...(settings.databaseSchema ? { databaseSchema: settings.databaseSchema } : {}),
      registerInstance: false,
    },
    publicUrl: settings.publicUrl ?? 'http://localhost',
    ...(settings.urlSigningSecret ? { urlSigningSecret: settings.urlSigningSecret } : {}),
    ccda: 'in-process',
    resumeInterruptedWork: false,
  });
  const { storage, secrets } = runtime.deps;
  try {
    if (sub === 'list') {
      const accounts = await storage.accounts.list();
      if (values.json) io.stdout(`${JSON.stringify(accounts.map(({ id, name, apiKeyPrefix, createdAt }) => ({ id, name, apiKeyPrefix, createdAt })))}\n`);
      else for (const account of accounts) io.stdout(`${account.id}  ${account.apiKeyPrefix}…  ${account.createdAt}  ${account.name}\n`);
      return 0;
    }
    if (sub === 'rotate-key') {
      const id = required(values, 'id');
      const { apiKey } = await rotateApiKey({ storage, secrets }, id).catch((error: unknown) => {
        throw (error as { code?: unknown }).code === 'NOT_FOUND' ? new CliFailure(`no account with id ${id}`) : error;
      });
      if (values.json) io.stdout(`${JSON.stringify({ accountId: id, apiKey })}\n`);
      else io.stdout(`New API key for account ${id}, shown this once (the old key stops working within 5 seconds):\n\n  ${apiKey}\n\n`);
      return 0;
    }
    const name = required(values, 'name');
    const { accountId, apiKey } = await runtime.createAccount(name);
    if (values.json) {
      io.stdout(`${JSON.stringify({ accountId, apiKey })}\n`);
    } else {
      io.stdout(`Created account ${accountId} (${name}).\nAPI key, shown this once:\n\n  ${apiKey}\n\n`);
    }
    return 0;
  } finally {
    await runtime.close();
  }
}

interface Target {
  baseUrl: string;
  apiKey: string;
}

function targetOf(values: Values, env: NodeJS.ProcessEnv): Target {
  const apiKey = optional(values, 'api-key') ?? env.CAREBRIDGE_API_KEY;
  if (!apiKey) throw new UsageError('--api-key (or CAREBRIDGE_API_KEY) is required');
  const baseUrl = optional(values, 'url') ?? env.CAREBRIDGE_URL ?? env.PUBLIC_URL ?? `http://localhost:${env.PORT || 8080}`;
  if (!/^https?:\/\//.test(baseUrl)) throw new UsageError('--url must start with http:// or https://');
  return { baseUrl: baseUrl.replace(/\/+$/, ''), apiKey };
}

function clientOf(target: Target): CarebridgeClient {
  return new CarebridgeClient({ apiKey: target.apiKey, baseUrl: target.baseUrl });
}

/** Runs a call of the client; its failures become one line a person can act on. */
async function attempt<T>(target: Target, what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CarebridgeApiError) {
      throw new CliFailure(error.problem.detail ? `${what}: ${error.problem.detail} (${error.status} ${error.code})` : `${what}: HTTP ${error.status}`);
    }
    if (error instanceof CarebridgeNetworkError && error.code === 'NETWORK_ERROR') {
      const cause = error.cause instanceof Error ? (error.cause.cause instanceof Error ? error.cause.cause.message : error.cause.message) : error.message;
      throw new CliFailure(`cannot reach the service at ${target.baseUrl} (${cause}); is it running?`);
    }
    if (error instanceof CarebridgeError) throw new CliFailure(`${what}: ${error.message}`);
    throw error;
  }
}

async function facilityCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'create') throw new UsageError(`facility: expected "create", got ${sub ? `"${sub}"` : 'nothing'}`);
  const { values } = parse(rest, {
    name: { type: 'string' },
    npi: { type: 'string' },
    tin: { type: 'string' },
    'address-line1': { type: 'string' },
    'address-line2': { type: 'string' },
    city: { type: 'string' },
    state: { type: 'string' },
    zip: { type: 'string' },
    'api-key': { type: 'string' },
    url: { type: 'string' },
    json: { type: 'boolean' },
  });
  const body = {
    name: required(values, 'name'),
    npi: required(values, 'npi'),
    ...(optional(values, 'tin') ? { tin: optional(values, 'tin') } : {}),
    address: {
      addressLine1: required(values, 'address-line1'),
      ...(optional(values, 'address-line2') ? { addressLine2: optional(values, 'address-line2') } : {}),
      city: required(values, 'city'),
      state: required(values, 'state'),
      zip: required(values, 'zip'),
      country: 'USA' as const,
    },
  };
  const target = targetOf(values, io.env);
  const facility = await attempt(target, 'the facility was not created', () => clientOf(target).createFacility(body));
  io.stdout(values.json ? `${JSON.stringify(facility)}\n` : `Created facility ${facility.id} (${facility.name}).\n`);
  return 0;
}

interface BulkStatus {
  requestId: string;
  status: 'waiting' | 'processing' | 'completed' | 'failed' | 'expired';
  reason?: string;
  total: number | null;
  processed: number;
  succeeded: number;
  failed: number;
  created: number;
  updated: number;
  result?: string;
}

/** `[#####...............]  25%  250/1000 rows  (240 ok, 10 failed)` */
export function progressLine(status: Pick<BulkStatus, 'status' | 'total' | 'processed' | 'succeeded' | 'failed'>, width = 24): string {
  const total = status.total ?? 0;
  const ratio = total > 0 ? Math.min(1, status.processed / total) : 0;
  const filled = Math.round(ratio * width);
  const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
  const percent = `${String(Math.floor(ratio * 100)).padStart(3)}%`;
  return `${bar} ${percent}  ${status.processed}/${total} rows  (${status.succeeded} ok, ${status.failed} failed)  ${status.status}`;
}

function defaultResultPath(file: string): string {
  const extension = extname(file);
  return join(dirname(file), `${basename(file, extension)}.result.csv`);
}

async function importCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(args, {
    facility: { type: 'string' },
    'dry-run': { type: 'boolean' },
    out: { type: 'string' },
    'api-key': { type: 'string' },
    url: { type: 'string' },
    json: { type: 'boolean' },
    'poll-ms': { type: 'string' },
  });
  if (positionals.length !== 1) throw new UsageError('import: give exactly one CSV file');
  const file = positionals[0]!;
  const target = targetOf(values, io.env);
  const pollMs = Number(optional(values, 'poll-ms') ?? 500);
  if (!Number.isFinite(pollMs) || pollMs < 10) throw new UsageError('--poll-ms must be a number of milliseconds, at least 10');
  const out = optional(values, 'out') ?? defaultResultPath(file);
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch {
    throw new CliFailure(`cannot read ${file}`);
  }

  const client = clientOf(target);
  const facilityId = optional(values, 'facility');
  const started = await attempt(target, 'the bulk create did not start', () =>
    client.startBulkPatientCreate({ ...(facilityId ? { facilityId } : {}), ...(values['dry-run'] ? { dryRun: true } : {}) }),
  );
  const { requestId, uploadUrl } = started;
  io.stderr(`Bulk request ${requestId}: uploading ${basename(file)} (${size} bytes)${values['dry-run'] ? ', dry run' : ''}\n`);
  // Streamed from disk: a large file is never read whole into memory.
  await attempt(target, 'the file was refused', () => client.uploadBulkPatientCsv(uploadUrl, { path: file }));

  let lastLine = '';
  const final = await attempt(target, 'cannot read the bulk request status', () =>
    client.waitForBulkPatientCreate(requestId, {
      pollMs,
      onProgress: (status) => {
        const line = progressLine(status);
        if (io.interactive) io.stderr(`\r\u001b[2K${line}`);
        else if (line !== lastLine) io.stderr(`${line}\n`);
        lastLine = line;
      },
    }),
  );
  if (io.interactive) io.stderr('\n');
  if (final.status !== 'completed') {
    throw new CliFailure(`bulk request ${requestId} ${final.status}${final.reason ? `: ${final.reason}` : ''}`);
  }
  if (!final.result) throw new CliFailure(`bulk request ${requestId} completed without a result file`);
  await attempt(target, 'the result file could not be downloaded', () => client.downloadBulkPatientCreateResult(final, out));

  if (values.json) io.stdout(`${JSON.stringify({ ...final, resultFile: out })}\n`);
  else {
    const counts = `${final.succeeded} succeeded (${final.created} created, ${final.updated} updated), ${final.failed} failed`;
    io.stdout(`Bulk request ${requestId} completed: ${counts}. Result: ${out}\n`);
  }
  return 0;
}

