import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * PostgreSQL for tests: 127.0.0.1:5432, database `test`, user `postgres` (trust auth), unless
 * `CAREBRIDGE_TEST_PG_URL` says otherwise. Each suite works in its own schema and drops it afterwards.
 *
 * Usage in a test file:
 *   const pgProbe = await probePostgres();
 *   describe.skipIf(!pgProbe.available)('... on PostgreSQL', () => {
 *     // per test: const schema = await createPgSchema('queue'); ... finally await schema.drop();
 *   });
 *
 * Under CI (`CI` set) an unreachable server throws, so the run fails instead of silently skipping.
 */
export const PG_TEST_URL = process.env.CAREBRIDGE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type PgProbe = { available: true; url: string } | { available: false; reason: string };

export interface PgSchema {
  /** Connection URL of the test database (the schema is not in it: pass `schema` too). */
  url: string;
  /** A fresh, uniquely named schema, e.g. for `SequelizeStorage.open({ url, schema })`. */
  schema: string;
  host: string;
  port: number;
  user: string;
  database: string;
  /** Drops the schema and everything in it. Close the connections that use it first. Idempotent. */
  drop(): Promise<void>;
}

const SCHEMA_PREFIX = 'cbt_';
/** Schemas a crashed run left behind are dropped once older than this. */
const STALE_AFTER_MS = 60 * 60 * 1000;

let probe: Promise<PgProbe> | undefined;

/** Whether the test database answers; probed once per process. Throws under CI when it does not. */
export function probePostgres(): Promise<PgProbe> {
  probe ??= (async (): Promise<PgProbe> => {
    const client = new pg.Client({ connectionString: PG_TEST_URL, connectionTimeoutMillis: 3_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      await dropStaleSchemas(client);
      return { available: true, url: PG_TEST_URL };
    } catch (error) {
      const reason = `PostgreSQL at ${redact(PG_TEST_URL)} is unreachable (${(error as Error).message})`;
      if (process.env.CI) throw new Error(`${reason}; CI requires the PostgreSQL suites to run`, { cause: error });
      console.warn(`SKIPPED PostgreSQL suites: ${reason}. Start PostgreSQL 15 on 127.0.0.1:5432 (database "test") to run them.`);
      return { available: false, reason };
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return probe;
}

/** Creates a uniquely named schema in the test database. */
export async function createPgSchema(label = 'test'): Promise<PgSchema> {
  const safeLabel = label.toLowerCase().replace(/[^a-z0-9]/g, '').slice(0, 20) || 'test';
  const schema = `${SCHEMA_PREFIX}${safeLabel}_${Date.now().toString(36)}_${randomBytes(5).toString('hex')}`;
  await withClient((client) => client.query(`CREATE SCHEMA ${schema}`));
  const url = new URL(PG_TEST_URL);
  let dropped = false;
  return {
    url: PG_TEST_URL,
    schema,
    host: url.hostname,
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username),
    database: url.pathname.slice(1),
    async drop() {
      if (dropped) return;
      dropped = true;
      await withClient((client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
    },
  };
}

async function withClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_TEST_URL, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function dropStaleSchemas(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname LIKE '${SCHEMA_PREFIX}%'`);
  for (const { nspname } of rows) {
    const stamp = nspname.split('_').at(-2);
    const created = stamp === undefined ? NaN : parseInt(stamp, 36);
    if (Number.isFinite(created) && Date.now() - created > STALE_AFTER_MS) {
      await client.query(`DROP SCHEMA IF EXISTS ${nspname} CASCADE`).catch(() => undefined);
    }
  }
}

function redact(connectionString: string): string {
  const url = new URL(connectionString);
  if (url.password) url.password = '***';
  return url.toString();
}
