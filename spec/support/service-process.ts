import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
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
