import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isCode, markdownBlocks, runnable, type MarkdownBlock } from '../support/markdown-blocks.js';
import { systemTool } from '../support/system-tools.js';
import { freePort, killServiceProcess, printedApiKey, startServiceProcess, type ServiceProcess } from '../support/service-process.js';

/*
 * The READMEs as a new user reads them: every code block is either run here as written (taken from the
 * Markdown, not copied) or marked in the Markdown as not run, with why. What a run may change is named at
 * each call: the base URL, the key and ports, never the code. TypeScript snippets are saved inside the
 * package (so `import 'carebridge'` resolves to this package's build, as in an application that installed
 * it) and run by Node with tsx for the type annotations; shell snippets run in bash with `set -eo pipefail`,
 * so a failing command fails the test.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MARKDOWN = { 'README.md': readFileSync(join(ROOT, 'README.md'), 'utf8'), 'client/README.md': readFileSync(join(ROOT, 'client/README.md'), 'utf8') };
const BLOCKS: Record<keyof typeof MARKDOWN, MarkdownBlock[]> = {
  'README.md': markdownBlocks(MARKDOWN['README.md']),
  'client/README.md': markdownBlocks(MARKDOWN['client/README.md']),
};
const TSX = import.meta.resolve('tsx');
/** The walk-through and the CLI need curl and jq, as the README says: required under CI, else their tests are skipped. */
const shellTools = [systemTool('curl', 'curl', 'apt-get install -y curl'), systemTool('jq', 'jq', 'apt-get install -y jq')].filter((found) => found === undefined);
const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'carebridge-snippet-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function replaced(code: string, replacements: Record<string, string>): string {
  let result = code;
  for (const [from, to] of Object.entries(replacements)) {
    expect(result, `the snippet holds "${from}"`).toContain(from);
    result = result.replaceAll(from, to);
  }
  return result;
}

interface Running {
  child: ChildProcess;
  output: () => string;
  /** Resolves with the first match of `pattern` in the output; rejects when the process exits first. */
  waitFor: (pattern: RegExp) => Promise<RegExpExecArray>;
  exited: Promise<number | null>;
}

function run(command: string, args: string[], options: { cwd: string; env?: Record<string, string> }): Running {
  const env = { ...process.env, ...options.env };
  delete env.DATABASE_URL;
  const child = spawn(command, args, { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  cleanups.push(() => child.kill('SIGKILL'));
  let output = '';
  const listeners = new Set<() => void>();
  const read = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', read);
  child.stderr!.on('data', read);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const look = () => {
        const found = pattern.exec(output);
        if (found) {
          listeners.delete(look);
          resolve(found);
        }
      };
      listeners.add(look);
      look();
      void exited.then((code) => reject(new Error(`exited (${code}) before printing ${pattern}:\n${output}`)));
    });
  return { child, output: () => output, waitFor, exited };
}

