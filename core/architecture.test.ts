import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

const CORE = fileURLToPath(new URL('.', import.meta.url));

/** Every import specifier of a TypeScript file (static, dynamic and re-exports). */
function importsOf(source: string): string[] {
  const specifiers: string[] = [];
  const pattern = /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|import\s+['"]([^'"]+)['"]/g;
  for (const match of source.matchAll(pattern)) specifiers.push(match[1] ?? match[2] ?? match[3]!);
  return specifiers;
}

function coreFiles(dir = CORE): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return coreFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Packages the pure core may use: validation, CSV, the state machine library. Nothing that does I/O. */
const ALLOWED_PACKAGES = new Set(['zod', 'csv-parse', 'csv-stringify', 'csv-stringify/sync', 'ts-fsm']);
const OUTWARD = ['adapters', 'hosts', 'spec', 'client'].map((dir) => resolve(CORE, '..', dir));
const FORBIDDEN_CALLS = [/\bDate\.now\(/, /\bMath\.random\(/, /\brandomUUID\(/, /\bnew Date\(\)/, /\bprocess\.(env|exit|argv|cwd|hrtime|nextTick|stdout|stderr)\b/, /\brequire\(/];

describe('architecture: core is pure and points nowhere outward', () => {
  const files = coreFiles();

  test('there are core files to check', () => {
    expect(files.length).toBeGreaterThan(20);
  });

  for (const file of files) {
    const name = relative(CORE, file);
    test(`core/${name}`, () => {
      const source = readFileSync(file, 'utf8');
      for (const specifier of importsOf(source)) {
        if (specifier.startsWith('.')) {
          const target = resolve(file, '..', specifier);
          expect(target.startsWith(CORE), `${name} imports ${specifier}, outside core/`).toBe(true);
          for (const outward of OUTWARD) expect(target.startsWith(outward), `${name} imports ${specifier}`).toBe(false);
        } else {
          expect(ALLOWED_PACKAGES.has(specifier), `${name} imports the package ${specifier}`).toBe(true);
        }
      }
      const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      for (const call of FORBIDDEN_CALLS) expect(call.test(code), `${name} uses ${call.source}`).toBe(false);
    });
  }

  test('the check catches what it must', () => {
    expect(importsOf(`import { x } from '../adapters/a.js';\nexport * from "koa";\nconst m = await import('node:fs');`)).toEqual([
      '../adapters/a.js',
      'koa',
      'node:fs',
    ]);
  });
});
