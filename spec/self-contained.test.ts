import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

/*
 * A clone of the repository alone must install, start and pass its tests: no source file may reach a path
 * above the repository's root (a sibling folder with fixtures exists on some machines and not on others).
 */

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const SKIPPED = new Set(['node_modules', '.git', 'data']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIPPED.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs|cjs|json)$/.test(entry.name) || entry.name === 'run' ? [path] : [];
  });
}

/**
 * Relative paths used as paths (import specifiers, `new URL(..., import.meta.url)`, fs and path calls) that
 * resolve above `root`, from the file at `file`. Test data that merely looks like a path is not a use of it.
 */
export function pathsOutside(file: string, source: string, root: string): string[] {
  const outside: string[] = [];
  const uses = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\b(?:new URL|readFileSync|readFile|readdirSync|readdir|existsSync|createReadStream|join|resolve)\(\s*(?:[A-Za-z_$][\w$.]*\s*,\s*)?)['"`](\.{1,2}\/[^'"`\s]*)['"`]/g;
  for (const match of source.matchAll(uses)) {
    const target = resolve(dirname(file), match[1]!);
    if (target !== root && !target.startsWith(root + sep)) outside.push(match[1]!);
  }
  for (const match of source.matchAll(/['"`][^'"`]*\bshared\/fixtures\b[^'"`]*['"`]/g)) outside.push(match[0]);
  return outside;
}

describe('the repository is self-contained', () => {
  const files = sourceFiles(ROOT).filter((file) => file !== fileURLToPath(import.meta.url));

  test('there are files to check', () => {
    expect(files.length).toBeGreaterThan(100);
  });

  test('no source file names a path outside the repository', () => {
    const offenders = files.flatMap((file) => pathsOutside(file, readFileSync(file, 'utf8'), ROOT).map((path) => `${relative(ROOT, file)}: ${path}`));
    expect(offenders.join('\n')).toBe('');
  });

  test('the check catches what it must', () => {
    const file = join(ROOT, 'spec', 'run', 'x.test.ts');
    expect(pathsOutside(file, "new URL('../../../beside/the-clone/ccda/', import.meta.url)", ROOT)).toHaveLength(1);
    // The fixtures folder beside the clone, named in any string (spelled in parts so this file names it nowhere).
    expect(pathsOutside(file, `const dir = '/work/${['shared', 'fixtures'].join('/')}/ccda';`, ROOT)).toHaveLength(1);
    expect(pathsOutside(file, "new URL('../../sandbox-data/ccda/', import.meta.url)", ROOT)).toEqual([]);
    expect(pathsOutside(file, "import { x } from '../support/api.js'", ROOT)).toEqual([]);
    expect(pathsOutside(file, "readFileSync(join(dir, '../../../../outside.txt'))", ROOT)).toHaveLength(1);
    expect(pathsOutside(file, "const probe = '../../../../etc/passwd';", ROOT)).toEqual([]);
  });
});
