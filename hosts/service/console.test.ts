import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startReceiver, type Receiver } from '../../spec/support/receiver.js';
import { killServiceProcess, printedApiKey, startServiceProcess, type ServiceProcess } from '../../spec/support/service-process.js';
import { CHROMIUM, CHROMIUM_ARGS, systemTool } from '../../spec/support/system-tools.js';

/**
 * The console as a person uses it, in Debian's headless Chromium against the service started as `npm start`
 * starts it: sign in, import a CSV and read a failed row's reason, open a patient with documents and read a
 * problem, an allergy and a chart, toggle the opt-out, replay a webhook, rotate the key. Every view is checked
 * with axe-core (no serious or critical violation) and saved as a screenshot at 1280 px and at phone width
 * under console-screenshots/ (git-ignored). With UPDATE_README_SCREENSHOT set, the patient view is also
 * written to docs/console.png, the README's picture.
 */
const available = systemTool(CHROMIUM, 'Chromium', 'apt-get install -y chromium') !== undefined;

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHOTS = path.join(ROOT, 'console-screenshots');
const AXE = readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
const WIDE = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

let dataDir: string;
let service: ServiceProcess;
let receiver: Receiver;
let browser: Browser;
let apiKey: string;

async function api(method: string, route: string, body?: unknown) {
  const response = await fetch(`${service.url}${route}`, {
    method,
    headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: response.status === 204 ? undefined : ((await response.json()) as any) }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** The account's facility, created the first time. */
async function facilityId(): Promise<string> {
  const facilities = await api('GET', '/medical/v1/facility');
  if (facilities.body.facilities.length > 0) return facilities.body.facilities[0].id;
  const created = await api('POST', '/medical/v1/facility', { name: 'Main Clinic', npi: '1234567893', address: { addressLine1: '1 Main St', city: 'Beaverton', state: 'OR', zip: '97005', country: 'USA' } });
  expect(created.status).toBe(201);
  return created.body.id;
}

beforeAll(async () => {
  if (!available) return;
  dataDir = mkdtempSync(path.join(tmpdir(), 'carebridge-console-'));
  mkdirSync(SHOTS, { recursive: true });
  receiver = await startReceiver();
  receiver.setDefault({ kind: 'ok', pong: true });
  service = await startServiceProcess({ DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMITS: 'off' });
  apiKey = printedApiKey(service);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (service) await killServiceProcess(service);
  await receiver?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** No serious or critical axe-core violation in the page as it is now. */
async function expectAccessible(page: Page, view: string): Promise<void> {
  // Expressions as text: they run in the page, whose globals (window, document) this Node program has not.
  if (!(await page.evaluate<boolean>("'axe' in window"))) await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }>("axe.run(document, { resultTypes: ['violations'] })");
  const violations = result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join(' | ')}`);
  expect(violations, `axe on ${view}`).toEqual([]);
}

async function shoot(page: Page, view: string, width: 'wide' | 'phone'): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${view}-${width}.png`), fullPage: true });
}

/** Checks and saves the view at both widths, then goes back to the wide one. */
async function checkView(page: Page, view: string): Promise<void> {
  await expectAccessible(page, `${view} at 1280 px`);
  await shoot(page, view, 'wide');
  await page.setViewportSize(PHONE);
  // Usable on a phone: nothing wider than the screen (wide tables scroll inside their own region).
  expect(await page.evaluate<number>('document.documentElement.scrollWidth'), `${view} width at phone width`).toBeLessThanOrEqual(PHONE.width);
  await expectAccessible(page, `${view} at phone width`);
  await shoot(page, view, 'phone');
  await page.setViewportSize(WIDE);
}

const CSV = [
  'externalId,firstName,lastName,dob,gender,addressLine1,city,state,zip',
  'eve-1,Eve,Betterhalf,1975-05-01,F,1357 Amber Drive,Beaverton,OR,97867',
  'bad-2,Nobody,Knows,1975-13-45,F,1 Main St,Beaverton,OR,97867',
].join('\n');

