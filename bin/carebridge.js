#!/usr/bin/env -S node --heap-growing-percent=100
// The heap flag is the one `npm start` gives Node (why: hosts/service/main.ts).
// The `carebridge` command. In a clone of the repository (its tsconfig.json beside bin/) it registers tsx
// (a dependency) so Node runs the TypeScript sources as they are, whatever the current directory, so the
// command never runs a stale build. The installed package ships no tsconfig.json: it runs dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const tsconfig = fileURLToPath(new URL('../tsconfig.json', import.meta.url));
if (existsSync(tsconfig)) {
  const { register } = await import('tsx/esm/api');
  register({ tsconfig });
  await import('../hosts/service/cli-main.ts');
} else {
  await import('../dist/hosts/service/cli-main.js');
}
