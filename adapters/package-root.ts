import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/**
 * The folder of carebridge's own package.json. The code runs both from its sources and from the built
 * `dist/` (one level deeper), so files shipped beside the code (package.json, sandbox-data/) are found by
 * walking up to the package, not by a fixed relative path.
 */
export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'carebridge') return (root = dir);
    const parent = dirname(dir);
    if (parent === dir) throw new Error('carebridge: cannot find its own package.json above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

/** carebridge's package version. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
