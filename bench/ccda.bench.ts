/**
 * C-CDA to FHIR conversions per second: the 8 sandbox documents converted round-robin `BENCH_CONVERSIONS`
 * times (default 200), in process (MedplumCcdaConverter, one at a time: it holds the thread anyway) and in a
 * pool of `BENCH_CCDA_THREADS` worker threads (PooledCcdaConverter, default 2, twice as many conversions in
 * flight as threads), in `BENCH_ROUNDS` alternating rounds (default 4). Both are warmed up first, untimed
 * (for the pool, its threads load the converter). Also the main thread's worst event-loop delay (p99 and
 * max of each round): what a request arriving meanwhile would wait. And what the repairs cost: the same
 * conversions in process without them (`repairs: false`: the converter and what keeps it from crashing),
 * in rounds alternating with the repaired ones, as milliseconds per document (elapsed, and the process's
 * CPU time, which other work on the machine sways less). Prints one JSON object;
 * compare the ratios, measured in the same run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { MedplumCcdaConverter } from '../adapters/ccda/medplum.ccda.js';
import { PooledCcdaConverter } from '../adapters/ccda/pooled.ccda.js';
import type { CcdaConverterPort } from '../core/ports/ccda.port.js';
import { sandboxDocumentsDir } from '../runtime/sandbox-documents.js';

const CONVERSIONS = Number(process.env.BENCH_CONVERSIONS ?? 200);
const THREADS = Number(process.env.BENCH_CCDA_THREADS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);

const dir = sandboxDocumentsDir();
const documents = readdirSync(dir)
  .filter((name) => name.endsWith('.xml'))
  .sort()
  .map((name) => readFileSync(path.join(dir, name), 'utf8'));

interface Tally {
  conversions: number;
  resources: number;
  ms: number;
  /** The process's CPU time meanwhile (user + system): less swayed than `ms` by other work on the machine. */
  cpuMs: number;
  delays: number[];
}

/**
 * Converts `count` documents with at most `inFlight` at once, yielding to the event loop after each as a
 * job's storage writes would, and records the main thread's event-loop delay meanwhile.
 */
async function run(converter: CcdaConverterPort, inFlight: number, count: number, tally: Tally): Promise<void> {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const xml = documents[next++ % documents.length]!;
        const bundle = await converter.convert(xml);
        tally.resources += bundle.entry?.length ?? 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }),
  );
  tally.ms += performance.now() - started;
  const used = process.cpuUsage(cpu);
  tally.cpuMs += (used.user + used.system) / 1000;
  tally.conversions += count;
  delay.disable();
  if (delay.count > 0) tally.delays.push(delay.percentile(99) / 1e6, delay.max / 1e6);
}

function report(tally: Tally) {
  const round = (value: number) => Math.round(value * 10) / 10;
  return {
    conversions: tally.conversions,
    resources: tally.resources,
    ms: Math.round(tally.ms),
    conversionsPerSecond: round((tally.conversions / tally.ms) * 1000),
    worstEventLoopDelayMs: round(Math.max(0, ...tally.delays)),
  };
}

const inProcessConverter = new MedplumCcdaConverter();
const unrepairedConverter = new MedplumCcdaConverter({ repairs: false });
const pool = new PooledCcdaConverter({ maxThreads: THREADS });
const inProcess: Tally = { conversions: 0, resources: 0, ms: 0, cpuMs: 0, delays: [] };
const withRepairs: Tally = { conversions: 0, resources: 0, ms: 0, cpuMs: 0, delays: [] };
const unrepaired: Tally = { conversions: 0, resources: 0, ms: 0, cpuMs: 0, delays: [] };
const pooled: Tally = { conversions: 0, resources: 0, ms: 0, cpuMs: 0, delays: [] };
try {
  // Warm-up, untimed: JIT for all, and the pool's threads load the converter.
  await Promise.all(documents.map((xml) => inProcessConverter.convert(xml)));
  await Promise.all(documents.map((xml) => unrepairedConverter.convert(xml)));
  await Promise.all([...documents, ...documents].map((xml) => pool.convert(xml)));
  // Rounds alternate which goes first, so a change in the machine's load meanwhile falls on all alike.
  for (let round = 0; round < ROUNDS; round++) {
    const count = Math.floor(CONVERSIONS / ROUNDS) + (round < CONVERSIONS % ROUNDS ? 1 : 0);
    const sides = [() => run(inProcessConverter, 1, count, inProcess), () => run(pool, THREADS * 2, count, pooled)];
    for (const side of round % 2 === 0 ? sides : sides.reverse()) await side();
    // With and without the repairs back to back, in alternating order: the pool's threads never run just before one of them only.
    const repairs = [() => run(inProcessConverter, 1, count, withRepairs), () => run(unrepairedConverter, 1, count, unrepaired)];
    for (const side of round % 2 === 0 ? repairs : repairs.reverse()) await side();
  }
} finally {
  await pool.close();
}
const inProcessReport = report(inProcess);
const unrepairedReport = report(unrepaired);
const pooledReport = report(pooled);
const msPerDocument = (tally: Tally) => Math.round((tally.ms / tally.conversions) * 100) / 100;
const cpuMsPerDocument = (tally: Tally) => Math.round((tally.cpuMs / tally.conversions) * 100) / 100;

process.stdout.write(
  `${JSON.stringify({
    bench: 'ccda-conversion',
    documents: documents.length,
    threads: THREADS,
    inProcess: inProcessReport,
    pooled: pooledReport,
    pooledOverInProcess: Math.round((pooledReport.conversionsPerSecond / inProcessReport.conversionsPerSecond) * 100) / 100,
    repairs: {
      msPerDocument: msPerDocument(withRepairs),
      msPerDocumentWithout: msPerDocument(unrepaired),
      resourcesWithout: unrepairedReport.resources,
      // What the repairs add to a conversion, as a share of the conversion without them.
      cost: Math.round((msPerDocument(withRepairs) / msPerDocument(unrepaired) - 1) * 1000) / 1000,
      cpuMsPerDocument: cpuMsPerDocument(withRepairs),
      cpuMsPerDocumentWithout: cpuMsPerDocument(unrepaired),
      cpuCost: Math.round((cpuMsPerDocument(withRepairs) / cpuMsPerDocument(unrepaired) - 1) * 1000) / 1000,
    },
    cpus: availableParallelism(),
    node: process.version,
  })}\n`,
);
