/**
 * What the repairs cost on the C-CDA corpus (corpus/ccda): every document converted in process with the
 * repairs (MedplumCcdaConverter, as the service does) and without them (`repairs: false`: @medplum/ccda's
 * convertXmlToCcda and convertCcdaToFhir with only what keeps them from crashing, as `npm run bench ccda`
 * measures it), in `BENCH_ROUNDS` rounds (default 3) that alternate which side goes first, after an untimed
 * warm-up that also finds the documents one side cannot convert (they are left out of both). Reports
 * milliseconds per document per source group and overall, elapsed and in the process's CPU time, and the
 * ratios repaired / without. Prints one JSON object; compare the ratios, measured in the same run.
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { MedplumCcdaConverter } from '../adapters/ccda/medplum.ccda.js';
import type { CcdaConverterPort } from '../core/ports/ccda.port.js';
import { CORPUS_GROUPS, loadCorpus } from '../spec/support/ccda-corpus.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

interface Side {
  name: 'repaired' | 'withoutRepairs';
  converter: CcdaConverterPort;
  /** Elapsed milliseconds per group, summed over rounds. */
  ms: Map<string, number>;
  /** The process's CPU time (user + system) per group, summed over rounds: other work on the machine sways it less. */
  cpuMs: Map<string, number>;
  conversions: number;
}

const corpus = loadCorpus();
const sides: Side[] = [
  { name: 'repaired', converter: new MedplumCcdaConverter(), ms: new Map(), cpuMs: new Map(), conversions: 0 },
  { name: 'withoutRepairs', converter: new MedplumCcdaConverter({ repairs: false }), ms: new Map(), cpuMs: new Map(), conversions: 0 },
];

// The converter's console warnings about value types it skips would drown the JSON line.
console.warn = () => {};

const excluded: { path: string; side: string; message: string }[] = [];
const documents: typeof corpus = [];
for (const document of corpus) {
  let converts = true;
  for (const side of sides) {
    try {
      await side.converter.convert(document.xml);
    } catch (error) {
      converts = false;
      const cause = error instanceof Error && error.cause instanceof Error ? ` <- ${error.cause.message}` : '';
      excluded.push({ path: document.path, side: side.name, message: `${error instanceof Error ? error.message : String(error)}${cause}` });
    }
  }
  if (converts) documents.push(document);
}

const add = (map: Map<string, number>, group: string, ms: number) => map.set(group, (map.get(group) ?? 0) + ms);

async function round(side: Side): Promise<void> {
  for (const document of documents) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    await side.converter.convert(document.xml);
    add(side.ms, document.group, performance.now() - started);
    const used = process.cpuUsage(cpu);
    add(side.cpuMs, document.group, (used.user + used.system) / 1000);
    // As a job would between conversions: let the event loop run.
    await new Promise((resolve) => setImmediate(resolve));
  }
  side.conversions += documents.length;
}

for (let index = 0; index < ROUNDS; index++) {
  for (const side of index % 2 === 0 ? sides : [...sides].reverse()) await round(side);
}

const perDocument = (ms: number, count: number) => Math.round((ms / count) * 100) / 100;
const ratio = (repaired: number, without: number) => Math.round((repaired / without) * 1000) / 1000;
const [repaired, without] = sides as [Side, Side];
const sum = (map: Map<string, number>, group?: string) => (group === undefined ? [...map.values()].reduce((total, ms) => total + ms, 0) : (map.get(group) ?? 0));

/** Milliseconds per document, elapsed and CPU, with and without the repairs, over `count` documents (all groups when none is named). */
function figures(count: number, group?: string) {
  const conversions = count * ROUNDS;
  return {
    documents: count,
    msPerDocument: { repaired: perDocument(sum(repaired.ms, group), conversions), withoutRepairs: perDocument(sum(without.ms, group), conversions) },
    ratio: ratio(sum(repaired.ms, group), sum(without.ms, group)),
    cpuMsPerDocument: { repaired: perDocument(sum(repaired.cpuMs, group), conversions), withoutRepairs: perDocument(sum(without.cpuMs, group), conversions) },
    cpuRatio: ratio(sum(repaired.cpuMs, group), sum(without.cpuMs, group)),
  };
}

const groups: Record<string, ReturnType<typeof figures>> = {};
for (const group of CORPUS_GROUPS) {
  const count = documents.filter((document) => document.group === group).length;
  if (count > 0) groups[group] = figures(count, group);
}

process.stdout.write(
  `${JSON.stringify({
    bench: 'ccda-corpus',
    documents: documents.length,
    excluded,
    rounds: ROUNDS,
    overall: figures(documents.length),
    groups,
    cpus: availableParallelism(),
    node: process.version,
  })}\n`,
);
