/**
 * Benchmark: the console in headless Chromium (Debian's, as the end-to-end test uses) against the service
 * started as `npm start` starts it, on SQLite. Times, from navigation to the view drawn, each one loaded
 * fresh in a new tab with the key already in the tab's session (as after a sign-in):
 *
 * - the first view (Imports: the account's facilities and earlier imports);
 * - the patient view of Eve Betterhalf (the sandbox person with three documents), problems and charts drawn;
 * - the patient view of a record of about `BENCH_RESOURCES` (default 5000) resources: observations spread
 *   over 50 codes (so 50 charts), conditions, medications, added with PUT .../consolidated.
 *
 * Beside them, in the same run, for ratios: the sign-in form (the page and its modules, no API call) and
 * the large record's consolidated bundle fetched by Node alone (what the patient view waits for).
 *
 * Prints one JSON object per measure. `BENCH_ROUNDS` (default 15). Targets: first view p50 under 1 s;
 * the 5,000-resource patient view under 2 s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { chromium, type Page } from 'playwright-core';
import { killServiceProcess, printedApiKey, startServiceProcess } from '../spec/support/service-process.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../spec/support/system-tools.js';
import { emit } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const RESOURCES = Number(process.env.BENCH_RESOURCES ?? 5000);
const ADDRESS = { addressLine1: '1357 Amber Drive', city: 'Beaverton', state: 'OR', zip: '97867', country: 'USA' };

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const dataDir = mkdtempSync(path.join(tmpdir(), 'carebridge-console-bench-'));
const service = await startServiceProcess({ DATA_DIR: dataDir, RATE_LIMITS: 'off' });
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
try {
  const apiKey = printedApiKey(service);
  const call = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${service.url}${route}`, { method, headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
    return (await response.json()) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const facility = (await call('POST', '/medical/v1/facility', { name: 'Bench Clinic', npi: '1234567893', address: ADDRESS })).id as string;
  const eve = (await call('POST', `/medical/v1/patient?facilityId=${facility}`, { firstName: 'Eve', lastName: 'Betterhalf', dob: '1975-05-01', genderAtBirth: 'F', address: ADDRESS })).id as string;
  await call('POST', `/medical/v1/document/query?patientId=${eve}&facilityId=${facility}`, {});
  for (;;) {
    const status = await call('GET', `/medical/v1/document/query?patientId=${eve}`);
    if (status.convert?.status && status.convert.status !== 'processing' && status.download.status !== 'processing') break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const large = (await call('POST', `/medical/v1/patient?facilityId=${facility}`, { firstName: 'Large', lastName: 'Record', dob: '1960-01-01', genderAtBirth: 'M', address: { ...ADDRESS, zip: '97005' } })).id as string;
  const resources: object[] = [];
  for (let i = 0; i < RESOURCES; i++) {
    const kind = i % 10;
    const day = new Date(Date.UTC(2000, 0, 1) + i * 86_400_000).toISOString().slice(0, 10);
    if (kind < 8) {
      const code = String(1000 + (i % 50));
      resources.push({
        resourceType: 'Observation',
        status: 'final',
        category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: i % 2 ? 'laboratory' : 'vital-signs' }] }],
        code: { coding: [{ system: 'http://loinc.org', code, display: `Measure ${code}` }], text: `Measure ${code}` },
        valueQuantity: { value: 50 + ((i * 7) % 40), unit: 'mg/dL' },
        referenceRange: [{ low: { value: 55, unit: 'mg/dL' }, high: { value: 80, unit: 'mg/dL' } }],
        effectiveDateTime: day,
      });
    } else if (kind === 8) {
      resources.push({ resourceType: 'Condition', clinicalStatus: { coding: [{ code: i % 3 ? 'active' : 'resolved' }] }, code: { text: `Condition ${i}` }, onsetDateTime: day });
    } else {
      resources.push({ resourceType: 'MedicationStatement', status: 'active', medicationCodeableConcept: { text: `Medication ${i}` }, effectivePeriod: { start: day } });
    }
  }
  for (let start = 0; start < resources.length; start += 1000) {
    await call('PUT', `/medical/v1/patient/${large}/consolidated`, { resourceType: 'Bundle', type: 'transaction', entry: resources.slice(start, start + 1000).map((resource) => ({ resource })) });
  }

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(`sessionStorage.setItem('carebridge.console.apiKey', ${JSON.stringify(apiKey)})`);

  const anonymous = await browser.newContext({ viewport: { width: 1280, height: 900 } });

  /**
   * Where a view's time goes, read in the page once it is drawn (times from the navigation's start): when
   * the last API answer arrived, when the last module arrived, how many requests and elements it took.
   */
  const BREAKDOWN = `(() => {
    const resources = performance.getEntriesByType('resource');
    const path = (r) => new URL(r.name).pathname;
    const api = resources.filter((r) => path(r).startsWith('/medical/') || path(r).startsWith('/settings'));
    const modules = resources.filter((r) => path(r).startsWith('/console/'));
    const last = (list) => Math.round(Math.max(0, ...list.map((r) => r.responseEnd)));
    const byTime = [...api].sort((a, b) => b.responseEnd - a.responseEnd);
    const shape = (r) => path(r).replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, ':id');
    // The API answers that ended last, with when each was asked and answered: what the view waited for.
    const lastAnswers = byTime.slice(0, 3).map((r) => shape(r) + ' ' + Math.round(r.startTime) + '-' + Math.round(r.responseEnd));
    return { lastAnswers, drawnMs: Math.round(performance.now()), lastModuleMs: last(modules), lastApiAnswerMs: last(api), apiRequests: api.length, apiKB: Math.round(api.reduce((n, r) => n + r.encodedBodySize, 0) / 1024), elements: document.getElementsByTagName('*').length };
  })()`;

  async function time(measure: string, hash: string, drawn: (page: Page) => Promise<unknown>, extra: Record<string, unknown> = {}, within = context) {
    const times: number[] = [];
    const breakdowns: Record<string, unknown>[] = [];
    for (let round = 0; round < ROUNDS + 1; round++) {
      const page = await within.newPage();
      const started = performance.now();
      await page.goto(`${service.url}/console${hash}`);
      await drawn(page);
      const ms = performance.now() - started;
      const breakdown = await page.evaluate<Record<string, unknown>>(BREAKDOWN);
      await page.close();
      // The first round warms the service's caches and Chromium's; it is not counted.
      if (round > 0) {
        times.push(ms);
        breakdowns.push(breakdown);
      }
    }
    times.sort((a, b) => a - b);
    // The median of each part on its own: the parts of one round need not add up to another's total.
    const numeric = Object.keys(breakdowns[0]!).filter((key) => typeof breakdowns[0]![key] === 'number');
    const median: Record<string, unknown> = Object.fromEntries(numeric.map((key) => [key, percentile(breakdowns.map((b) => b[key] as number).sort((a, b) => a - b), 50)]));
    median.lastAnswersOfLastRound = breakdowns.at(-1)!.lastAnswers;
    emit({ bench: 'console', measure, rounds: ROUNDS, p50Ms: Math.round(percentile(times, 50)), p90Ms: Math.round(percentile(times, 90)), maxMs: Math.round(times.at(-1)!), inPageP50: median, ...extra });
  }

  await time('sign-in form (no API call)', '', (page) => page.getByLabel('API key').waitFor(), {}, anonymous);
  {
    const times: number[] = [];
    for (let round = 0; round < ROUNDS + 1; round++) {
      const started = performance.now();
      await call('GET', `/medical/v1/patient/${large}/consolidated`);
      if (round > 0) times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    emit({ bench: 'console', measure: 'API alone: the large record consolidated (Node fetch)', rounds: ROUNDS, p50Ms: Math.round(percentile(times, 50)), maxMs: Math.round(times.at(-1)!), resources: RESOURCES });
  }
  await time('first view (imports)', '#/imports', (page) => page.locator('section[aria-labelledby="imports-title"] table').waitFor());
  await time('patient view, sandbox record', `#/patients/${eve}`, (page) => page.getByRole('img', { name: /^Systolic blood pressure/ }).waitFor(), { resources: 'sandbox (3 documents)' });
  await time('patient view, large record', `#/patients/${large}`, (page) => page.getByRole('img', { name: /^Measure 1047/ }).waitFor(), { resources: RESOURCES });
} finally {
  await browser.close();
  await killServiceProcess(service);
  rmSync(dataDir, { recursive: true, force: true });
}
