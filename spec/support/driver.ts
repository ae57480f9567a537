import type { SteppedClock } from '../../adapters/clock/stepped.clock.js';

export interface HostResponse {
  status: number;
  headers: Record<string, string>;
  /** Parsed JSON when the response is JSON, else undefined. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  /** The raw body text. */
  text: string;
}

export interface HostCall {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  /** A parameter given as a list is repeated in the query string. */
  query?: Record<string, string | readonly string[] | undefined>;
  body?: unknown;
  /** The JSON body as text, sent as is instead of `body` (for values JSON.stringify cannot write, e.g. 5,000 levels deep). */
  jsonText?: string;
  apiKey?: string;
  headers?: Record<string, string>;
}

export interface UrlFetch {
  method: 'GET' | 'PUT';
  apiKey?: string;
  contentType?: string;
  body?: string | Uint8Array;
}

/**
 * What the behaviour suite needs of a host, whatever its transport: the in-memory host calls the handler
 * in process; the Koa host goes over real HTTP. Every test gets a fresh, isolated host.
 */
export interface HostDriver {
  readonly name: string;
  /** One API call. */
  call(call: HostCall): Promise<HostResponse>;
  /** Fetches a URL the service handed out (upload, result CSV, downloads) through the same transport. */
  fetchUrl(url: string, init: UrlFetch): Promise<HostResponse>;
  /** Operator action: a new account with its API key. */
  createAccount(name?: string): Promise<{ accountId: string; apiKey: string }>;
  /** Runs background work (jobs, webhook deliveries) until nothing is due at the current time. */
  settle(): Promise<void>;
  /** The host's clock; tests step it instead of sleeping. */
  readonly clock: SteppedClock;
  /** Webhook messages the service emitted for the account, oldest first, as parsed JSON bodies. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  webhookMessages(accountId: string): Promise<any[]>;
  close(): Promise<void>;
}

export type MakeHost = () => Promise<HostDriver>;
