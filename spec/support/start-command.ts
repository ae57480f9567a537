import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * What `npm start` gives Node: its flags and the entry point (relative to the project root, so spawn with
 * that as cwd). Tests and benchmarks that run the service as a process use these, so they run the one
 * users start, heap settings included.
 */
export function startScriptArguments(): string[] {
  const manifest = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { scripts: { start: string } };
  const [command, ...args] = manifest.scripts.start.trim().split(/\s+/);
  if (command !== 'node') throw new Error(`npm start must run node itself (so its flags can be reused), not ${command}`);
  return args;
}
