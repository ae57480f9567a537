import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse/sync';
import { expect } from 'vitest';
import { startScriptArguments } from './start-command.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A port free on loopback a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The service as `npm start` runs it, in a process of its own. */
export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  port: number;
  /** Everything it printed so far. */
  output: () => string;
}

/**
 * Starts the service on loopback with `env` over this process's environment (PORT and HOST are set here,
 * LOG_LEVEL defaults to warn) and resolves once `/healthz` answers; rejects with its output when it exits
 * or is not up within a minute.
 */
export async function startServiceProcess(env: Record<string, string>, port?: number): Promise<ServiceProcess> {
  const listenPort = port ?? (await freePort());
  const child = spawn(process.execPath, startScriptArguments(), {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env, PORT: String(listenPort), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${listenPort}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited early:\n${output}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`service did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, url, port: listenPort, output: () => output };
}

/** Kills the process with SIGKILL (no shutdown of its own) and resolves once it has exited. */
export async function killServiceProcess(service: ServiceProcess): Promise<void> {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGKILL');
  await exited;
}

/** The sandbox account's API key, as the first start prints it. */
export function printedApiKey(service: ServiceProcess): string {
  const key = /x-api-key: (cb_[A-Za-z0-9_-]+)/.exec(service.output())?.[1];
  if (!key) throw new Error(`the service printed no API key:\n${service.output()}`);
  return key;
}

/**
 * What a finished import of `rows` distinct people must leave: a result with exactly one outcome per row,
 * as many succeeded rows as the status says, each its own patient, and that many patients in the account.
 */
export async function expectEveryRowOnce(service: ServiceProcess, apiKey: string, status: { result?: string; succeeded: number }, rows: number): Promise<void> {
  const table = parse(await (await fetch(status.result!)).text()) as string[][];
  expect(table).toHaveLength(rows + 1);
  const statusColumn = table[0]!.indexOf('status');
  const idColumn = table[0]!.indexOf('metriportId');
  const outcomes = table.slice(1).map((row) => row[statusColumn]);
  expect(outcomes.every((outcome) => outcome === 'succeeded' || outcome === 'failed')).toBe(true);
  expect(outcomes.filter((outcome) => outcome === 'succeeded')).toHaveLength(status.succeeded);
  // Every person in the file is distinct, so each succeeded row is its own patient: no duplicates.
  const ids = table.slice(1).map((row) => row[idColumn]).filter(Boolean);
  expect(new Set(ids).size).toBe(status.succeeded);
  let count = 0;
  let cursor: string | undefined;
  do {
    const response = await fetch(`${service.url}/medical/v1/patient?count=500${cursor ? `&cursor=${cursor}` : ''}`, { headers: { 'x-api-key': apiKey } });
    const page = (await response.json()) as { patients: unknown[]; meta: { nextPage?: string } };
    count += page.patients.length;
    cursor = page.meta.nextPage ? new URL(page.meta.nextPage).searchParams.get('cursor')! : undefined;
  } while (cursor);
  expect(count).toBe(status.succeeded);
}
