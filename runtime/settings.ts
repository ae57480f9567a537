import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { blobSettingsFromEnv, type BlobSettings } from './blob-settings.js';
import { readSettings, tunablesFromValues, type Tunables } from './settings-table.js';

/**
 * What the service reads from its environment: the settings of the service alone (its server, files,
 * database, bucket), and `tunables`, the options every host takes, made from their variables in the table
 * (`TUNABLES` in settings-table.ts, where each is documented once).
 */
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
  /** `URL_SIGNING_SECRET`: else generated once and kept in DATA_DIR, so URLs survive restarts. */
  urlSigningSecret?: string;
  /** `LOG_LEVEL`: pino level, `info`. */
  logLevel: string;
  /** `HEADERS_TIMEOUT_SECONDS`: time a client has to send a request's headers, 30; then 408 and the connection is closed. */
  headersTimeoutMs: number;
  /** `REQUEST_TIMEOUT_SECONDS`: time a client has to send a whole request, 300 (an upload may be 200 MB); then 408. */
  requestTimeoutMs: number;
  /** `KEEP_ALIVE_TIMEOUT_SECONDS`: how long an idle connection is kept open for a next request, 5. */
  keepAliveTimeoutMs: number;
  /** `MAX_CONNECTIONS`: connections open at once, 1024; past it a new connection is closed unanswered. */
  maxConnections: number;
  /** The options every host takes, as the environment sets them or the table defaults them. */
  tunables: Tunables;
}

/** Settings from environment variables (the table in settings-table.ts); throws with the variable's name when one is malformed. */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): ServiceSettings {
  const read = readSettings(env);
  const value = <T>(variable: string) => read.get(variable) as T;
  const seconds = (variable: string) => value<number>(variable) * 1000;
  if (value<number>('HEADERS_TIMEOUT_SECONDS') > value<number>('REQUEST_TIMEOUT_SECONDS')) {
    throw new Error('HEADERS_TIMEOUT_SECONDS must not be more than REQUEST_TIMEOUT_SECONDS: the headers are part of the request');
  }
  const settings: ServiceSettings = {
    port: value('PORT'),
    dataDir: value('DATA_DIR'),
    logLevel: value('LOG_LEVEL'),
    headersTimeoutMs: seconds('HEADERS_TIMEOUT_SECONDS'),
    requestTimeoutMs: seconds('REQUEST_TIMEOUT_SECONDS'),
    keepAliveTimeoutMs: seconds('KEEP_ALIVE_TIMEOUT_SECONDS'),
    maxConnections: value('MAX_CONNECTIONS'),
    tunables: tunablesFromValues(read),
  };
  // Settings with no default stay absent rather than present as undefined.
  const optional = {
    host: value<string | undefined>('HOST'),
    databaseUrl: value<string | undefined>('DATABASE_URL'),
    databaseSchema: value<string | undefined>('DATABASE_SCHEMA'),
    publicUrl: value<string | undefined>('PUBLIC_URL'),
    urlSigningSecret: value<string | undefined>('URL_SIGNING_SECRET'),
    ...blobSettingsFromEnv(env),
  };
  for (const [name, given] of Object.entries(optional)) if (given !== undefined) Object.assign(settings, { [name]: given });
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
