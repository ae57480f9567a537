import type { ApiHandler } from '../../core/api/handler.js';
import type { ApiRequest, ApiResponse } from '../../core/api/types.js';
import type { CoreDeps } from '../../core/deps.js';
import type { ClockPort, IdsPort, StoragePort, WebhookSenderPort } from '../../core/ports/index.js';
import type { Ports } from '../../adapters/container/tokens.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../runtime/runtime.js';
import type { Tunables } from '../../runtime/settings-table.js';

/**
 * The options every host takes are the settings table's (runtime/settings-table.ts), under its names, with
 * its documentation and defaults; the sandbox's own defaults are the runtime's memory profile's (one job at
 * a time, private webhook URLs allowed). Three older names stay as aliases.
 */
export interface MemoryHostOptions extends Omit<Tunables, 'webhooks'> {
  /** Webhook delivery (see `TUNABLES.webhooks`): private URLs are allowed in the sandbox unless `allowPrivate` is false. */
  webhooks?: Tunables['webhooks'];
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
  /** @deprecated `webhooks.allowPrivate`, which wins when both are given. */
  webhookAllowPrivate?: WebhookTunables['allowPrivate'];
  /** @deprecated `webhooks.disableAfterMs`, which wins when both are given. */
  webhookDisableAfterMs?: WebhookTunables['disableAfterMs'];
  /** Another storage adapter in place of the in-memory one (benchmarks, adapter trials). The host closes it. */
  storage?: StoragePort;
  /** @deprecated `searchCacheMb`, in bytes; `searchCacheMb` wins when both are given. */
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
  const {
    storage, publicUrl, urlSecret, webhookSender, fixturesDir, background: _background,
    webhooks, webhookAllowPrivate, webhookDisableAfterMs, searchCacheBytes, ...rest
  } = options;
  return {
    ...rest,
    profile: { kind: 'memory', storage },
    publicUrl: publicUrl ?? 'http://sandbox.carebridge.local',
    urlSigningSecret: urlSecret,
    webhooks: {
      ...webhooks,
      allowPrivate: webhooks?.allowPrivate ?? webhookAllowPrivate,
      disableAfterMs: webhooks?.disableAfterMs ?? webhookDisableAfterMs,
      sender: webhookSender,
    },
    sandboxDocumentsDir: fixturesDir || undefined,
    searchCacheMb: rest.searchCacheMb ?? (searchCacheBytes === undefined ? undefined : searchCacheBytes / (1024 * 1024)),
  };
}
