import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

/*
 * The whole checkout, tests included, type-checks. The build compiles only what ships, so without this the
 * compile-time facts written in tests (`@ts-expect-error` lines: a route's params, a request schema's shape)
 * would never be checked by `npm test`.
 */
test('the checkout type-checks (tsc --noEmit)', () => {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  let output = '';
  try {
    execFileSync(process.execPath, [tsc, '--noEmit', '-p', 'tsconfig.json'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    output = String((error as { stdout?: string }).stdout ?? error);
  }
  expect(output).toBe('');
}, 600_000);