describe.skipIf(!available)('the console in a browser', () => {
  test('sign in, import, read a patient record, opt out, replay a webhook, rotate the key; accessible and saved at two widths', async () => {
    // What a new account has to set up first, through the API: a facility and the webhook URL.
    await facilityId();
    const settings = await api('POST', '/settings', { webhookUrl: `${receiver.url}/hooks` });
    expect(settings.body.webhookEnabled).toBe(true);

    const context = await browser.newContext({ viewport: WIDE });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    // Failed responses are named by the listener below; the console's own line for them says no more.
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(message.text());
    });
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    try {
      // --- Sign in ---
      await page.goto(`${service.url}/console`);
      await page.getByLabel('API key').waitFor();
      await checkView(page, 'sign-in');
      // A wrong key is refused by the form, and nothing is kept of it.
      await page.getByLabel('API key').fill('cb_not-a-key');
      await page.getByLabel('API key').press('Enter');
      await page.getByRole('alert').getByText('This API key is not valid').waitFor();
      expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
      expect(problems).toEqual(['401 /medical/v1/organization']);
      problems.length = 0;
      // Signed in from the keyboard: the key typed, then Enter.
      await page.getByLabel('API key').fill(apiKey);
      await page.getByLabel('API key').press('Enter');
      await page.getByRole('heading', { level: 1, name: 'Imports' }).waitFor();
      // The key is in the tab's session storage only, never in the address.
      expect(page.url()).not.toContain(apiKey);
      expect(await page.evaluate<number[]>('[sessionStorage.length, localStorage.length]')).toEqual([1, 0]);
      await checkView(page, 'imports');

      // --- Import a CSV and watch it ---
      await page.getByLabel('CSV file').setInputFiles({ name: 'patients.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) });
      await page.getByRole('button', { name: 'Start import' }).click();
      const detail = page.locator('section[aria-labelledby="import-detail-title"]');
      await detail.getByText('completed', { exact: true }).first().waitFor({ timeout: 60_000 });
      await expect.poll(() => detail.locator('[data-count="failed"]').innerText()).toBe('1');
      expect(await detail.locator('[data-count="created"]').innerText()).toBe('1');
      const failed = detail.locator('table.failed-rows');
      await failed.waitFor();
      expect(await failed.innerText()).toMatch(/bad-2[\s\S]*dob/);
      // The reasons can be filtered.
      await page.getByLabel('Filter the failed rows').fill('no such text');
      await detail.getByText('No data', { exact: false }).or(detail.getByText('None.')).first().waitFor();
      await page.getByLabel('Filter the failed rows').fill('dob');
      await failed.getByText('bad-2').waitFor();
      await expect.poll(() => detail.getByRole('link', { name: 'Download the result CSV' }).count()).toBe(1);
      // The import's document query ends (the sandbox network has Eve's documents).
      await detail.getByText(/1 of 1 ended/).waitFor({ timeout: 120_000 });
      // Listed among the earlier imports with its outcome.
      await page.locator('section[aria-labelledby="imports-title"] tbody tr').first().getByText('completed').waitFor();
      await checkView(page, 'import');

      // --- The patient ---
      await page.getByRole('link', { name: 'Patients', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Patients' }).waitFor();
      // The search is the service's: the name travels to it, folded there (case and accents aside), and
      // the page reads no patient the search did not find.
      const patientReads: URLSearchParams[] = [];
      const noteRead = (request: { url(): string }) => {
        const url = new URL(request.url());
        if (url.pathname === '/medical/v1/patient') patientReads.push(url.searchParams);
      };
      page.on('request', noteRead);
      await page.getByLabel('Name').fill('BÉTTERHALF');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByRole('link', { name: 'Eve Betterhalf' }).waitFor();
      page.off('request', noteRead);
      expect(patientReads.at(-1)?.get('name')).toBe('BÉTTERHALF');
      expect(patientReads.every((query) => Number(query.get('count')) <= 50)).toBe(true);
      await checkView(page, 'patients');
      await page.getByRole('link', { name: 'Eve Betterhalf' }).click();
      await page.getByRole('heading', { level: 1, name: /Eve Betterhalf/ }).waitFor();
      const patientId = decodeURIComponent(page.url().split('#/patients/')[1]!);
      const problemsSection = page.locator('#problems-title-section');
      await problemsSection.waitFor();
      const active = problemsSection.locator('.group', { has: page.getByRole('heading', { name: /^Active/ }) });
      await active.getByText('Chest pain').first().waitFor();
      expect(await problemsSection.locator('.group', { has: page.getByRole('heading', { name: /^Resolved/ }) }).innerText()).toContain('Pneumonia');
      await page.locator('#allergies-title-section').getByText('Penicillin').waitFor();
      const chart = page.getByRole('img', { name: /^Systolic blood pressure: 2 readings/ });
      await chart.waitFor();
      if (process.env.UPDATE_README_SCREENSHOT) {
        // The allergies, medications and charts: the part of the record the README shows.
        const top = (await page.locator('#allergies-title-section').boundingBox())!;
        const bottom = (await page.locator('#charts-title-section').boundingBox())!;
        await page.screenshot({ path: path.join(ROOT, 'docs/console.png'), fullPage: true, clip: { x: 0, y: top.y - 16, width: WIDE.width, height: bottom.y + bottom.height - top.y + 32 } });
      }
      // Each fact names the documents it came from, and opens them.
      const source = page.locator('#allergies-title-section .source button').first();
      expect(await source.innerText()).toMatch(/\S/);
      await source.click();
      const frame = page.frameLocator('iframe.document');
      await frame.locator('body').getByText(/\S/).first().waitFor({ timeout: 30_000 });
      await page.getByRole('heading', { level: 3 }).filter({ hasText: await source.innerText() }).first().waitFor();
      // The consolidated search.
      await page.getByLabel('Search this record').fill('penicillin');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.locator('#search-title-section').getByText(/AllergyIntolerance: Penicillin/i).first().waitFor();
      await checkView(page, 'patient');

      // --- Opt-out, confirmed in a dialog, through the API's own call ---
      // Escape cancels the confirmation, and nothing changes.
      await page.getByRole('button', { name: 'Opt out of exchanges' }).click();
      await page.getByRole('dialog', { name: 'Opt the patient out?' }).waitFor();
      await page.keyboard.press('Escape');
      await page.getByRole('dialog').waitFor({ state: 'detached' });
      expect((await api('GET', `/medical/v1/patient/${patientId}/hie-opt-out`)).body.hieOptOut).toBe(false);
      await page.getByRole('button', { name: 'Opt out of exchanges' }).click();
      const dialog = page.getByRole('dialog', { name: 'Opt the patient out?' });
      await dialog.waitFor();
      await dialog.getByRole('button', { name: 'Opt out' }).click();
      await page.getByTestId('optout-state').getByText(/^Opted out/).waitFor();
      expect((await api('GET', `/medical/v1/patient/${patientId}/hie-opt-out`)).body.hieOptOut).toBe(true);

      // --- Webhooks: the delivery log, and a replay reaching the receiver again ---
      await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
      const attempts = page.locator('table.attempts tbody tr');
      await attempts.first().getByText('delivered').waitFor();
      expect(await page.locator('table.attempts').innerText()).toContain('200');
      await checkView(page, 'webhooks');
      const replay = page.locator('table.attempts tbody tr', { hasText: 'medical.bulk-patient-create' }).first().getByRole('button', { name: /^Replay message/ });
      const label = (await replay.getAttribute('aria-label'))!;
      const messageId = /Replay message (\S+)/.exec(label)![1]!;
      const before = receiver.requests.filter((r) => r.headers['webhook-id'] === messageId).length;
      await replay.click();
      await page.getByText('Message replayed').first().waitFor();
      await expect.poll(() => receiver.requests.filter((r) => r.headers['webhook-id'] === messageId).length, { timeout: 30_000 }).toBe(before + 1);

      // --- Settings, and the key rotated from the console ---
      await page.getByRole('link', { name: 'Settings', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
      await checkView(page, 'settings');
      // The organization edited from its form: what the service refuses is said beside the form, and
      // what it accepts is stored and named in the header.
      const orgForm = page.locator('form[aria-labelledby="org-form-title"]');
      await orgForm.getByLabel('Organization name').fill('Console Care');
      await orgForm.getByLabel('Type').selectOption('hospital');
      await orgForm.getByLabel('Street address').fill('2 Oak St');
      await orgForm.getByLabel('City').fill('Portland');
      await orgForm.getByLabel('State').fill('or');
      await orgForm.getByLabel('ZIP').fill('123');
      await orgForm.getByRole('button', { name: /the organization$/ }).click();
      await page.getByRole('alert').getByText(/zip/i).waitFor();
      expect(problems.splice(0)).toEqual([expect.stringMatching(/^400 \/medical\/v1\/organization/)]);
      await orgForm.getByLabel('ZIP').fill('97201');
      await orgForm.getByRole('button', { name: /the organization$/ }).click();
      await page.locator('header.top .org').getByText('Console Care').waitFor();
      await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
      const stored = (await api('GET', '/medical/v1/organization')).body;
      expect(stored).toMatchObject({ name: 'Console Care', type: 'hospital', location: { addressLine1: '2 Oak St', city: 'Portland', state: 'OR', zip: '97201' } });
      await page.locator('section[aria-labelledby="org-title"] dl.facts').getByText('Hospital', { exact: true }).waitFor();
      await expectAccessible(page, 'settings after the organization was saved');
      await page.getByRole('button', { name: 'Rotate the API key' }).click();
      await page.getByRole('dialog', { name: 'Rotate the API key?' }).getByRole('button', { name: 'Rotate the key' }).click();
      const shown = page.getByRole('dialog', { name: 'New API key' });
      const newKey = (await shown.locator('output').innerText()).trim();
      expect(newKey).toMatch(/^cb_/);
      expect(newKey).not.toBe(apiKey);
      await shown.getByRole('button', { name: 'Done' }).click();
      apiKey = newKey;
      await page.getByRole('link', { name: 'Imports', exact: true }).click();
      await page.locator('section[aria-labelledby="imports-title"] tbody tr').first().getByText('completed').waitFor();
      expect((await api('GET', '/medical/v1/facility')).status).toBe(200);

      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 300_000);

  test('a large record opens with the first facts of each kind drawn and the rest on demand, asked for with the patient', async () => {
    const facility = await facilityId();
    const created = await api('POST', `/medical/v1/patient?facilityId=${facility}`, {
      firstName: 'Large',
      lastName: 'Record',
      dob: '1960-01-01',
      genderAtBirth: 'M',
      address: [{ addressLine1: '1 Main St', city: 'Beaverton', state: 'OR', zip: '97005', country: 'USA' }],
    });
    expect(created.status).toBe(201);
    const patientId = created.body.id as string;
    const day = (i: number) => new Date(Date.UTC(2000, 0, 1) + i * 86_400_000).toISOString().slice(0, 10);
    const lab = (code: string, i: number) => ({
      resourceType: 'Observation',
      status: 'final',
      category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory' }] }],
      code: { coding: [{ system: 'http://loinc.org', code, display: `Measure ${code}` }], text: `Measure ${code}` },
      valueQuantity: { value: 50 + (i % 40), unit: 'mg/dL' },
      effectiveDateTime: day(i),
    });
    const resources = [
      ...Array.from({ length: 70 }, (_, i) => lab('1001', i)),
      ...Array.from({ length: 60 }, (_, i) => lab('1002', i)),
      ...Array.from({ length: 30 }, (_, i) => ({ resourceType: 'Condition', clinicalStatus: { coding: [{ code: 'active' }] }, code: { text: `Condition ${i}` }, onsetDateTime: day(i) })),
    ];
    const put = await api('PUT', `/medical/v1/patient/${patientId}/consolidated`, { resourceType: 'Bundle', type: 'transaction', entry: resources.map((resource) => ({ resource })) });
    expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);

    const context = await browser.newContext({ viewport: WIDE });
    await context.addInitScript(`sessionStorage.setItem('carebridge.console.apiKey', ${JSON.stringify(apiKey)})`);
    const page = await context.newPage();
    // The order the page asks and hears: the record must be asked for before the patient's answer is read.
    const events: string[] = [];
    const route = (url: string) => new URL(url).pathname.replace(patientId, ':id');
    page.on('request', (request) => events.push(`ask ${route(request.url())}`));
    page.on('response', (response) => events.push(`hear ${route(response.url())}`));
    try {
      await page.goto(`${service.url}/console#/patients/${encodeURIComponent(patientId)}`);
      await page.getByRole('img', { name: /^Measure 1001: 70 readings/ }).waitFor();
      expect(events.indexOf('ask /medical/v1/patient/:id/consolidated')).toBeGreaterThan(-1);
      expect(events.indexOf('ask /medical/v1/patient/:id/consolidated')).toBeLessThan(events.indexOf('hear /medical/v1/patient/:id'));

      // A long series is a line with its latest reading marked; a short one keeps a dot per reading.
      expect(await page.getByRole('img', { name: /^Measure 1001/ }).locator('circle').count()).toBe(1);
      expect(await page.getByRole('img', { name: /^Measure 1002/ }).locator('circle').count()).toBe(60);

      // Results: the newest 50, then more on demand.
      const rows = page.locator('table.results tbody tr');
      expect(await rows.count()).toBe(50);
      await page.getByRole('button', { name: 'Show 80 older results (80 not shown)' }).click();
      await expect.poll(() => rows.count()).toBe(130);
      expect(await page.getByRole('button', { name: /older results/ }).count()).toBe(0);

      // Problems: the first 25 of each group; the others drawn on demand, focus on the first of them.
      const active = page.locator('#problems-title-section .group', { has: page.getByRole('heading', { name: /^Active/ }) });
      expect(await active.locator('li.fact').count()).toBe(25);
      expect(await active.getByRole('heading').innerText()).toContain('(30)');
      await active.getByRole('button', { name: 'Active: show the other 5' }).click();
      expect(await active.locator('li.fact').count()).toBe(30);
      expect(await page.evaluate<string | null>('document.activeElement?.getAttribute("data-resource")')).toMatch(/^Condition\//);
      await expectAccessible(page, 'large record');
    } finally {
      await context.close();
    }
  }, 120_000);

  test('only the listed files are served, with a content security policy on the page', async () => {
    const page = await fetch(`${service.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('/console/app.js');
    expect((await fetch(`${service.url}/console/app.js`)).headers.get('content-type')).toContain('javascript');
    for (const probe of ['/console/../package.json', '/console/%2e%2e%2fpackage.json', '/console/console.ts', '/console/nope.js']) {
      expect((await fetch(`${service.url}${probe}`)).status, probe).toBe(404);
    }
  });
});
