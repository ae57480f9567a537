/**
 * The one-core conversion floor, measured in a process of its own: `node --import tsx
 * bench/conversion-floor.ts <fixtures.json>`, where the file lists `{ file, count }` (a fixture of
 * sandbox-data/ccda and how many times the journey converted it). Prints `{ bareMs, repairedMs }`.
 *
 * Its own process because the bench's process, after a journey, holds the receiver's messages and the
 * API samples: the library's garbage collection had a larger heap to walk there, and the floor read
 * 11.2 ms per document where a fresh process reads 8. The journey bench pins this process to one core.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MedplumCcdaConverter } from '../adapters/ccda/medplum.ccda.js';

const FIXTURES = fileURLToPath(new URL('../sandbox-data/ccda/', import.meta.url));
/** Untimed passes over the fixtures before timing: a converter's code runs several times slower until the JIT has compiled it. */
const WARM_PASSES = 25;
/** Timed conversions of each fixture; its median is taken. */
const TIMED_PASSES = 11;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Each fixture's conversion time, warm (median of TIMED_PASSES after WARM_PASSES untimed passes over all
 * of them), times how often the journey converted it. Timed by the CPU time of the process (its garbage
 * collector's threads included), not by the clock, so that other work on the machine does not lengthen it.
 */
async function floorOf(converter: MedplumCcdaConverter, fixtures: readonly { xml: string; count: number }[]): Promise<number> {
  for (let pass = 0; pass < WARM_PASSES; pass++) for (const { xml } of fixtures) await converter.convert(xml);
  const times = fixtures.map((): number[] => []);
  for (let pass = 0; pass < TIMED_PASSES; pass++) {
    for (const [index, { xml }] of fixtures.entries()) {
      const started = process.cpuUsage();
      await converter.convert(xml);
      const used = process.cpuUsage(started);
      times[index]!.push((used.user + used.system) / 1000);
    }
  }
  return fixtures.reduce((sum, { count }, index) => sum + median(times[index]!) * count, 0);
}

const uses = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as { file: string; count: number }[];
const fixtures = uses.map(({ file, count }) => ({ xml: readFileSync(join(FIXTURES, file), 'utf8'), count }));
// The library alone (`repairs: false`: @medplum/ccda with only what keeps it from crashing) is the floor
// the journey is held to; the converter as the service runs it is reported beside it.
const bareMs = await floorOf(new MedplumCcdaConverter({ repairs: false }), fixtures);
const repairedMs = await floorOf(new MedplumCcdaConverter(), fixtures);
process.stdout.write(`${JSON.stringify({ bareMs, repairedMs })}\n`);
