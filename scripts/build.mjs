// Builds the package: TypeScript to dist/ (JavaScript and declarations), plus the C-CDA pool thread's
// plain-JavaScript entry and the /docs and /console pages' assets, which tsc does not copy. Run by `npm run build` and before packing.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
copyFileSync(new URL('../adapters/ccda/ccda.worker.mjs', import.meta.url), new URL('../dist/adapters/ccda/ccda.worker.mjs', import.meta.url));
// The /docs page's script and style, served as they are.
mkdirSync(new URL('../dist/http/docs-assets', import.meta.url), { recursive: true });
for (const asset of ['docs.js', 'docs.css']) copyFileSync(new URL(`../http/docs-assets/${asset}`, import.meta.url), new URL(`../dist/http/docs-assets/${asset}`, import.meta.url));
// The console's modules and style, served as they are (no bundling: the browser loads the modules itself).
mkdirSync(new URL('../dist/http/console-assets', import.meta.url), { recursive: true });
for (const asset of readdirSync(new URL('../http/console-assets', import.meta.url))) {
  copyFileSync(new URL(`../http/console-assets/${asset}`, import.meta.url), new URL(`../dist/http/console-assets/${asset}`, import.meta.url));
}