/** Saves a TypeScript snippet inside the package and runs it with Node and tsx in `cwd`. */
function runTypeScript(name: string, code: string, options: { cwd: string; env?: Record<string, string> }): Running {
  const dir = join(ROOT, '.snippets');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${process.pid}.ts`);
  writeFileSync(file, code);
  cleanups.push(() => rmSync(file, { force: true }));
  return run(process.execPath, ['--import', TSX, file], options);
}

async function runBash(code: string, options: { cwd: string; env?: Record<string, string> }): Promise<string> {
  const running = run('bash', ['-c', `set -eo pipefail\n${code}`], options);
  expect(await running.exited, running.output()).toBe(0);
  return running.output();
}

async function answered(url: string, init?: RequestInit): Promise<Response> {
  for (;;) {
    const response = await fetch(url, init).catch(() => undefined);
    if (response) return response;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('every code block of README.md and client/README.md is run by this file or says why not', () => {
  const unmarked = Object.entries(BLOCKS).flatMap(([file, blocks]) =>
    blocks.filter((block) => isCode(block) && block.run === undefined && block.notRun === undefined).map((block) => `${file}:${block.line}`),
  );
  expect(unmarked).toEqual([]);
  const named = new Set(Object.values(BLOCKS).flatMap((blocks) => blocks.flatMap((block) => (block.run ? [block.run] : []))));
  expect([...named].sort()).toEqual(['cli', 'client', 'client-readme', 'embedding-http', 'embedding-koa', 'embedding-koa-app', 'receiver', 'sandbox', 'walkthrough']);
  for (const block of Object.values(BLOCKS).flat()) if (block.notRun !== undefined) expect(block.notRun.length, `line ${block.line}`).toBeGreaterThan(20);
});

describe('against a started service', () => {
  let service: ServiceProcess;
  let key: string;
  let dataDir: string;
  /** The walk-through's directory: its patients.csv is used by the snippets after it. */
  let work: string;
  const env = () => ({ CB: service.url, CAREBRIDGE_URL: service.url, CAREBRIDGE_API_KEY: key, DATA_DIR: dataDir, PATH: `${join(work, 'bin')}:${process.env.PATH}` });

  beforeAll(async () => {
    dataDir = tempDir();
    work = tempDir();
    // `npm link` would put the package's bin on the PATH; this is the same command.
    mkdirSync(join(work, 'bin'));
    writeFileSync(join(work, 'bin', 'carebridge'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin', 'carebridge.js')}" "$@"\n`);
    chmodSync(join(work, 'bin', 'carebridge'), 0o755);
    service = await startServiceProcess({ DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMITS: 'off' });
    cleanups.push(() => void killServiceProcess(service));
    key = printedApiKey(service);
  }, 90_000);

  test.skipIf(shellTools.length > 0)('the walk-through with curl runs as written: every flow, its webhooks received and verified', async () => {
    const receiverPort = String(await freePort());
    const script = replaced(runnable(BLOCKS['README.md'], 'walkthrough'), {
      'export CB=http://localhost:8080': `export CB=${service.url}`,
      'export KEY=cb_...your key...': `export KEY=${key}`,
      'localhost:4000': `localhost:${receiverPort}`,
      'listen(4000)': `listen(${receiverPort})`,
    });
    const output = await runBash(script, { cwd: work, env: env() });
    // What the README says each step prints.
    expect(output).toContain('{"status":"completed","succeeded":2,"failed":1,"created":2,"updated":0}');
    expect(output).toContain('emr-3,Ann,Lee,1990-13-01,F,3 Elm St,Springfield,IL,62701,,,,,failed,dob: must be a real calendar date as YYYY-MM-DD');
    expect(output).toMatch(/"convert":\{"status":"completed","total":3,"successful":3,"errors":0\}/);
    expect(output).toContain('"description":"Good Health Hospital Care Plan"');
    expect(output).toContain('{"status":400,"code":"PATIENT_OPTED_OUT"}');
    expect(output).toMatch(/\{"status":"completed","sources":\[\{"type":"hie","status":"completed"\},\{"type":"pharmacy","status":"completed"\},\{"type":"lab","status":"completed"\}\]\}/);
    const received = readFileSync(join(work, 'webhooks.jsonl'), 'utf8').trim().split('\n').map((line) => (JSON.parse(line) as { meta: { type: string } }).meta.type);
    for (const type of ['medical.bulk-patient-create', 'medical.document-download', 'medical.document-conversion', 'medical.consolidated-data', 'medical.document-bulk-download-urls', 'network-query.pharmacy']) {
      expect(received).toContain(type);
    }
    expect(readFileSync(join(work, 'record.pdf')).subarray(0, 5).toString()).toBe('%PDF-');
    expect(readFileSync(join(work, 'conditions.pdf')).subarray(0, 5).toString()).toBe('%PDF-');
    expect(readFileSync(join(work, 'care-plan.html'), 'utf8')).toContain('<html');
  }, 240_000);

  test.skipIf(shellTools.length > 0)('the CLI commands run as written', async () => {
    const output = await runBash(runnable(BLOCKS['README.md'], 'cli'), { cwd: work, env: env() });
    expect(output.trim().split('\n').at(-1)).toBe('Main Street Clinic');
    expect(readFileSync(join(work, 'patients.result.csv'), 'utf8')).toContain('failed,dob: must be a real calendar date as YYYY-MM-DD');
  }, 120_000);

  test("the README's client snippet runs as written", async () => {
    const running = runTypeScript('client', runnable(BLOCKS['README.md'], 'client'), { cwd: work, env: env() });
    expect(await running.exited, running.output()).toBe(0);
    expect(running.output()).toContain('completed 2 1');
  }, 60_000);

  test("client/README.md's client snippet runs as written", async () => {
    const running = runTypeScript('client-readme', runnable(BLOCKS['client/README.md'], 'client-readme'), { cwd: work, env: env() });
    expect(await running.exited, running.output()).toBe(0);
    expect(running.output()).toContain('404 PATIENT_NOT_FOUND');
  }, 60_000);

  test('the Standard Webhooks receiver runs as written: it answers the ping and verifies real deliveries', async () => {
    const port = await freePort();
    const { webhookSigningSecret } = (await (await fetch(`${service.url}/settings`, { headers: { 'x-api-key': key } })).json()) as { webhookSigningSecret: string };
    const receiver = runTypeScript('receiver', runnable(BLOCKS['client/README.md'], 'receiver'), {
      cwd: work,
      env: { PORT: String(port), CAREBRIDGE_WEBHOOK_SECRET: webhookSigningSecret },
    });
    await answered(`http://127.0.0.1:${port}/`);
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    const settings = await fetch(`${service.url}/settings`, { method: 'POST', headers, body: JSON.stringify({ webhookUrl: `http://127.0.0.1:${port}/webhooks/carebridge` }) });
    // Enabled only when the receiver verified the signed ping and answered its pong.
    expect(((await settings.json()) as { webhookEnabled: boolean }).webhookEnabled).toBe(true);
    const patientId = ((await (await fetch(`${service.url}/medical/v1/patient/external-id?externalId=emr-1`, { headers })).json()) as { id: string }).id;
    const query = await fetch(`${service.url}/medical/v1/patient/${patientId}/consolidated/query?conversionType=json`, { method: 'POST', headers });
    expect(query.status).toBe(200);
    await receiver.waitFor(/received medical\.consolidated-data /);
  }, 60_000);
});

