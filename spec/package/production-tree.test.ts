import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';

/*
 * What `npm install carebridge` brings, read from the lock file: nothing that reports home, and install
 * scripts only where a native part must be built or fetched.
 */

interface LockedPackage {
  dev?: boolean;
  devOptional?: boolean;
  hasInstallScript?: boolean;
}

const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as { packages: Record<string, LockedPackage> };
const production = Object.entries(lock.packages).filter(([path, entry]) => path !== '' && !entry.dev && !entry.devOptional);
const nameOf = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);

test('no analytics or telemetry package in the production dependency tree', () => {
  expect(production.length).toBeGreaterThan(50);
  const reporting = production.map(([path]) => nameOf(path)).filter((name) => /scarf|telemetry|analytics|posthog|segment|mixpanel|sentry/i.test(name));
  expect(reporting).toEqual([]);
});

test('install scripts only where a native part is built (sqlite3); no TypeScript loader or bundler at run time', () => {
  const withScripts = production.filter(([, entry]) => entry.hasInstallScript).map(([path]) => nameOf(path));
  expect(withScripts).toEqual(['sqlite3']);
  const loaders = production.map(([path]) => nameOf(path)).filter((name) => /^(tsx|ts-node|esbuild|@esbuild\/.*|typescript|@swc\/core.*)$/.test(name));
  expect(loaders).toEqual([]);
});

test('allowScripts names exactly the packages with install scripts: sqlite3 may build, the others may not run theirs', () => {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { allowScripts?: Record<string, boolean> };
  const withScripts = Object.entries(lock.packages).filter(([path, entry]) => path !== '' && entry.hasInstallScript).map(([path]) => nameOf(path));
  expect(Object.keys(manifest.allowScripts ?? {}).sort()).toEqual([...new Set(withScripts)].sort());
  expect(Object.entries(manifest.allowScripts ?? {}).filter(([, allowed]) => allowed).map(([name]) => name)).toEqual(['sqlite3']);
});
