import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * System programs some tests drive (Debian's Chromium, poppler's pdftoppm and pdftotext), installed by
 * .ci/run when missing. Under CI (`CI` set) a missing one throws when the test file loads, so the run
 * fails instead of passing untested; elsewhere its tests are skipped with the reason printed.
 *
 * Usage in a test file:
 *   const chromium = systemTool(CHROMIUM, 'Chromium', 'apt-get install -y chromium');
 *   describe.skipIf(!chromium)('... in a browser', () => { ... });
 */
export function systemTool(program: string, what: string, install: string): string | undefined {
  const found = program.includes('/') ? (existsSync(program) ? program : undefined) : onPath(program);
  if (found) return found;
  if (process.env.CI) throw new Error(`${what} is required under CI and ${program} is not installed (${install})`);
  console.warn(`skipping the tests that need ${what}: ${program} is not installed (${install})`);
  return undefined;
}

function onPath(name: string): string | undefined {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter(Boolean)
    .map((dir) => path.join(dir, name))
    .find((candidate) => existsSync(candidate));
}

/** Debian's Chromium, or the one CAREBRIDGE_CHROMIUM names. */
export const CHROMIUM = process.env.CAREBRIDGE_CHROMIUM ?? '/usr/bin/chromium';

/** Headless, sandbox-free (containers), and quiet: no first-run page, no background requests of its own. */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-quic', '--disable-component-update', '--disable-sync'];
