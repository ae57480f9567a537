#!/usr/bin/env -S node --heap-growing-percent=100
// The heap flag is the one `npm start` gives Node (why: hosts/koa/main.ts).
// The `carebridge` command. Installed from the package it runs the built JavaScript in dist/. In a clone
// that was not built, it registers tsx (a dependency) so Node runs the TypeScript sources as they are,
// with the project's tsconfig whatever the current directory.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = new URL('../dist/hosts/cli/main.js', import.meta.url);
if (existsSync(fileURLToPath(built))) {
  await import(built.href);
} else {
  const { register } = await import('tsx/esm/api');
  register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
  await import('../hosts/cli/main.ts');
}
