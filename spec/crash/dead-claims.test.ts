import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { killServiceProcess, printedApiKey, startServiceProcess, type ServiceProcess } from '../support/service-process.js';

/**
 * A killed instance's claims on webhook messages are released as soon as its successor knows it is gone
 * (same host, its process no longer exists), not when the claims' lease ends. The lease is set to an hour
 * here: a message the killed process was sending reaches the receiver again only through that release.
 */

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

test('after kill -9 and a restart, the messages the dead process had claimed are delivered at once, not after their lease', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'carebridge-dead-claims-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));

  let hang = true;
  const held: ServerResponse[] = [];
  const arrivals: { id: string; afterRestart: boolean }[] = [];
  let restarted = false;
  let onArrival = (): void => undefined;
  const receiver = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { ping?: string; meta: { type: string } };
      if (body.meta.type === 'ping') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pong: body.ping }));
        return;
      }
      arrivals.push({ id: String(req.headers['webhook-id']), afterRestart: restarted });
      if (hang) held.push(res);
      else res.writeHead(200).end();
      onArrival();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => receiver.close(resolve)));
  cleanups.push(() => held.forEach((res) => res.destroy()));
  const arrived = (test: () => boolean) =>
    new Promise<void>((resolve) => {
      onArrival = () => test() && resolve();
      onArrival();
    });

  const env = { DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_LEASE_SECONDS: '3600', URL_SIGNING_SECRET: 'dead-claims-url-signing-secret' };
  let service: ServiceProcess = await startServiceProcess(env);
  cleanups.push(() => killServiceProcess(service));
  const apiKey = printedApiKey(service);
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  };
  const settings = await call('POST', '/settings', { webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks` });
  expect(settings.status, JSON.stringify(settings.body)).toBe(200);
  const facility = await call('POST', '/medical/v1/facility', {
    name: 'Dead Claims Clinic',
    npi: '1234567893',
    address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' },
  });
  expect(facility.status).toBe(201);
  // An import's messages: the first is claimed and sent, and the receiver holds it unanswered.
  const started = await call('POST', `/medical/v1/patient/bulk?facilityId=${facility.body.id}`);
  const csv = 'externalId,firstName,lastName,dob,gender,addressLine1,city,state,zip\nx1,Ann,Dead,1970-01-02,F,1 Main St,Springfield,IL,62701\n';
  const upload = await fetch(started.body.uploadUrl!, { method: 'PUT', headers: { 'x-api-key': apiKey, 'content-type': 'text/csv' }, body: csv });
  expect(upload.status, await upload.clone().text()).toBe(200);
  await arrived(() => arrivals.length > 0);
  const claimed = arrivals[0]!.id;

  await killServiceProcess(service);
  hang = false;
  restarted = true;
  service = await startServiceProcess(env, service.port);
  // Without the release this waits the hour of the lease (and the test times out).
  await arrived(() => arrivals.some((arrival) => arrival.afterRestart && arrival.id === claimed));
  expect(service.output()).not.toMatch(/"level":(50|60)/);
}, 180_000);
