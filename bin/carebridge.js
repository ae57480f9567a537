#!/usr/bin/env -S node --heap-growing-percent=100
// The heap flag is the one `npm start` gives Node (why: hosts/koa/main.ts).
// The `carebridge` command: registers tsx (a dependency) so Node runs the TypeScript sources as they are,
// with the project's tsconfig whatever the current directory, then hands over to the CLI.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
await import('../hosts/cli/main.ts');
