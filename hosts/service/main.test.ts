import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { startScriptArguments } from '../../spec/support/start-command.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

let dataDir: string | undefined;
afterEach(async () => {
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

/** Runs what `npm start` runs: the same Node flags and entry. */
function startMain(env: Record<string, string>) {
  const child = spawn(process.execPath, startScriptArguments(), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = (async () => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const line = stdout.split('\n').find((text) => text.includes('"carebridge is listening"'));
      if (line) return (JSON.parse(line) as { url: string }).url;
      if (child.exitCode !== null) throw new Error(`exited early (${child.exitCode}):\n${stdout}\n${stderr}`);
      if (Date.now() > deadline) throw new Error(`did not start:\n${stdout}\n${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  // A test that expects the start to fail awaits `exited`, not this: its rejection is then no unhandled one.
  listening.catch(() => undefined);
  return { child, exited, listening, output: () => ({ stdout, stderr }) };
}

describe('npm start (hosts/service/main.ts)', () => {
  test('boots on an empty DATA_DIR, prints the sandbox key once with a curl example, answers /healthz, stops on SIGTERM', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'carebridge-main-'));
    const env = { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' };
    const main = startMain(env);
    try {
      const url = await main.listening;
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });

      const { stdout } = main.output();
      const apiKey = /\n {2}(cb_[A-Za-z0-9_-]{20,})\n/.exec(stdout)?.[1];
      expect(apiKey, stdout).toBeDefined();
      expect(stdout).toContain(`curl -s -H "x-api-key: ${apiKey}" ${url}/medical/v1/facility`);
      const facilities = await fetch(`${url}/medical/v1/facility`, { headers: { 'x-api-key': apiKey! } });
      expect(facilities.status).toBe(200);
      expect(await facilities.json()).toEqual({ facilities: [] });
      // The access log names the route, never the key (printed twice: the key itself and the curl example).
      const deadline = Date.now() + 5_000;
      while (!main.output().stdout.includes('"route":"/medical/v1/facility"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(main.output().stdout).toContain('"route":"/medical/v1/facility"');
      expect(main.output().stdout.split(apiKey!).length - 1).toBe(2);

      main.child.kill('SIGTERM');
      expect(await main.exited).toBe(0);
      expect(main.output().stdout).toContain('"carebridge stopped"');
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    } finally {
      if (main.child.exitCode === null) main.child.kill('SIGKILL');
    }

    // A second start on the same data keeps the account and prints no new key.
    const again = startMain(env);
    try {
      await again.listening;
      again.child.kill('SIGINT');
      expect(await again.exited).toBe(0);
      expect(again.output().stdout).not.toMatch(/cb_[A-Za-z0-9_-]{20,}/);
    } finally {
      if (again.child.exitCode === null) again.child.kill('SIGKILL');
    }
  });

  test('a malformed setting stops the start with a message naming it', async () => {
    const main = startMain({ PORT: 'eighty' });
    expect(await main.exited).toBe(1);
    expect(main.output().stderr).toContain('PORT must be a port number');
  });
});
