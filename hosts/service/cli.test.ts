import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startService, type ServiceHandle } from './service.js';
import { progressLine, runCli, type CliIo } from './cli.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HEADER = 'externalId,firstName,lastName,dob,gender,addressLine1,city,state,zip';
const row = (n: number, dob = '1980-01-15') => `ext-${n},Jane${String.fromCharCode(97 + (n % 26))},Doe${n},${dob},F,1 Main St,Springfield,IL,62701`;

let dataDir: string;
let service: ServiceHandle;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'carebridge-cli-'));
  // The service runs its background work, as in production: the CLI only polls.
  service = await startService({ port: 0, host: '127.0.0.1', dataDir, pollMs: 50, sandboxAccount: false, logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await service.close();
  await rm(dataDir, { recursive: true, force: true });
});

function io(env: NodeJS.ProcessEnv = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => (out += text),
    stderr: (text) => (err += text),
    env: { DATA_DIR: dataDir, ...env },
    out: () => out,
    err: () => err,
  };
}

async function newAccount(name: string): Promise<{ accountId: string; apiKey: string }> {
  const cli = io();
  expect(await runCli(['account', 'create', '--name', name, '--json'], cli)).toBe(0);
  return JSON.parse(cli.out()) as { accountId: string; apiKey: string };
}

async function createFacility(apiKey: string, name = 'CLI Clinic'): Promise<string> {
  const cli = io({ CAREBRIDGE_URL: service.url });
  const code = await runCli(
    ['facility', 'create', '--name', name, '--npi', '1234567893', '--address-line1', '1 Main St', '--city', 'Springfield', '--state', 'IL', '--zip', '62701', '--api-key', apiKey, '--json'],
    cli,
  );
  expect(code, cli.err()).toBe(0);
  return (JSON.parse(cli.out()) as { id: string }).id;
}

describe('carebridge account', () => {
  test('create writes to the database directly and prints the key once; the running service accepts it', async () => {
    const { accountId, apiKey } = await newAccount('CLI Account');
    expect(apiKey).toMatch(/^cb_/);
    const response = await fetch(`${service.url}/medical/v1/facility`, { headers: { 'x-api-key': apiKey } });
    expect(response.status).toBe(200);

    const human = io();
    expect(await runCli(['account', 'create', '--name', 'Second'], human)).toBe(0);
    expect(human.out()).toMatch(/Created account [0-9a-f-]{36} \(Second\)\.\nAPI key, shown this once:\n\n {2}cb_\S+\n/);

    const list = io();
    expect(await runCli(['account', 'list', '--json'], list)).toBe(0);
    const accounts = JSON.parse(list.out()) as { id: string; name: string; apiKeyPrefix: string }[];
    expect(accounts.find((account) => account.id === accountId)).toMatchObject({ name: 'CLI Account', apiKeyPrefix: apiKey.slice(0, 10) });
    expect(list.out()).not.toContain(apiKey);
  });

  test('rotate-key prints a new key that works at once; the old key is refused; an unknown id exits 1', async () => {
    const { accountId, apiKey: oldKey } = await newAccount('Rotating');
    const rotated = io();
    expect(await runCli(['account', 'rotate-key', '--id', accountId, '--json'], rotated), rotated.err()).toBe(0);
    const { apiKey: newKey } = JSON.parse(rotated.out()) as { apiKey: string };
    expect(newKey).toMatch(/^cb_/);
    expect(newKey).not.toBe(oldKey);
    expect((await fetch(`${service.url}/medical/v1/facility`, { headers: { 'x-api-key': newKey } })).status).toBe(200);
    // The old key was never used on this service, so no process remembers it: refused at once.
    expect((await fetch(`${service.url}/medical/v1/facility`, { headers: { 'x-api-key': oldKey } })).status).toBe(401);
    const unknown = io();
    expect(await runCli(['account', 'rotate-key', '--id', '00000000-0000-7000-8000-000000000000'], unknown)).toBe(1);
    expect(unknown.err()).toMatch(/no account with id/);
  });

  test('usage errors exit 2 with a message', async () => {
    const missing = io();
    expect(await runCli(['account', 'create'], missing)).toBe(2);
    expect(missing.err()).toContain('--name is required');
    const unknown = io();
    expect(await runCli(['account', 'create', '--name', 'X', '--colour', 'red'], unknown)).toBe(2);
    expect(unknown.err()).toContain('--colour');
    expect(await runCli(['frobnicate'], io())).toBe(2);
    const help = io();
    expect(await runCli(['help'], help)).toBe(0);
    expect(help.out()).toContain('carebridge import FILE.csv');
  });

  test('serve --help lists the settings with their defaults, limits and timeouts included, and starts nothing', async () => {
    const help = io();
    expect(await runCli(['serve', '--help'], help)).toBe(0);
    for (const [name, fallback] of [
      ['HEADERS_TIMEOUT_SECONDS', '30'],
      ['REQUEST_TIMEOUT_SECONDS', '300'],
      ['KEEP_ALIVE_TIMEOUT_SECONDS', '5'],
      ['MAX_CONNECTIONS', '1024'],
      ['FAILED_AUTH_LIMIT', '20'],
      ['RENDER_CONCURRENCY', '2'],
      ['RENDER_QUEUE', '8'],
      ['RATE_LIMITS', 'standard=6000'],
    ]) {
      expect(help.out()).toMatch(new RegExp(`\\n  ${name}\\s[^(]*\\(default ${fallback}`));
    }
  });
});

