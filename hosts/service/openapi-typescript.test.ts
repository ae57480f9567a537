import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startMemoryKoa, type MemoryKoa } from '../../spec/support/http-testing.js';
import { createNodeListener } from '../../http/node.js';
import { MemoryHost } from '../memory/memory.host.js';

/**
 * The OpenAPI document is for generating clients in other languages: here TypeScript types are generated
 * from the served /openapi.json with openapi-typescript, and a small program written against them must
 * type-check, and must fail to when it misuses a response.
 */

let server: MemoryKoa;
let dir: string;

beforeAll(async () => {
  server = await startMemoryKoa();
  dir = mkdtempSync(join(tmpdir(), 'carebridge-openapi-ts-'));
  const document = (await (await fetch(`${server.url}/openapi.json`)).json()) as Parameters<typeof openapiTS>[0];
  writeFileSync(join(dir, 'api.d.ts'), astToString(await openapiTS(document)));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function typeCheck(program: string): string {
  writeFileSync(join(dir, 'program.ts'), program);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'es2022', moduleResolution: 'bundler', skipLibCheck: false, types: [] }, files: ['program.ts'] }),
  );
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return '';
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}

const HEADER = `import type { paths, components } from './api';
type Ok<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: infer R }
  ? R extends { 200: { content: { 'application/json': infer B } } } ? B
  : R extends { 201: { content: { 'application/json': infer B } } } ? B : never
  : never;
`;

describe('clients generated from /openapi.json', () => {
  test('openapi-typescript types every response with its fields; a program using them type-checks', () => {
    const errors = typeCheck(`${HEADER}
type Patient = Ok<'/medical/v1/patient/{id}', 'get'>;
type Created = Ok<'/medical/v1/patient', 'post'>;
type Bulk = Ok<'/medical/v1/patient/bulk/{requestId}', 'get'>;
type Hook = Ok<'/settings/webhook', 'get'>;
type Problem = components['schemas'] extends infer S ? S : never;
export function describe(patient: Patient, created: Created, bulk: Bulk, hook: Hook): string {
  const first: string = patient.firstName;
  const optedOut: boolean = created.hieOptOut;
  const street: string = patient.address[0]!.addressLine1;
  const done: 'waiting' | 'processing' | 'completed' | 'failed' | 'expired' = bulk.status;
  const parked: number = hook.messages.parked;
  return [first, optedOut, street, done, parked, bulk.documentQueries?.completed ?? 0].join(' ');
}
export type { Problem };
`);
    expect(errors).toBe('');
  });

  test('and misuse is a type error: the types are real, not Record<string, never> or any', () => {
    const errors = typeCheck(`${HEADER}
type Patient = Ok<'/medical/v1/patient/{id}', 'get'>;
export function wrong(patient: Patient): number {
  const name: number = patient.firstName;
  return name + patient.notAField;
}
`);
    expect(errors).toMatch(/firstName|not assignable/);
    expect(errors).toMatch(/notAField/);
  });
});

/*
 * A generated client in someone else's stack: openapi-fetch typed by the generated paths, with no help
 * from this package. The program below must type-check as written and then run the bulk flow against a
 * live API (an in-memory host behind node:http that runs its background work by itself).
 */
