import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

/*
 * The client depends on nothing of ours but the wire contract (contract/: request and response shapes,
 * webhook messages and their signatures, error codes), followed transitively: whatever the client imports,
 * and whatever that imports, types included, stays in client/ and contract/, and the only packages loaded
 * are node built-ins and zod (the webhook schemas a receiver validates with).
 */

const CLIENT = fileURLToPath(new URL('.', import.meta.url));
const ROOT = resolve(CLIENT, '..');
const ALLOWED_DIRS = ['client', 'contract'].map((dir) => join(ROOT, dir));
const ALLOWED_PACKAGES = new Set(['zod']);

interface ImportStatement {
  specifier: string;
  typeOnly: boolean;
}

function importsOf(source: string): ImportStatement[] {
  const found: ImportStatement[] = [];
  const pattern = /(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const match of source.matchAll(pattern)) {
    if (match[5]) {
      found.push({ specifier: match[5], typeOnly: false });
      continue;
    }
    const clause = match[3] ?? '';
    // `import { type A, type B }` is type-only too.
    const allTypes = /^\{[\s\S]*\}$/.test(clause.trim()) && clause.replace(/[{}\s]/g, '').split(',').filter(Boolean).every((name) => name.startsWith('type'));
    found.push({ specifier: match[4]!, typeOnly: Boolean(match[2]) || allTypes });
  }
  return found;
}

describe('architecture: the client reaches only the wire contract, however far its imports go', () => {
  const files = readdirSync(CLIENT).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));

  test('there are client files', () => {
    expect(files).toContain('client.ts');
  });

  test('every file the client reaches, transitively, is in client/ or contract/; packages are node built-ins and zod', () => {
    const seen = new Set<string>();
    const queue = files.map((name) => join(CLIENT, name));
    while (queue.length > 0) {
      const file = queue.shift()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const name = relative(ROOT, file);
      expect(ALLOWED_DIRS.some((dir) => file.startsWith(dir + sep)), `the client reaches ${name}`).toBe(true);
      for (const { specifier } of importsOf(readFileSync(file, 'utf8'))) {
        if (!specifier.startsWith('.')) {
          expect(specifier.startsWith('node:') || ALLOWED_PACKAGES.has(specifier), `${name} imports the package ${specifier}`).toBe(true);
          continue;
        }
        queue.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
      }
    }
    // The walk went past the client: the contract files it uses were checked too.
    expect([...seen].some((file) => file.startsWith(join(ROOT, 'contract') + sep))).toBe(true);
  });

  test('the check tells type-only imports from loads', () => {
    expect(importsOf(`import type { A } from '../core/a.js';\nimport { type B, type C } from '../core/b.js';\nimport { D } from '../core/d.js';\nexport { E } from './e.js';`)).toEqual([
      { specifier: '../core/a.js', typeOnly: true },
      { specifier: '../core/b.js', typeOnly: true },
      { specifier: '../core/d.js', typeOnly: false },
      { specifier: './e.js', typeOnly: false },
    ]);
  });
});
