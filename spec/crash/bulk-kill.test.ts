import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { generateCsv, seededRandom } from '../../bench/generate.js';
import { expectEveryRowOnce, freePort, killServiceProcess, startServiceProcess, type ServiceProcess } from '../support/service-process.js';

/**
 * Crash safety: the real service (`npm start`'s entry) is killed with SIGKILL at a random point
 * of a 10,000-row import, started again on the same data directory, and must finish the import with every
 * row having exactly one outcome and no patient created twice.
 */

const ROWS = 10_000;
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function startService(dataDir: string, port: number): Promise<ServiceProcess> {
  return startServiceProcess({ DATA_DIR: dataDir, URL_SIGNING_SECRET: 'crash-test-url-signing-secret' }, port);
}

async function api(service: ServiceProcess, apiKey: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${service.url}${path}`, {
    method,
    headers: { 'x-api-key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function waitForStatus(service: ServiceProcess, apiKey: string, requestId: string, done: (status: string) => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await api(service, apiKey, 'GET', `/medical/v1/patient/bulk/${requestId}`);
    if (done(status.body.status)) return status.body;
    if (Date.now() > deadline) throw new Error(`bulk request stuck: ${JSON.stringify(status.body)}\n${service.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('crash safety of bulk import', () => {
  // Kill points drawn from a seeded generator, so a failure replays; printed for the record.
  const random = seededRandom(20261122);
  const killPoints = [0, 1, 2].map(() => Math.floor(random() * 2_500));

  for (const killAfterMs of killPoints) {
    test(`SIGKILL ${killAfterMs} ms after the upload, then restart: the import completes exactly once per row`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'carebridge-crash-'));
      dirs.push(dataDir);
      const port = await freePort();
      let service = await startService(dataDir, port);
      try {
        const apiKey = /x-api-key: (cb_[A-Za-z0-9_-]+)/.exec(service.output())?.[1];
        expect(apiKey, service.output()).toBeTruthy();
        const facility = await api(service, apiKey!, 'POST', '/medical/v1/facility', {
          name: 'Crash Clinic',
          npi: '1234567893',
          address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' },
        });
        expect(facility.status).toBe(201);
        const started = await api(service, apiKey!, 'POST', `/medical/v1/patient/bulk?facilityId=${facility.body.id}`);
        const csv = generateCsv({ rows: ROWS, seed: killAfterMs + 1 });
        const upload = await fetch(started.body.uploadUrl, { method: 'PUT', headers: { 'x-api-key': apiKey!, 'content-type': 'text/csv' }, body: csv });
        expect(upload.status, await upload.clone().text()).toBe(200);

        await new Promise((resolve) => setTimeout(resolve, killAfterMs));
        await killServiceProcess(service);
        service = await startService(dataDir, port);

        const status = await waitForStatus(service, apiKey!, started.body.requestId, (s) => s === 'completed' || s === 'failed', 120_000);
        expect(status).toMatchObject({ status: 'completed', total: ROWS, processed: ROWS });
        expect(status.succeeded + status.failed).toBe(ROWS);

        await expectEveryRowOnce(service, apiKey!, status, ROWS);

        const messages = await api(service, apiKey!, 'GET', '/settings/webhook');
        expect(messages.status).toBe(200);
      } finally {
        await killServiceProcess(service);
      }
    }, 240_000);
  }
});
