import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startMemoryKoa, type MemoryKoa } from '../../spec/support/http-testing.js';
import { CHROMIUM, CHROMIUM_ARGS, systemTool } from '../../spec/support/system-tools.js';

/**
 * /docs as a person sees it, in Debian's headless Chromium (installed by .ci/run when missing): the
 * operations by tag, an operation's response schema with its fields, and "Try it" sending a real request
 * with the key typed in. Required under CI; elsewhere skipped with the reason printed when Chromium is not
 * installed.
 */
const available = systemTool(CHROMIUM, 'Chromium', 'apt-get install -y chromium') !== undefined;

let server: MemoryKoa;
let browser: Browser;

beforeAll(async () => {
  if (!available) return;
  server = await startMemoryKoa();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe.skipIf(!available)('/docs in a browser', () => {
  test('shows the operations, an operation its response schema with its fields, and Try it answers', async () => {
    const page = await browser.newPage();
    const { apiKey } = await server.host.createAccount('Docs');
    try {
      await page.goto(`${server.url}/docs`);
      const paths = page.locator('details.operation code.path');
      await paths.first().waitFor({ timeout: 30_000 });
      expect(await paths.allInnerTexts()).toEqual(expect.arrayContaining(['/medical/v1/patient/{id}', '/medical/v1/patient/bulk']));
      // Open GET /medical/v1/patient/{id} and read its 200 response's schema.
      const patientGet = page.locator('details.operation.get', { has: page.locator('code.path', { hasText: /^\/medical\/v1\/patient\/\{id\}$/ }) }).first();
      await patientGet.locator('summary').click();
      const responses = await patientGet.locator('section.responses').innerText();
      expect(responses).toContain('firstName');
      expect(responses).toContain('hieOptOut');
      // Try it: GET /medical/v1/facility with the key typed in answers 200 with the account's facilities.
      await page.locator('#api-key').fill(apiKey);
      const facilities = page.locator('details.operation.get', { has: page.locator('code.path', { hasText: /^\/medical\/v1\/facility$/ }) }).first();
      await facilities.locator('summary').click();
      await facilities.getByRole('button', { name: 'Send' }).click();
      await facilities.locator('pre.output', { hasText: /^200 / }).waitFor({ timeout: 10_000 });
      expect(await facilities.locator('pre.output').innerText()).toContain('"facilities"');
      // No request left the host: everything the page loaded came from it.
      const loaded = await page.evaluate(() => performance.getEntriesByType('resource').map((entry) => entry.name));
      const external = loaded.filter((name) => !name.startsWith(server.url));
      expect(external).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);
});
