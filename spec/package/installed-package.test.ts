import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CONSOLE_ASSETS } from '../../http/console.js';

/**
 * The package as another project gets it: built, packed by npm, unpacked into a fresh project's
 * node_modules, and used there by plain Node (no TypeScript loader) through its `exports`. The packed
 * package's dependencies are the repository's own node_modules, linked beside it, so the test needs no
 * registry: what is checked is the package itself (its files, exports, built code and declarations).
 */

const repo = fileURLToPath(new URL('../..', import.meta.url));
const fixture = join(repo, 'sandbox-data', 'ccda', 'ccd-1.xml');
let work: string;
let files: string[];

function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
}

/** A project of its own under `work`, with the unpacked package (and its dependencies) installed. */
function project(name: string, manifest: object): string {
  const dir = join(work, name);
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  symlinkSync(join(work, 'carebridge'), join(dir, 'node_modules', 'carebridge'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest));
  return dir;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'carebridge-packed-'));
  run(process.execPath, [join(repo, 'scripts', 'build.mjs')], repo);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const packed = JSON.parse(run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], repo)) as { filename: string; files: { path: string }[] }[];
  files = packed[0]!.files.map((file) => file.path);
  mkdirSync(join(work, 'carebridge'));
  run('tar', ['xzf', join(work, packed[0]!.filename), '-C', join(work, 'carebridge'), '--strip-components=1'], work);
  symlinkSync(join(repo, 'node_modules'), join(work, 'carebridge', 'node_modules'), 'dir');
}, 240_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the installed package', () => {
  test('ships built JavaScript with declarations, the sandbox documents and the CLI; no TypeScript sources, tests, specs, benchmarks or corpus', () => {
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files).toContain('dist/adapters/ccda/ccda.worker.mjs');
    expect(files).toContain('sandbox-data/ccda/ccd-1.xml');
    expect(files).toContain('bin/carebridge.js');
    const stray = files.filter((path) => /\.test\.|^spec\/|^bench\/|^corpus\/|(?<!\.d)\.ts$|testing\./.test(path));
    expect(stray).toEqual([]);
    expect(readdirSync(join(work, 'carebridge', 'dist'))).toContain('hosts');
  });

  test('the carebridge command runs from the built files', () => {
    const help = run(process.execPath, [join(work, 'carebridge', 'bin', 'carebridge.js'), '--help'], work);
    expect(help).toMatch(/serve/);
  }, 60_000);

  test('the README embedding and client snippets run in a fresh ESM project with plain Node, C-CDA conversion on its worker threads included', () => {
    const dir = project('esm-app', { name: 'esm-app', type: 'module', private: true });
    writeFileSync(
      join(dir, 'app.mjs'),
      `
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { createCarebridge, createNodeListener } from 'carebridge';
import { carebridgeKoa } from 'carebridge/koa';
import { CarebridgeClient, verifyWebhookSignature } from 'carebridge/client';
import { MemoryHost, inProcessFetch } from 'carebridge/memory';

const carebridge = await createCarebridge({ publicUrl: 'http://127.0.0.1/api', dataDir: process.argv[2] });
const server = http.createServer(createNodeListener(carebridge.handler, { prefix: '/api' }));
await new Promise((listening) => server.listen(0, '127.0.0.1', listening));
const { apiKey } = await carebridge.createAccount('packed');
const base = 'http://127.0.0.1:' + server.address().port + '/api';
const cb = new CarebridgeClient({ apiKey, baseUrl: base });
const consolePage = await (await fetch(base + '/console')).text();
const consoleAssets = {};
for (const name of ${JSON.stringify(Object.keys(CONSOLE_ASSETS))}) consoleAssets[name] = (await fetch(base + '/console/' + name)).status;
const facility = await cb.createFacility({
  name: 'Main Clinic',
  npi: '1234567893',
  address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' },
});
const bundle = await carebridge.deps.ccda.convert(readFileSync(process.argv[3], 'utf8'));
server.close();
await carebridge.close();
const sandbox = await MemoryHost.create();
const sandboxed = new CarebridgeClient({ apiKey: 'none', baseUrl: 'http://sandbox', fetch: inProcessFetch(sandbox.handler) });
const refused = await sandboxed.getOrganization().then(() => 'answered', (error) => error.status);
await sandbox.close();
console.log(JSON.stringify({
  facility: typeof facility.id,
  resources: bundle.entry.length,
  koa: typeof carebridgeKoa,
  verify: typeof verifyWebhookSignature,
  refused,
  console: consolePage.includes('src="/api/console/app.js"'),
  consoleAssets,
}));
`,
    );
    const output = run(process.execPath, ['app.mjs', join(dir, 'data'), fixture], dir);
    const result = JSON.parse(output.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(result).toMatchObject({ facility: 'string', koa: 'function', verify: 'function', refused: 401, console: true });
    // Every file the console is made of is in the package and served from it.
    expect(result.consoleAssets).toEqual(Object.fromEntries(Object.keys(CONSOLE_ASSETS).map((name) => [name, 200])));
    expect(result.resources).toBeGreaterThan(10);
  }, 120_000);

  test('a default CommonJS project can require it (Node >= 20.19 loads ES modules through require)', () => {
    const dir = project('cjs-app', { name: 'cjs-app', private: true });
    writeFileSync(
      join(dir, 'app.js'),
      `
const { createCarebridge, ERROR_CODES } = require('carebridge');
const { CarebridgeClient } = require('carebridge/client');
const { MemoryHost } = require('carebridge/memory');
console.log(JSON.stringify([typeof createCarebridge, typeof CarebridgeClient, typeof MemoryHost, typeof ERROR_CODES.NOT_FOUND]));
`,
    );
    expect(JSON.parse(run(process.execPath, ['app.js'], dir).trim())).toEqual(['function', 'function', 'function', 'number']);
  }, 60_000);

  test('its declarations type-check a TypeScript consumer', () => {
    const dir = project('ts-app', { name: 'ts-app', type: 'module', private: true });
    writeFileSync(
      join(dir, 'app.ts'),
      `
import { createCarebridge, type Carebridge } from 'carebridge';
import { CarebridgeClient, type Patient } from 'carebridge/client';

export async function start(): Promise<Carebridge> {
  return createCarebridge({ publicUrl: 'https://example.org/api', dataDir: './data' });
}
export async function firstName(client: CarebridgeClient, id: string): Promise<string> {
  const patient: Patient = await client.getPatient(id);
  return patient.firstName;
}
// @ts-expect-error: the options are typed, not \`any\`
export const wrong = createCarebridge({ publicUrl: 42 });
`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(repo, 'node_modules', '@types')] },
        files: ['app.ts'],
      }),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    expect(() => run(process.execPath, [tsc, '-p', 'tsconfig.json'], dir)).not.toThrow();
  }, 120_000);
});