const BULK_FLOW = `import createClient from 'openapi-fetch';
import type { paths } from './api';

const ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' };

function signed(url: string): { exp: string; acct: string; sig: string } {
  const params = new URL(url).searchParams;
  return { exp: params.get('exp') ?? '', acct: params.get('acct') ?? '', sig: params.get('sig') ?? '' };
}

export async function bulkFlow(baseUrl: string, apiKey: string, csv: string, pause: () => Promise<void>): Promise<{ succeeded: number; failed: number; result: string }> {
  const api = createClient<paths>({ baseUrl, headers: { 'x-api-key': apiKey } });
  const facility = await api.POST('/medical/v1/facility', { body: { name: 'OpenAPI Clinic', npi: '1234567893', address: ADDRESS } });
  if (!facility.data) throw new Error(JSON.stringify(facility.error));
  const started = await api.POST('/medical/v1/patient/bulk', { params: { query: { facilityId: facility.data.id } } });
  if (!started.data) throw new Error(JSON.stringify(started.error));
  const requestId: string = started.data.requestId;
  const uploaded = await api.PUT('/medical/v1/patient/bulk/{requestId}/upload', {
    params: { path: { requestId }, query: signed(started.data.uploadUrl) },
    body: csv,
    bodySerializer: (body: string) => body,
    headers: { 'content-type': 'text/csv' },
  });
  if (!uploaded.data) throw new Error(JSON.stringify(uploaded.error));
  for (;;) {
    const status = await api.GET('/medical/v1/patient/bulk/{requestId}', { params: { path: { requestId } } });
    if (!status.data) throw new Error(JSON.stringify(status.error));
    if (status.data.status === 'completed' && status.data.result) {
      const result = await api.GET('/medical/v1/patient/bulk/{requestId}/result', { params: { path: { requestId }, query: signed(status.data.result) }, parseAs: 'text' });
      if (result.data === undefined) throw new Error(JSON.stringify(result.error));
      return { succeeded: status.data.succeeded, failed: status.data.failed, result: result.data };
    }
    if (status.data.status === 'failed' || status.data.status === 'expired') throw new Error(status.data.status);
    await pause();
  }
}
`;

test('a client generated with openapi-typescript and openapi-fetch type-checks and runs the bulk flow', async () => {
  // Inside the package, so 'openapi-fetch' resolves from its node_modules as in a project that installed it.
  const program = join(fileURLToPath(new URL('../../.snippets/', import.meta.url)), `openapi-fetch-${process.pid}`);
  mkdirSync(program, { recursive: true });
  try {
    copyFileSync(join(dir, 'api.d.ts'), join(program, 'api.d.ts'));
    writeFileSync(join(program, 'bulk-flow.ts'), BULK_FLOW);
    writeFileSync(
      join(program, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'es2022', moduleResolution: 'bundler', skipLibCheck: true, types: [], lib: ['es2022', 'dom'] }, files: ['bulk-flow.ts'] }),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const checked = (() => {
      try {
        execFileSync(process.execPath, [tsc, '-p', join(program, 'tsconfig.json')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
        return '';
      } catch (error) {
        return String((error as { stdout?: string }).stdout ?? error);
      }
    })();
    expect(checked).toBe('');

    const listening = createServer();
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    const host = await MemoryHost.create({ publicUrl: url });
    listening.on('request', createNodeListener(host.handler));
    try {
      const { apiKey } = await host.createAccount('OpenAPI');
      const { bulkFlow } = (await import(pathToFileURL(join(program, 'bulk-flow.ts')).href)) as {
        bulkFlow: (baseUrl: string, apiKey: string, csv: string, pause: () => Promise<void>) => Promise<{ succeeded: number; failed: number; result: string }>;
      };
      const csv = 'firstName,lastName,dob,gender,addressLine1,city,state,zip\nAna,Lopez,1980-02-03,F,1 Main St,Springfield,IL,62701\nBo,Kim,1990-13-01,M,2 Oak Ave,Springfield,IL,62704\n';
      const outcome = await bulkFlow(url, apiKey, csv, () => new Promise((resolve) => setTimeout(resolve, 50)));
      expect(outcome.succeeded).toBe(1);
      expect(outcome.failed).toBe(1);
      expect(outcome.result).toContain('dob: must be a real calendar date as YYYY-MM-DD');
    } finally {
      listening.closeAllConnections();
      await new Promise<void>((resolve) => listening.close(() => resolve()));
      await host.close();
    }
  } finally {
    rmSync(program, { recursive: true, force: true });
  }
}, 120_000);
