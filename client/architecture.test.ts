import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

/*
 * The client depends on nothing of ours except shared wire types. Type-only imports of the core are
 * erased at run time; what the client loads at run time is its own code, the webhook message schemas (so a
 * receiver validates exactly what the service builds), the signature checks, and node built-ins.
 */

const CLIENT = fileURLToPath(new URL('.', import.meta.url));
const ROOT = resolve(CLIENT, '..');
const RUNTIME_ALLOWED = ['core/webhooks/envelope.ts', 'core/errors.ts', 'adapters/webhook/signature.ts'];

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

describe('architecture: the client loads only its own code, the webhook schemas and the signature checks', () => {
  const files = readdirSync(CLIENT).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));

  test('there are client files', () => {
    expect(files).toContain('client.ts');
  });

  for (const name of files) {
    test(`client/${name}`, () => {
      for (const { specifier, typeOnly } of importsOf(readFileSync(join(CLIENT, name), 'utf8'))) {
        if (!specifier.startsWith('.')) {
          expect(specifier.startsWith('node:') || typeOnly, `${name} loads the package ${specifier}`).toBe(true);
          continue;
        }
        const target = resolve(CLIENT, specifier.replace(/\.js$/, '.ts'));
        if (target.startsWith(CLIENT) || typeOnly) continue;
        expect(RUNTIME_ALLOWED, `${name} loads ${relative(ROOT, target)} at run time`).toContain(relative(ROOT, target));
      }
    });
  }

  test('the check tells type-only imports from loads', () => {
    expect(importsOf(`import type { A } from '../core/a.js';\nimport { type B, type C } from '../core/b.js';\nimport { D } from '../core/d.js';\nexport { E } from './e.js';`)).toEqual([
      { specifier: '../core/a.js', typeOnly: true },
      { specifier: '../core/b.js', typeOnly: true },
      { specifier: '../core/d.js', typeOnly: false },
      { specifier: './e.js', typeOnly: false },
    ]);
  });
});
