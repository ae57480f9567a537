/**
 * Folding converted documents into a patient's record on one thread, as a document query's conversion step
 * does (on the converter's thread in the service; here without the JSON text it crosses as): the 8 sandbox documents converted once (untimed), then for each of 60 patients two
 * conversion steps of two documents each, every step building the record from what the last one stored
 * (`ConsolidatedRecord`) and folding its documents in. Reports the milliseconds per document folded: the
 * median of BENCH_ROUNDS rounds (default 7) after 4 untimed ones, by the clock and by this process's CPU
 * time. Prints one JSON object.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { MedplumCcdaConverter } from '../adapters/ccda/medplum.ccda.js';
import { ConsolidatedRecord } from '../core/documents/consolidate.js';
import type { FhirResourceRecord } from '../core/domain/types.js';
import type { FhirResource } from '../core/ports/ccda.port.js';
import { sandboxDocumentsDir } from '../runtime/sandbox-documents.js';
import { emit } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const PATIENTS = 60;

const dir = sandboxDocumentsDir();
const converter = new MedplumCcdaConverter();
const conversions: FhirResource[][] = [];
for (const name of readdirSync(dir).filter((file) => file.endsWith('.xml')).sort()) {
  const bundle = await converter.convert(readFileSync(path.join(dir, name), 'utf8'));
  conversions.push((bundle.entry ?? []).map((entry) => entry.resource as FhirResource));
}

/** One round: every patient's two steps. Returns the documents folded. */
function round(): number {
  let folded = 0;
  for (let patient = 0; patient < PATIENTS; patient++) {
    let stored: FhirResourceRecord[] = [];
    for (let step = 0; step < 2; step++) {
      const record = new ConsolidatedRecord('account', `patient-${patient}`, stored);
      for (let k = 0; k < 2; k++) {
        const resources = conversions[(patient * 7 + step * 3 + k) % conversions.length]!;
        record.fold({ documentId: `document-${patient}-${step}-${k}`, resources }, '2026-01-01T00:00:00.000Z');
        folded++;
      }
      stored = [...record.all()];
    }
  }
  return folded;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (let i = 0; i < 4; i++) round();
const wall: number[] = [];
const cpu: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const started = performance.now();
  const usage = process.cpuUsage();
  const folded = round();
  const used = process.cpuUsage(usage);
  wall.push((performance.now() - started) / folded);
  cpu.push((used.user + used.system) / 1000 / folded);
}
const round3 = (value: number) => Math.round(value * 1000) / 1000;
emit({ measure: 'fold: documents folded into a patient\'s record (one thread)', documentsPerRound: PATIENTS * 4, rounds: ROUNDS, msPerDocument: round3(median(wall)), cpuMsPerDocument: round3(median(cpu)) });
