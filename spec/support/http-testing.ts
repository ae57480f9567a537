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
import { createNodeListener } from '../../http/node.js';
import { createFetchHandler } from '../../http/fetch.js';
import { Readable } from 'node:stream';
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

/** The HTTP wrappers of the one translation. */
export const WRAPPERS = ['koa', 'node', 'fetch'] as const;
export type WrapperName = (typeof WRAPPERS)[number];

/**
 * The fetch handler behind a node:http server, so the same over-the-wire tests reach it: the Node request
 * becomes a web Request (its body a stream, never read here), the web Response is written back.
 */
function fetchOverNode(handle: (request: Request) => Promise<Response>, base: string): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    const withBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(`${base}${req.url ?? '/'}`, {
      method: req.method ?? 'GET',
      headers,
      ...(withBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
    } as RequestInit);
    void handle(request).then(async (response) => {
      // A refused body was not read: drop the rest and close, as the Node wrappers do.
      if (!req.complete) {
        req.resume();
        res.setHeader('connection', 'close');
      }
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) for await (const chunk of response.body) res.write(chunk);
      res.end();
    });
  };
}

/**
 * One HTTP wrapper (Koa by default, the app with /healthz) over the in-memory host's handler on 127.0.0.1:
 * for tests of the HTTP translation itself (content types, limits, mounting), where a database adds nothing.
 */
export async function startMemoryKoa(options: KoaAppOptions & { mount?: 'root' | 'prefix'; wrapper?: WrapperName } = {}): Promise<MemoryKoa> {
  let listener: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => listener!(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clock = new SteppedClock(SPEC_NOW);
  const prefix = options.prefix ?? '';
  const host = await MemoryHost.create({ clock, ids: new SequentialIds(), publicUrl: `${url}${prefix}`, urlSecret: 'koa-test-url-secret' });
  // As the service does: the account a request authenticated as is noted for the access log.
  const handler = createApiHandler(host.deps, { onAuthenticated: noteAccount });
  const wrapper = options.wrapper ?? 'koa';
  if (wrapper === 'koa') listener = createKoaApp(handler, options).callback();
  else if (wrapper === 'node') listener = createNodeListener(handler, options);
  else listener = fetchOverNode(createFetchHandler(handler, options), url);
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
