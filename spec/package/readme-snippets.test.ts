import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, test } from 'vitest';
import { freePort } from '../support/service-process.js';

/*
 * The README's embedding snippet, run as written: taken from the Markdown (not copied), saved inside the
 * package (so `import 'carebridge'` resolves to this package's build, as in an application that installed
 * it), started in an empty directory, and asked for the account's facilities with the key it printed. Only
 * the port is changed, to a free one.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
});

/** The first ```ts block after `heading` in the README. */
function snippetAfter(heading: string): string {
  const at = readme.indexOf(heading);
  expect(at, `the README says "${heading}"`).toBeGreaterThanOrEqual(0);
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
  expect(block, `a ts block follows "${heading}"`).not.toBeNull();
  return block![1]!;
}

test('the embedding snippet (Koa) runs as written: it serves the API under /api and prints a working key', async () => {
  const snippet = snippetAfter('To run carebridge inside your own backend');
  const port = await freePort();
  const dir = join(ROOT, '.snippets');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `embedding-${process.pid}.mjs`);
  writeFileSync(file, snippet.replaceAll('3000', String(port)));
  cleanups.push(() => rmSync(file, { force: true }));
  const cwd = mkdtempSync(join(tmpdir(), 'carebridge-snippet-'));
  cleanups.push(() => rmSync(cwd, { recursive: true, force: true }));
  const env = { ...process.env };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [file], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  cleanups.push(() => child.kill('SIGKILL'));
  let output = '';
  const key = await new Promise<string>((resolve, reject) => {
    const look = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /API key: (cb_[A-Za-z0-9_-]+)/.exec(output);
      if (found) resolve(found[1]!);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.once('exit', (code) => reject(new Error(`the snippet exited (${code}):\n${output}`)));
  });
  // The key is printed before listen(): wait for the port.
  let response: Response | undefined;
  for (let i = 0; i < 100 && !response; i++) {
    response = await fetch(`http://127.0.0.1:${port}/api/medical/v1/facility`, { headers: { 'x-api-key': key } }).catch(() => undefined);
    if (!response) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(response?.status, output).toBe(200);
  expect(await response!.json()).toEqual({ facilities: [] });
}, 60_000);
