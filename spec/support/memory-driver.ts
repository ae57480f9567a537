import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryHost } from '../../hosts/memory/memory.host.js';
import type { ApiResponse } from '../../core/api/types.js';
import type { RateLimits } from '../../core/api/rate-limit.js';
import type { Ports } from '../../adapters/container/tokens.js';
import type { HostDriver, HostResponse } from './driver.js';

export const SPEC_START = '2026-11-22T09:00:00.000Z';
const PUBLIC_URL = 'http://sandbox.carebridge.test';

async function toHostResponse(response: ApiResponse): Promise<HostResponse> {
  let text = '';
  if (response.stream) {
    const decoder = new TextDecoder();
    for await (const chunk of response.stream) text += decoder.decode(chunk, { stream: true });
    text += decoder.decode();
  } else if (response.body !== undefined) {
    // Through JSON, as a wire would: what a client sees, not the objects the handler built.
    text = JSON.stringify(response.body);
  }
  const json = response.body !== undefined && !response.stream ? JSON.parse(text) : undefined;
  return { status: response.status, headers: response.headers, body: json, text };
}

export interface MemoryDriverOptions {
  /** Requests per minute per account by route class; none when absent. */
  rateLimits?: RateLimits;
  /** Implementations of ports in place of the sandbox's, made afresh for each host. */
  ports?: () => Partial<Ports>;
}

/** The in-memory host as the suite sees it: the handler in process, a stepped clock, sequential ids. */
export async function makeMemoryDriver(options: MemoryDriverOptions = {}): Promise<HostDriver> {
  const clock = new SteppedClock(SPEC_START);
  const host = await MemoryHost.create({
    clock,
    ids: new SequentialIds(),
    publicUrl: PUBLIC_URL,
    urlSecret: 'spec-url-signing-secret',
    ...(options.rateLimits ? { rateLimits: options.rateLimits } : {}),
    ...(options.ports ? { ports: options.ports() } : {}),
  });
  return {
    name: 'memory',
    clock,
    async call({ method, path, query, body, jsonText, apiKey, headers }) {
      const text = jsonText ?? (body === undefined ? undefined : JSON.stringify(body));
      return toHostResponse(
        await host.request({
          method,
          path,
          query: Object.fromEntries(Object.entries(query ?? {}).filter(([, value]) => value !== undefined)),
          headers: { ...(apiKey ? { 'x-api-key': apiKey } : {}), ...(text !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
          // Through JSON text, as a wire would.
          body: text === undefined ? undefined : JSON.parse(text),
        }),
      );
    },
    async fetchUrl(url, init) {
      const parsed = new URL(url);
      if (parsed.origin !== PUBLIC_URL) throw new Error(`the service handed out a URL outside its public URL: ${url}`);
      return toHostResponse(
        await host.request({
          method: init.method,
          path: parsed.pathname,
          query: Object.fromEntries(parsed.searchParams),
          headers: { ...(init.apiKey ? { 'x-api-key': init.apiKey } : {}), ...(init.contentType ? { 'content-type': init.contentType } : {}) },
          ...(init.body !== undefined ? { bodyStream: init.body } : {}),
        }),
      );
    },
    createAccount: (name = 'Spec Account') => host.createAccount(name),
    settle: () => host.settle(),
    async webhookMessages(accountId) {
      return (await host.deps.storage.outbox.list(accountId)).map((message) => JSON.parse(message.body));
    },
    close: () => host.close(),
  };
}