describe('embedding, each in its own process', () => {
  test('the Koa embedding of the README serves the API under /api and prints a working key', async () => {
    const port = String(await freePort());
    const running = runTypeScript('embedding-koa', replaced(runnable(BLOCKS['README.md'], 'embedding-koa'), { '3000': port }), { cwd: tempDir() });
    const key = (await running.waitFor(/API key: (cb_[A-Za-z0-9_-]+)/))[1]!;
    const response = await answered(`http://127.0.0.1:${port}/api/medical/v1/facility`, { headers: { 'x-api-key': key } });
    expect(response.status, running.output()).toBe(200);
    expect(await response.json()).toEqual({ facilities: [] });
  }, 60_000);

  test("client/README.md's Koa app serves the API under /api and prints a working key", async () => {
    const port = String(await freePort());
    const running = runTypeScript('embedding-koa-app', replaced(runnable(BLOCKS['client/README.md'], 'embedding-koa-app'), { '3000': port }), { cwd: tempDir() });
    const key = (await running.waitFor(/API key: (cb_[A-Za-z0-9_-]+)/))[1]!;
    const response = await answered(`http://127.0.0.1:${port}/api/medical/v1/facility`, { headers: { 'x-api-key': key } });
    expect(response.status, running.output()).toBe(200);
  }, 60_000);

  test('the node:http embedding serves the API under /api and 404s the rest', async () => {
    const port = String(await freePort());
    const running = runTypeScript('embedding-http', replaced(runnable(BLOCKS['client/README.md'], 'embedding-http'), { '3000': port }), { cwd: tempDir() });
    const api = await answered(`http://127.0.0.1:${port}/api/medical/v1/facility`);
    expect(api.status, running.output()).toBe(401);
    expect(((await api.json()) as { code: string }).code).toBe('UNAUTHORIZED');
    expect((await fetch(`http://127.0.0.1:${port}/elsewhere`)).status).toBe(404);
  }, 60_000);

  test('the in-process sandbox imports, queries documents and finishes by itself', async () => {
    const running = runTypeScript('sandbox', runnable(BLOCKS['client/README.md'], 'sandbox'), { cwd: tempDir() });
    expect(await running.exited, running.output()).toBe(0);
    expect(running.output()).toContain('completed 1 3');
  }, 90_000);
});
