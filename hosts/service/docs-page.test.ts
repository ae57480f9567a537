import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startMemoryKoa, type MemoryKoa } from '../../spec/support/http-testing.js';

/**
 * /docs as a person sees it: Swagger UI in Debian's headless Chromium (installed by .ci/run when missing)
 * renders the operations and, for an operation, its response schema. Required under CI; elsewhere skipped
 * with the reason printed when Chromium is not installed.
 */
const CHROMIUM = process.env.CAREBRIDGE_CHROMIUM ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available) {
  if (process.env.CI) throw new Error(`Chromium is required under CI and is not at ${CHROMIUM} (apt-get install -y chromium)`);
  console.warn(`skipping the /docs page test: no Chromium at ${CHROMIUM}`);
}

let server: MemoryKoa;
let browser: Browser;

beforeAll(async () => {
  if (!available) return;
  server = await startMemoryKoa();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-quic', '--disable-component-update', '--disable-sync'],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe.skipIf(!available)('/docs in a browser', () => {
  test('shows the operations, and an operation shows its response schema with its fields', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}/docs`);
      const operations = page.locator('.opblock-summary-path');
      await operations.first().waitFor({ timeout: 30_000 });
      const paths = await operations.allInnerTexts();
      expect(paths.map((path) => path.replace(/\u200b/g, ''))).toEqual(expect.arrayContaining(['/medical/v1/patient/{id}', '/medical/v1/patient/bulk']));
      // Open GET /medical/v1/patient/{id} and read its 200 response's schema.
      const patientGet = page.locator('.opblock-get', { has: page.locator('.opblock-summary-path', { hasText: /^\/medical\/v1\/patient\/\{id\}$/ }) }).first();
      await patientGet.locator('.opblock-summary').click();
      await patientGet.locator('.responses-wrapper').waitFor({ timeout: 10_000 });
      const schemaTab = patientGet.locator('.responses-wrapper').getByText('Schema', { exact: true }).first();
      if (await schemaTab.count()) await schemaTab.click();
      const responses = await patientGet.locator('.responses-wrapper').innerText();
      expect(responses).toContain('firstName');
      expect(responses).toContain('hieOptOut');
      expect(responses).not.toMatch(/^\s*\{\s*\}\s*$/m);
    } finally {
      await page.close();
    }
  }, 60_000);
});
