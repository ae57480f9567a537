import type { RateLimits } from '../../core/api/rate-limit.js';
import type { ApiHandler } from '../../core/api/handler.js';
import type { ApiRequest, ApiResponse } from '../../core/api/types.js';
import type { CoreDeps } from '../../core/deps.js';
import type { ClockPort, IdsPort, StoragePort, WebhookSenderPort } from '../../core/ports/index.js';
import type { Ports } from '../../adapters/container/tokens.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';

export interface MemoryHostOptions {
  /** A stepped clock in tests; the system clock otherwise. */
  clock?: ClockPort;
  ids?: IdsPort;
  /** Base of the URLs handed out; they are fetched back through `fetchUrl`. */
  publicUrl?: string;
  /** Where sandbox HIE documents come from (the C-CDA fixtures). */
  fixturesDir?: string;
  /** Replaces the HTTP webhook sender (e.g. to record deliveries in a test). */
  webhookSender?: WebhookSenderPort;
  /** Secret for pre-signed URLs; random per host when absent. */
  urlSecret?: string;
  webhookAllowPrivate?: boolean;
  /** An endpoint failing every attempt this long is disabled (see `RuntimeOptions.webhooks`). Default 5 days; 0 never. */
  webhookDisableAfterMs?: number;
  /** Another storage adapter in place of the in-memory one (benchmarks, adapter trials). The host closes it. */
  storage?: StoragePort;
  /** Estimated bytes of per-patient search indexes kept in memory; the index's default (64 MB) when absent. */
  searchCacheBytes?: number;
  /** Requests per minute per account by route class, to try a client's handling of 429; no limits when absent. */
  rateLimits?: RateLimits;
  /**
   * Runs queued work (imports, document queries, conversions) and webhook deliveries by itself, as the
   * service does, so a client polling for an outcome gets it. Default: on, unless a `clock` is given (a test
   * that steps time drives the work too, with `settle()`). `settle()` works either way.
   */
  background?: boolean;
  /**
   * Wrong API keys allowed per client address and minute; not limited when absent. Only requests that carry
   * `remoteAddress` (the host mounted behind an HTTP wrapper, or a test setting it) are counted.
   */
  failedAuthPerMinute?: number;
  /** Renders (HTML, PDF) at once and waiting; past them 503 BUSY. Default 2 and 8, as the service. */
  renders?: { concurrency?: number; queue?: number };
  /** Your own implementation of any port in place of the sandbox's, by name (see `CarebridgeOptions.ports`). */
  ports?: Partial<Ports>;
}

/**
 * The in-process sandbox: the runtime's memory profile (every adapter in memory, the same handler the HTTP
 * service uses). Background work runs by itself (see `background`) or only when `settle()` is called, so
 * integration tests can be deterministic. Nothing is persisted.
 */
export class MemoryHost {
  private constructor(private readonly runtime: Runtime) {}

  static async create(options: MemoryHostOptions = {}): Promise<MemoryHost> {
    const runtime = await createRuntime({
      profile: { kind: 'memory', ...(options.storage ? { storage: options.storage } : {}) },
      publicUrl: options.publicUrl ?? 'http://sandbox.carebridge.local',
      ...(options.urlSecret !== undefined ? { urlSigningSecret: options.urlSecret } : {}),
      webhooks: {
        allowPrivate: options.webhookAllowPrivate ?? true,
        ...(options.webhookSender ? { sender: options.webhookSender } : {}),
        ...(options.webhookDisableAfterMs !== undefined ? { disableAfterMs: options.webhookDisableAfterMs } : {}),
      },
      ...(options.fixturesDir ? { sandboxDocumentsDir: options.fixturesDir } : {}),
      ...(options.searchCacheBytes !== undefined ? { searchCacheBytes: options.searchCacheBytes } : {}),
      ...(options.rateLimits ? { rateLimits: options.rateLimits } : {}),
      ...(options.failedAuthPerMinute ? { failedAuthPerMinute: options.failedAuthPerMinute } : {}),
      ...(options.renders ? { renders: options.renders } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.ids ? { ids: options.ids } : {}),
      ...(options.ports ? { ports: options.ports } : {}),
    });
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
