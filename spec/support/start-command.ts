import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * What `npm run dev` gives Node: the flags of `npm start` (heap settings included) and the service's entry
 * run from the TypeScript sources, relative to the project root (spawn with that as cwd). `npm start` runs
 * the same entry built into dist/ (it builds first); tests and benchmarks run the sources, so they never
 * run a stale build, and the installed package's own test (spec/package) runs the build.
 */
export function startScriptArguments(): string[] {
  const manifest = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { scripts: { start: string; dev: string } };
  const [command, ...args] = manifest.scripts.dev.trim().split(/\s+/);
  if (command !== 'node') throw new Error(`npm run dev must run node itself (so its flags can be reused), not ${command}`);
  const [, ...startArgs] = manifest.scripts.start.trim().split(/\s+/);
  const flags = (list: string[]) => list.filter((arg) => arg.startsWith('--heap') || arg.startsWith('--max'));
  if (flags(args).join(' ') !== flags(startArgs).join(' ')) throw new Error('npm run dev and npm start must give Node the same heap flags');
  return args;
}
