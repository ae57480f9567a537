import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const SCRIPT = fileURLToPath(new URL('./index-many-patients.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Heap that an indexed patient took before the index had a budget (measured on a 3,000-row import). */
const UNBOUNDED_BYTES_PER_PATIENT = 575 * 1024;

test('the heap after GC does not grow with the number of patients whose documents were converted and indexed', () => {
  // A process of its own: a heap measured inside the test runner would carry everything else it ran.
  const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', SCRIPT], {
    cwd: ROOT,
    env: { ...process.env, PATIENTS: '160', CHECKPOINT: '40', SEARCH_BUDGET_BYTES: String(8 * 1024 * 1024) },
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(run.status, run.stderr).toBe(0);
  const report = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
  console.info(JSON.stringify(report));
  const first = report.checkpoints[0];
  const last = report.checkpoints.at(-1);
  expect(last.patients - first.patients).toBe(120);
  expect(report.documents).toBeGreaterThan(report.patients);
  // The index is full from the first checkpoint on, forgets patients, and stays within its budget.
  expect(report.evictions).toBeGreaterThan(0);
  for (const checkpoint of report.checkpoints) expect(checkpoint.indexBytes).toBeLessThanOrEqual(report.budgetBytes);
  // Growth per patient between the checkpoints: a small fraction of what an unbounded index took.
  const growthPerPatient = (last.heapBytes - first.heapBytes) / (last.patients - first.patients);
  expect(growthPerPatient).toBeLessThan(UNBOUNDED_BYTES_PER_PATIENT / 10);
}, 150_000);
