import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { expect } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryHost } from '../../hosts/memory/memory.host.js';
import { createApiHandler } from '../../core/api/handler.js';
import { createKoaApp, type KoaAppOptions } from '../../http/koa.js';
import { noteAccount } from '../../http/request-facts.js';

/** Test helpers for the Koa host (not loaded by the service). */

export const SPEC_NOW = '2026-11-22T09:00:00.000Z';

/** A pino logger whose lines are kept, parsed, for assertions on what gets logged. */
export function capturingLogger(level = 'info'): { logger: Logger; lines: Record<string, unknown>[]; raw: string[] } {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { logger: pino({ level }, sink), lines, raw };
}

export interface MemoryKoa {
  url: string;
  host: MemoryHost;
  clock: SteppedClock;
  close(): Promise<void>;
}

/**
 * The Koa app over the in-memory host's handler on 127.0.0.1: for tests of the HTTP translation itself
 * (content types, limits, mounting), where a database adds nothing.
 */
export async function startMemoryKoa(options: KoaAppOptions & { mount?: 'root' | 'prefix' } = {}): Promise<MemoryKoa> {
  let listener: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => listener!(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clock = new SteppedClock(SPEC_NOW);
  const prefix = options.prefix ?? '';
  const host = await MemoryHost.create({ clock, ids: new SequentialIds(), publicUrl: `${url}${prefix}`, urlSecret: 'koa-test-url-secret' });
  // As the service does: the account a request authenticated as is noted for the access log.
  const handler = createApiHandler(host.deps, { onAuthenticated: noteAccount });
  listener = createKoaApp(handler, options).callback();
  return {
    url,
    host,
    clock,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await host.close();
    },
  };
}

/** RFC 9457 problem+json with our code: the shape of every error answer. */
export async function expectProblem(response: Response, status: number, code?: string): Promise<Record<string, unknown>> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String), code: expect.stringMatching(/^[A-Z][A-Z0-9_]+$/) });
  if (code) expect(body.code).toBe(code);
  return body;
}

export const SAMPLE_ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' };
export const VALID_NPI = '1234567893';
