import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { createFetchHandler } from '../../http/fetch.js';
import { createKoaApp } from '../../http/koa.js';
import { createNodeListener } from '../../http/node.js';
import { createRuntime, type RuntimeProfile } from '../../runtime/runtime.js';
import type { HostCall, HostDriver, HostResponse, UrlFetch } from './driver.js';
import { SPEC_START } from './memory-driver.js';
import { createPgSchema, type PgSchema } from './pg.js';

/** Which HTTP translation wrapper carries the calls. */
export type Wrapper = 'node' | 'fetch' | 'koa';
/** Which runtime profile stores the data. */
export type DriverProfile = 'memory' | 'postgres';

async function toHostResponse(response: Response): Promise<HostResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const text = await response.text();
  const contentType = headers['content-type'] ?? '';
  const isJson = /^application\/([a-z.+-]+\+)?json\b/i.test(contentType);
  return { status: response.status, headers, body: isJson && text !== '' ? JSON.parse(text) : undefined, text };
}

function listen(server: Server): Promise<string> {
  return new Promise((done) => server.listen(0, '127.0.0.1', () => done(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

/**
 * The runtime behind one of the HTTP wrappers, as the behaviour suite sees it: `node` and `koa` over real
 * HTTP on 127.0.0.1, `fetch` with web Requests handed to the fetch handler in process (no socket). The
 * profile is the memory one, or PostgreSQL in a fresh schema dropped at close.
 */
export async function makeWrapperDriver(wrapper: Wrapper, profileName: DriverProfile = 'memory'): Promise<HostDriver> {
  const clock = new SteppedClock(SPEC_START);
  let listener: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = wrapper === 'fetch' ? undefined : createServer((req, res) => listener!(req, res));
  const base = server ? await listen(server) : 'http://fetch.carebridge.test';
  let schema: PgSchema | undefined;
  try {
    let profile: RuntimeProfile = { kind: 'memory' };
    if (profileName === 'postgres') {
      schema = await createPgSchema('wrapper');
      profile = { kind: 'sql', database: schema.url, databaseSchema: schema.schema };
    }
    const runtime = await createRuntime({
      profile,
      publicUrl: base,
      urlSigningSecret: 'spec-url-signing-secret',
      webhooks: { allowPrivate: true },
      ccda: 'in-process',
      clock,
      ids: new SequentialIds(),
    });
    const fetchHandler = wrapper === 'fetch' ? createFetchHandler(runtime.handler) : undefined;
    if (wrapper === 'node') listener = createNodeListener(runtime.handler);
    if (wrapper === 'koa') listener = createKoaApp(runtime.handler).callback();
    const send = (url: string | URL, init: RequestInit): Promise<Response> => (fetchHandler ? fetchHandler(new Request(url, init)) : fetch(url, init));

    return {
      name: `${wrapper}-${profileName}`,
      clock,
      async call({ method, path, query, body, jsonText, apiKey, headers }: HostCall) {
        const url = new URL(path, base);
        for (const [name, value] of Object.entries(query ?? {})) {
          for (const one of typeof value === 'string' ? [value] : (value ?? [])) url.searchParams.append(name, one);
        }
        const text = jsonText ?? (body === undefined ? undefined : JSON.stringify(body));
        return toHostResponse(
          await send(url, {
            method,
            headers: { ...(apiKey ? { 'x-api-key': apiKey } : {}), ...(text !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
            ...(text !== undefined ? { body: text } : {}),
          }),
        );
      },
      async fetchUrl(url: string, init: UrlFetch) {
        if (new URL(url).origin !== new URL(base).origin) throw new Error(`the service handed out a URL outside its public URL: ${url}`);
        return toHostResponse(
          await send(url, {
            method: init.method,
            headers: { ...(init.apiKey ? { 'x-api-key': init.apiKey } : {}), ...(init.contentType ? { 'content-type': init.contentType } : {}) },
            ...(init.body !== undefined ? { body: init.body } : {}),
          }),
        );
      },
      createAccount: (name = 'Spec Account') => runtime.createAccount(name),
      settle: () => runtime.settle(),
      async webhookMessages(accountId: string) {
        return (await runtime.deps.storage.outbox.list(accountId)).map((message) => JSON.parse(message.body));
      },
      async close() {
        try {
          if (server) {
            server.closeAllConnections();
            await new Promise<void>((done) => server.close(() => done()));
          }
          await runtime.close();
        } finally {
          await schema?.drop();
        }
      },
    };
  } catch (error) {
    server?.close();
    await schema?.drop();
    throw error;
  }
}
