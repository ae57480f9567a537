import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createAccount } from '../../core/accounts.js';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { startService, type ServiceHandle } from '../../hosts/service/service.js';
import type { HostDriver, HostResponse } from './driver.js';
import { SPEC_START } from './memory-driver.js';

async function toHostResponse(response: Response): Promise<HostResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const text = await response.text();
  const contentType = headers['content-type'] ?? '';
  const isJson = /^application\/([a-z.+-]+\+)?json\b/i.test(contentType) || contentType.startsWith('application/problem+json');
  return { status: response.status, headers, body: isJson && text !== '' ? JSON.parse(text) : undefined, text };
}

export interface KoaDriverOptions {
  /** Extra service options (e.g. a webhook sender); the driver's own choices win for clock, ids and storage. */
  logLevel?: string;
}

/**
 * The Koa host as the suite sees it: the real service on 127.0.0.1 (a free port), SQLite in a fresh temp
 * directory, a stepped clock and sequential ids, no background work (`settle` runs it), every call over
 * real HTTP with fetch.
 */
export async function makeKoaDriver(options: KoaDriverOptions = {}): Promise<HostDriver & { service: ServiceHandle }> {
  const clock = new SteppedClock(SPEC_START);
  const dataDir = await mkdtemp(join(tmpdir(), 'carebridge-koa-spec-'));
  let service: ServiceHandle;
  try {
    service = await startService({
      port: 0,
      host: '127.0.0.1',
      dataDir,
      clock,
      ids: new SequentialIds(),
      urlSigningSecret: 'spec-url-signing-secret',
      background: false,
      sandboxAccount: false,
      // The suite sends wrong keys from one address on purpose (every route's 401, the fuzz); the count of
      // them has its own tests.
      tunables: { failedAuthPerMinute: 0, webhooks: { allowPrivate: true } },
      logger: pino({ level: options.logLevel ?? 'silent' }),
    });
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const base = service.url;

  return {
    name: 'koa',
    clock,
    service,
    async call({ method, path, query, body, jsonText, apiKey, headers }) {
      const url = new URL(path, base);
      for (const [name, value] of Object.entries(query ?? {})) {
        for (const one of typeof value === 'string' ? [value] : (value ?? [])) url.searchParams.append(name, one);
      }
      const text = jsonText ?? (body === undefined ? undefined : JSON.stringify(body));
      const response = await fetch(url, {
        method,
        headers: {
          ...(apiKey ? { 'x-api-key': apiKey } : {}),
          ...(text !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        ...(text !== undefined ? { body: text } : {}),
      });
      return toHostResponse(response);
    },
    async fetchUrl(url, init) {
      if (new URL(url).origin !== new URL(service.publicUrl).origin) throw new Error(`the service handed out a URL outside its public URL: ${url}`);
      const response = await fetch(url, {
        method: init.method,
        headers: { ...(init.apiKey ? { 'x-api-key': init.apiKey } : {}), ...(init.contentType ? { 'content-type': init.contentType } : {}) },
        ...(init.body !== undefined ? { body: init.body } : {}),
      });
      return toHostResponse(response);
    },
    async createAccount(name = 'Spec Account') {
      const { account, apiKey } = await createAccount(service.deps, { name });
      return { accountId: account.id, apiKey };
    },
    settle: () => service.settle(),
    async webhookMessages(accountId) {
      return (await service.deps.storage.outbox.list(accountId)).map((message) => JSON.parse(message.body));
    },
    async close() {
      try {
        await service.close();
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  };
}