test('serve --help names every setting the service reads from the environment', async () => {
  // The names are taken from the code that reads them (the table, whose entries the service's settings
  // walk, and the readers beside it), so a new setting without a line here fails.
  const root = new URL('../../runtime/', import.meta.url);
  const read = (file: string) => readFileSync(new URL(file, root), 'utf8');
  const source = ['settings.ts', 'blob-settings.ts', 'sandbox-documents.ts'].map(read).join('\n');
  const names = new Set([
    ...[...source.matchAll(/env\.([A-Z][A-Z0-9_]+)|['`]([A-Z][A-Z0-9]*_[A-Z0-9_]+)['`]/g)].map((match) => match[1] ?? match[2]!),
    ...[...read('settings-table.ts').matchAll(/variable: '([A-Z][A-Z0-9_]+)'/g)].map((match) => match[1]!),
  ]);
  expect(names.size).toBeGreaterThan(25);
  const help = io();
  expect(await runCli(['serve', '--help'], help)).toBe(0);
  const missing = [...names].filter((name) => !new RegExp(`\\b${name}\\b`).test(help.out()));
  expect(missing).toEqual([]);
});

describe('carebridge facility create', () => {
  test('creates through the API; a refusal is reported with the service detail and exit 1', async () => {
    const { apiKey } = await newAccount('Facility Account');
    const id = await createFacility(apiKey);
    const listed = (await (await fetch(`${service.url}/medical/v1/facility`, { headers: { 'x-api-key': apiKey } })).json()) as { facilities: { id: string }[] };
    expect(listed.facilities.map((f) => f.id)).toEqual([id]);

    const bad = io({ CAREBRIDGE_URL: service.url, CAREBRIDGE_API_KEY: apiKey });
    const code = await runCli(['facility', 'create', '--name', 'X', '--npi', '1234567890', '--address-line1', '1 Main', '--city', 'C', '--state', 'IL', '--zip', '62701'], bad);
    expect(code).toBe(1);
    expect(bad.err()).toMatch(/npi.*VALIDATION_FAILED/);

    const noKey = io({ CAREBRIDGE_URL: service.url });
    expect(await runCli(['facility', 'create', '--name', 'X', '--npi', '1', '--address-line1', 'a', '--city', 'c', '--state', 'IL', '--zip', '62701'], noKey)).toBe(2);
    const wrongKey = io({ CAREBRIDGE_URL: service.url });
    expect(await runCli(['facility', 'create', '--name', 'X', '--npi', '1234567893', '--address-line1', 'a', '--city', 'c', '--state', 'IL', '--zip', '62701', '--api-key', 'cb_nope'], wrongKey)).toBe(1);
    expect(wrongKey.err()).toContain('UNAUTHORIZED');
  });
});

describe('carebridge import', () => {
  test('uploads the file, shows progress on stderr, writes the result CSV; rows and patients match', async () => {
    const { apiKey } = await newAccount('Import Account');
    await createFacility(apiKey);
    const dir = await mkdtemp(join(tmpdir(), 'carebridge-cli-import-'));
    try {
      const file = join(dir, 'patients.csv');
      const rows = Array.from({ length: 300 }, (_, i) => row(i, i % 30 === 0 ? '1980-02-30' : '1980-01-15'));
      await writeFile(file, [HEADER, ...rows].join('\n') + '\n');
      const cli = io({ CAREBRIDGE_URL: service.url, CAREBRIDGE_API_KEY: apiKey });
      const code = await runCli(['import', file, '--poll-ms', '50'], cli);
      expect(code, cli.err()).toBe(0);
      expect(cli.err()).toMatch(/Bulk request [0-9a-f-]{36}: uploading patients\.csv \(\d+ bytes\)/);
      expect(cli.err()).toContain('300/300 rows  (290 ok, 10 failed)  completed');
      expect(cli.out()).toContain('completed: 290 succeeded (290 created, 0 updated), 10 failed. Result: ');

      const result = parse(await readFile(join(dir, 'patients.result.csv'), 'utf8'), { relax_column_count: true }) as string[][];
      expect(result[0]).toEqual([...HEADER.split(','), 'metriportId', 'status', 'reason']);
      expect(result).toHaveLength(301);
      expect(result.filter((r) => r.at(-2) === 'failed')).toHaveLength(10);
      const patients = (await (await fetch(`${service.url}/medical/v1/patient?count=500`, { headers: { 'x-api-key': apiKey } })).json()) as { patients: unknown[] };
      expect(patients.patients).toHaveLength(290);
      // Progress and summary carry counts and ids only, never a cell of the file.
      expect(cli.err() + cli.out()).not.toMatch(/Jane|Doe|ext-/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('--dry-run creates nothing; --out and --facility are honoured; a file that is not CSV fails with its reason', async () => {
    const { apiKey } = await newAccount('Dry Account');
    await createFacility(apiKey, 'One');
    const second = await createFacility(apiKey, 'Two');
    const dir = await mkdtemp(join(tmpdir(), 'carebridge-cli-import-'));
    try {
      const file = join(dir, 'in.csv');
      await writeFile(file, [HEADER, row(1), row(2, 'bad')].join('\r\n'));
      const env = { CAREBRIDGE_URL: service.url, CAREBRIDGE_API_KEY: apiKey };

      const ambiguous = io(env);
      expect(await runCli(['import', file], ambiguous)).toBe(1);
      expect(ambiguous.err()).toContain('FACILITY_REQUIRED');

      const dry = io(env);
      const out = join(dir, 'dry.csv');
      expect(await runCli(['import', file, '--facility', second, '--dry-run', '--out', out, '--poll-ms', '50', '--json'], dry), dry.err()).toBe(0);
      expect(JSON.parse(dry.out())).toMatchObject({ status: 'completed', succeeded: 1, failed: 1, resultFile: out });
      expect((await readFile(out, 'utf8')).split(/\r?\n/)[1]).toMatch(/,,succeeded,$/);
      const patients = (await (await fetch(`${service.url}/medical/v1/patient`, { headers: { 'x-api-key': apiKey } })).json()) as { patients: unknown[] };
      expect(patients.patients).toEqual([]);

      const notCsv = join(dir, 'photo.csv');
      await writeFile(notCsv, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0xff, 0xfe]));
      const refused = io(env);
      expect(await runCli(['import', notCsv, '--facility', second], refused)).toBe(1);
      expect(refused.err()).toContain('the file was refused');
      expect(refused.err()).toContain('CSV_INVALID');

      const missing = io(env);
      expect(await runCli(['import', join(dir, 'nope.csv')], missing)).toBe(1);
      expect(missing.err()).toContain('cannot read');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('an unreachable service is reported plainly', async () => {
    const cli = io({ CAREBRIDGE_API_KEY: 'cb_x' });
    expect(await runCli(['facility', 'create', '--name', 'X', '--npi', '1234567893', '--address-line1', 'a', '--city', 'c', '--state', 'IL', '--zip', '62701', '--url', 'http://127.0.0.1:9'], cli)).toBe(1);
    expect(cli.err()).toContain('cannot reach the service at http://127.0.0.1:9');
  });

  test('progress line', () => {
    expect(progressLine({ status: 'processing', total: 1000, processed: 250, succeeded: 240, failed: 10 }, 20)).toBe('[#####...............]  25%  250/1000 rows  (240 ok, 10 failed)  processing');
    expect(progressLine({ status: 'waiting', total: null, processed: 0, succeeded: 0, failed: 0 }, 4)).toBe('[....]   0%  0/0 rows  (0 ok, 0 failed)  waiting');
  });
});

describe('bin/carebridge.js', () => {
  test('runs the TypeScript CLI through tsx from any directory', async () => {
    const run = promisify(execFile);
    const { stdout } = await run(process.execPath, [join(ROOT, 'bin/carebridge.js'), 'account', 'create', '--name', 'From Bin', '--json'], {
      cwd: tmpdir(),
      env: { ...process.env, DATA_DIR: dataDir },
    });
    const { apiKey } = JSON.parse(stdout) as { apiKey: string };
    expect((await fetch(`${service.url}/medical/v1/facility`, { headers: { 'x-api-key': apiKey } })).status).toBe(200);
    const failed = await run(process.execPath, [join(ROOT, 'bin/carebridge.js'), 'nonsense'], { cwd: tmpdir() }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown command') });
  });
});
