import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

/*
 * The layers outside the core, checked on every source file (tests excluded):
 * - hosts/<name>/ are composition roots: each imports core, adapters, runtime and http, never another host;
 * - runtime/ (putting the service together) and http/ (the one HTTP translation) never import a host;
 * - http/ never imports runtime/: a translation serves any handler, however it was made;
 * - adapters/ never import runtime/, http/ or a host;
 * - contract/ (the wire contract the client is built on) imports nothing outside itself.
 */

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === 'test-workers' ? [] : sourceFiles(path);
    return /\.(ts|mts|mjs)$/.test(name) && !/\.test\.ts$/.test(name) ? [path] : [];
  });
}

function relativeImports(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const pattern = /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|import\s+['"]([^'"]+)['"]/g;
  return [...source.matchAll(pattern)]
    .map((match) => match[1] ?? match[2] ?? match[3]!)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(ROOT, resolve(file, '..', specifier)));
}

/** `hosts/memory/x.ts` -> `hosts/memory`; `runtime/x.ts` -> `runtime`. */
function layerOf(path: string): string {
  const parts = path.split(sep);
  return parts[0] === 'hosts' ? `hosts/${parts[1]}` : parts[0]!;
}

function forbidden(from: string, to: string): boolean {
  if (from === to) return false;
  if (from.startsWith('hosts/')) return to.startsWith('hosts/');
  if (from === 'runtime') return to.startsWith('hosts/');
  if (from === 'http') return to.startsWith('hosts/') || to === 'runtime';
  if (from === 'adapters') return to.startsWith('hosts/') || to === 'runtime' || to === 'http';
  if (from === 'contract') return to !== 'contract';
  return false;
}

describe('architecture: hosts are leaves, runtime and http serve them, adapters point inward', () => {
  const files = ['hosts', 'runtime', 'http', 'adapters', 'contract'].flatMap((dir) => sourceFiles(join(ROOT, dir)));

  test('there are files in every layer', () => {
    const layers = new Set(files.map((file) => layerOf(relative(ROOT, file))));
    for (const layer of ['hosts/embedded', 'hosts/memory', 'hosts/service', 'runtime', 'http', 'adapters']) expect(layers).toContain(layer);
  });

  for (const file of files) {
    const name = relative(ROOT, file);
    test(name, () => {
      const from = layerOf(name);
      for (const target of relativeImports(file)) expect(forbidden(from, layerOf(target)), `${name} imports ${target}`).toBe(false);
    });
  }

  test('the rule refuses what it must', () => {
    expect(forbidden('hosts/service', 'hosts/embedded')).toBe(true);
    expect(forbidden('http', 'runtime')).toBe(true);
    expect(forbidden('adapters', 'http')).toBe(true);
    expect(forbidden('hosts/service', 'runtime')).toBe(false);
    expect(forbidden('runtime', 'http')).toBe(false);
  });
});
