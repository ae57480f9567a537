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

/**
 * Packages the pure core may use: validation, CSV, the state machine library (its ES build too, the one the bulk
 * lifecycle imports). Nothing that does I/O.
 */
const ALLOWED_PACKAGES = new Set(['zod', 'csv-parse', 'csv-stringify', 'csv-stringify/sync', 'ts-fsm', 'ts-fsm/dist/ts-fsm.es5.js']);
const OUTWARD = ['adapters', 'hosts', 'spec', 'client', 'runtime', 'http'].map((dir) => resolve(CORE, '..', dir));
/** The wire contract: the one place outside core/ the core may import (it is pure too, checked below). */
const CONTRACT = resolve(CORE, '..', 'contract');
/**
 * State kept between calls at module level: a cache keyed by a port instance, or one of the bounded maps the
 * runtime gives the core in its deps (RecentlyUsed). A constant lookup table is not state.
 */
const MODULE_STATE = /^(?:export )?(?:const|let|var) \w+(?:: [^=]+)? = new (?:WeakMap<\w*Port\b|Map<\w*Port\b|RecentlyUsed\b)/m;

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
          expect(target.startsWith(CORE) || target.startsWith(CONTRACT), `${name} imports ${specifier}, outside core/ and contract/`).toBe(true);
          for (const outward of OUTWARD) expect(target.startsWith(outward), `${name} imports ${specifier}`).toBe(false);
        } else {
          expect(ALLOWED_PACKAGES.has(specifier), `${name} imports the package ${specifier}`).toBe(true);
        }
      }
      const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      for (const call of FORBIDDEN_CALLS) expect(call.test(code), `${name} uses ${call.source}`).toBe(false);
      expect(MODULE_STATE.exec(code)?.[0], `${name} keeps state between calls at module level; give it to the core in its deps`).toBeUndefined();
    });
  }

  test('the check catches what it must', () => {
    expect(MODULE_STATE.test('const stampsInProcess = new WeakMap<SearchIndexPort, RecentlyUsed<string>>();')).toBe(true);
    expect(MODULE_STATE.test('export const cache: X = new RecentlyUsed(8);')).toBe(true);
    expect(MODULE_STATE.test("const DENIED = new Set(['refuted']);")).toBe(false);
    expect(importsOf(`import { x } from '../adapters/a.js';\nexport * from "koa";\nconst m = await import('node:fs');`)).toEqual([
      '../adapters/a.js',
      'koa',
      'node:fs',
    ]);
  });
});

describe('architecture: the wire contract is self-contained and pure', () => {
  const files = coreFiles(CONTRACT);

  test('there are contract files to check', () => {
    expect(files.map((file) => relative(CONTRACT, file))).toEqual(expect.arrayContaining(['errors.ts', 'requests.ts', 'responses.ts', 'webhooks.ts', 'signature.ts']));
  });

  for (const file of files) {
    const name = relative(CONTRACT, file);
    test(`contract/${name}`, () => {
      const source = readFileSync(file, 'utf8');
      for (const specifier of importsOf(source)) {
        if (specifier.startsWith('.')) expect(resolve(file, '..', specifier).startsWith(CONTRACT), `${name} imports ${specifier}, outside contract/`).toBe(true);
        // Signatures are HMACs: node:crypto is the one built-in the contract needs.
        else expect(['zod', 'node:crypto'], `${name} imports the package ${specifier}`).toContain(specifier);
      }
      const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      // A webhook receiver checking a signature's timestamp reads its own clock when given none: the
      // contract may read the time, nothing else of the machine.
      for (const call of FORBIDDEN_CALLS.filter((pattern) => !/Date/.test(pattern.source))) expect(call.test(code), `${name} uses ${call.source}`).toBe(false);
    });
  }
});

/**
 * Where a route handler reaches storage or the file store: through its deps, a storage or blob value, a
 * destructured `storage` or `blob`, or a helper typed to take one. Matched per line, comments blanked first.
 */
const STORAGE_ACCESS = [
  /\bdeps\.(storage|blob)\b/,
  /\.(storage|blob)\./,
  /\{[^}]*\b(storage|blob)\b[^}]*\}\s*=\s*deps\b/,
  /Pick<CoreDeps,[^>]*'(storage|blob)'/,
];

/** Each `file:line` of `source` that reaches storage. */
function storageAccessesOf(name: string, source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, (comment) => comment.replace(/[^\n]/g, ' '));
  return code.split('\n').flatMap((line, at) => (STORAGE_ACCESS.some((pattern) => pattern.test(line)) ? [`${name}:${at + 1}: ${line.trim()}`] : []));
}

describe('architecture: route handlers call use cases, never storage or the file store', () => {
  const routes = join(CORE, 'api', 'routes');
  const files = coreFiles(routes);

  test('there are route files to check', () => {
    expect(files.map((file) => relative(routes, file))).toEqual(expect.arrayContaining(['bulk.routes.ts', 'documents.routes.ts', 'entities.routes.ts', 'settings.routes.ts']));
  });

  // A rule the handlers keep, not the storage port: what a read means (not found, ordering, who may see it)
  // is decided once, in the use case every host and the library call.
  test('no file of core/api/routes reaches storage or the file store', () => {
    const offenders = files.flatMap((file) => storageAccessesOf(`core/${relative(CORE, file)}`, readFileSync(file, 'utf8')));
    expect(offenders, `move these reads into a use case of their area:\n${offenders.join('\n')}`).toEqual([]);
  });

  test('the check catches what it must', () => {
    expect(storageAccessesOf('r.ts', 'const a = 1;\n  const x = await deps.storage.facilities.list(id);')).toEqual(['r.ts:2: const x = await deps.storage.facilities.list(id);']);
    expect(storageAccessesOf('r.ts', 'return ctx.deps.storage.cohorts.list(id);')).toHaveLength(1);
    expect(storageAccessesOf('r.ts', 'const { storage, clock } = deps;')).toHaveLength(1);
    expect(storageAccessesOf('r.ts', "async function f(deps: Pick<CoreDeps, 'clock' | 'storage'>) {}")).toHaveLength(1);
    expect(storageAccessesOf('r.ts', '/** reads deps.storage.outbox */\n// deps.storage.x\nconst y = listFacilities(deps, id);')).toEqual([]);
    expect(storageAccessesOf('r.ts', "const s = deps.storageLimit; import { storageUsage } from './x.js';")).toEqual([]);
    expect(storageAccessesOf('r.ts', 'const stream = await deps.blob.stream(key);')).toHaveLength(1);
  });
});

describe('architecture: no import cycles inside core', () => {
  test('no file of core reaches itself through its imports (type imports included)', () => {
    const files = coreFiles();
    const graph = new Map(
      files.map((file) => [
        file,
        importsOf(readFileSync(file, 'utf8'))
          .filter((specifier) => specifier.startsWith('.'))
          .map((specifier) => resolve(file, '..', specifier.replace(/\.js$/, '.ts')))
          .filter((target) => target.startsWith(CORE)),
      ]),
    );
    // Depth-first search: a file met again while still on the path closes a cycle.
    const cycles: string[] = [];
    const done = new Set<string>();
    const path: string[] = [];
    const visit = (file: string) => {
      if (done.has(file)) return;
      const at = path.indexOf(file);
      if (at >= 0) {
        cycles.push([...path.slice(at), file].map((f) => relative(CORE, f)).join(' -> '));
        return;
      }
      path.push(file);
      for (const target of graph.get(file) ?? []) visit(target);
      path.pop();
      done.add(file);
    };
    for (const file of files) visit(file);
    expect(cycles).toEqual([]);
  });
});
