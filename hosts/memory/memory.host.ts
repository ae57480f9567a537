import type { ApiHandler } from '../../core/api/handler.js';
import type { ApiRequest, ApiResponse } from '../../core/api/types.js';
import type { CoreDeps } from '../../core/deps.js';
import type { ClockPort, IdsPort, StoragePort, WebhookSenderPort } from '../../core/ports/index.js';
import type { Ports } from '../../adapters/container/tokens.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../runtime/runtime.js';
import type { Tunables } from '../../runtime/settings-table.js';

/**
 * `rateLimits`, `failedAuthPerMinute` and `renders` are the settings table's (runtime/settings-table.ts),
 * with its documentation and defaults; the sandbox's other defaults are the runtime's memory profile's.
 */
export interface MemoryHostOptions extends Pick<Tunables, 'rateLimits' | 'failedAuthPerMinute' | 'renders'> {
  /** A stepped clock in tests; the system clock otherwise. */
  clock?: ClockPort;
  /** Sequential ids in tests; UUID v7 otherwise. */
  ids?: IdsPort;
  /** Base of the URLs handed out; they are fetched back through `fetchUrl`. */
  publicUrl?: string;
  /** Where sandbox HIE documents come from (the C-CDA fixtures). */
  fixturesDir?: string;
  /** Replaces the HTTP webhook sender (e.g. to record deliveries in a test). */
  webhookSender?: WebhookSenderPort;
  /** Secret for pre-signed URLs; random per host when absent. */
  urlSecret?: string;
  /** `webhooks.allowPrivate` of the settings table; true in the sandbox, whose receiver is usually on the developer's machine. */
  webhookAllowPrivate?: WebhookTunables['allowPrivate'];
  /** `webhooks.disableAfterMs` of the settings table: an endpoint failing every attempt this long is disabled. Default 5 days; 0 never. */
  webhookDisableAfterMs?: WebhookTunables['disableAfterMs'];
  /** Another storage adapter in place of the in-memory one (benchmarks, adapter trials). The host closes it. */
  storage?: StoragePort;
  /** `searchCacheMb` of the settings table, in bytes: memory for per-patient search indexes (estimated). Default 64 MB. */
  searchCacheBytes?: number;
  /**
   * Runs queued work (imports, document queries, conversions) and webhook deliveries by itself, as the
   * service does, so a client polling for an outcome gets it. Default: on, unless a `clock` is given (a test
   * that steps time drives the work too, with `settle()`). `settle()` works either way.
   */
  background?: boolean;
  /** Your own implementation of any port in place of the sandbox's, by name (see `CarebridgeOptions.ports`). */
  ports?: Partial<Ports>;
}

type WebhookTunables = NonNullable<Tunables['webhooks']>;

/**
 * The in-process sandbox: the runtime's memory profile (every adapter in memory, the same handler the HTTP
 * service uses). Background work runs by itself (see `background`) or only when `settle()` is called, so
 * integration tests can be deterministic. Nothing is persisted.
 */
export class MemoryHost {
  private constructor(private readonly runtime: Runtime) {}

  static async create(options: MemoryHostOptions = {}): Promise<MemoryHost> {
    const runtime = await createRuntime(memoryRuntimeOptions(options));
    if (options.background ?? options.clock === undefined) runtime.background.start();
    return new MemoryHost(runtime);
  }

  get deps(): CoreDeps {
    return this.runtime.deps;
  }

  get handler(): ApiHandler {
    return this.runtime.handler;
  }

  /** Operator call: a new account and its API key (shown once). */
  createAccount(name: string): Promise<{ accountId: string; apiKey: string }> {
    return this.runtime.createAccount(name);
  }

  /** One API call, exactly as the HTTP service would handle it. */
  request(request: Partial<ApiRequest> & Pick<ApiRequest, 'method' | 'path'>): Promise<ApiResponse> {
    return this.handler({ query: {}, headers: {}, ...request });
  }

  /**
   * Runs background work until nothing is due at the current time: queued jobs, then webhook deliveries.
   * Never advances the clock: time-based work (expiry, retries) waits for the test to step it. Work running
   * by itself is paused meanwhile (the jobs it holds finish first), so when this resolves nothing is left
   * half-done.
   */
  async settle(): Promise<void> {
    const background = this.runtime.background;
    const running = background.running;
    if (running) await background.stop();
    try {
      await this.runtime.settle();
    } finally {
      if (running) background.start();
    }
  }

  close(): Promise<void> {
    return this.runtime.close();
  }
}

/**
 * The runtime's options from the sandbox's: the memory profile, and each option under its runtime name. No
 * default is stated here but the base URL: the others are the memory profile's, else the settings table's.
 */
export function memoryRuntimeOptions(options: MemoryHostOptions): RuntimeOptions {
  return {
    profile: { kind: 'memory', storage: options.storage },
    publicUrl: options.publicUrl ?? 'http://sandbox.carebridge.local',
    urlSigningSecret: options.urlSecret,
    webhooks: { allowPrivate: options.webhookAllowPrivate, sender: options.webhookSender, disableAfterMs: options.webhookDisableAfterMs },
    sandboxDocumentsDir: options.fixturesDir || undefined,
    searchCacheMb: options.searchCacheBytes === undefined ? undefined : options.searchCacheBytes / (1024 * 1024),
    rateLimits: options.rateLimits,
    failedAuthPerMinute: options.failedAuthPerMinute,
    renders: options.renders,
    clock: options.clock,
    ids: options.ids,
    ports: options.ports,
  };
}
