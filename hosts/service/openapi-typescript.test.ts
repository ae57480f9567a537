import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startMemoryKoa, type MemoryKoa } from '../../spec/support/http-testing.js';

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
