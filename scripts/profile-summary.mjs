// Summarises V8 CPU profiles (node --cpu-prof, e.g. the journey bench's BENCH_CPU_PROF): per profile, how
// busy the thread was, self time by module (the repository's files one by one, node_modules by package,
// Node's own internals together) and the functions with the most self time.
// Usage: node scripts/profile-summary.mjs <file.cpuprofile | dir> [top=25]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const [target, topArg] = process.argv.slice(2);
const top = Number(topArg ?? 25);
const files = statSync(target).isDirectory()
  ? readdirSync(target).filter((name) => name.endsWith('.cpuprofile')).sort().map((name) => join(target, name))
  : [target];

function moduleOf(url) {
  if (!url) return '(native/vm)';
  if (url.startsWith('node:')) return 'node internals';
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const nm = path.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = path.slice(nm + 'node_modules/'.length).split('/');
    return `npm:${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  return path.startsWith(root) ? relative(root, path) : path;
}

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  const deltas = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    self.set(id, (self.get(id) ?? 0) + (deltas[i + 1] ?? 0));
  }
  let total = 0;
  let idle = 0;
  const modules = new Map();
  const functions = new Map();
  for (const [id, us] of self) {
    const { callFrame } = byId.get(id);
    total += us;
    if (callFrame.functionName === '(idle)') { idle += us; continue; }
    const special = callFrame.functionName.startsWith('(') ? callFrame.functionName : undefined;
    const module = special ?? moduleOf(callFrame.url);
    modules.set(module, (modules.get(module) ?? 0) + us);
    const fn = `${callFrame.functionName || '(anonymous)'} ${special ? '' : `${module}:${callFrame.lineNumber + 1}`}`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
  }
  const busy = total - idle;
  const ms = (us) => Math.round(us / 1000);
  const pct = (us) => `${((100 * us) / busy).toFixed(1)}%`;
  console.log(`\n## ${file.split('/').pop()}: ${ms(total)} ms sampled, busy ${ms(busy)} ms (${((100 * busy) / total).toFixed(0)}%)`);
  console.log('self time by module (share of busy time):');
  for (const [module, us] of [...modules].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us).padStart(6)} ${String(ms(us)).padStart(7)} ms  ${module}`);
  console.log('top functions by self time:');
  for (const [fn, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us).padStart(6)} ${String(ms(us)).padStart(7)} ms  ${fn}`);
}
