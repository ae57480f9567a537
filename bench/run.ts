/**
 * `npm run bench`: every benchmark, one after another in its own process (so one's memory and JIT state do
 * not colour the next), each printing one JSON object per measure on stdout. Figures are for the machine
 * they run on; compare ratios measured in the same run, never absolute times across machines.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const BENCHES = [
  'bulk.bench.ts',
  'ccda.bench.ts',
  'ccda-corpus.bench.ts',
  'fold.bench.ts',
  'journey.bench.ts',
  'search.bench.ts',
  'webhooks.bench.ts',
  'throughput.bench.ts',
  'instances.bench.ts',
  'hostile.bench.ts',
  'console.bench.ts',
];
const names = BENCHES.map((file) => file.replace(/\.bench\.ts$/, ''));
const only = process.argv.slice(2);
/** `ccda` is that bench alone, not every bench whose name starts with it; a word naming none picks by prefix. */
const wanted = (name: string) => only.length === 0 || only.some((word) => (names.includes(word) ? name === word : name.startsWith(word)));
let failed = 0;
for (const name of BENCHES) {
  if (!wanted(name.replace(/\.bench\.ts$/, ''))) continue;
  const file = fileURLToPath(new URL(name, import.meta.url));
  if (!existsSync(file)) continue;
  const result = spawnSync(process.execPath, ['--import', 'tsx', file], { stdio: ['ignore', 'inherit', 'inherit'], env: process.env });
  if (result.status !== 0) {
    failed++;
    process.stdout.write(`${JSON.stringify({ bench: name, error: `exited with ${result.status ?? result.signal}` })}\n`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
