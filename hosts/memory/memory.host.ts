import 'reflect-metadata';
import { Container } from 'inversify';
import { createAccount } from '../../core/accounts.js';
import { createApiHandler, type ApiHandler } from '../../core/api/handler.js';
import type { ApiRequest, ApiResponse } from '../../core/api/types.js';
import type { CoreConfig, CoreDeps } from '../../core/deps.js';
import { coreJobHandlers } from '../../core/jobs.js';
import type { ClockPort, IdsPort, StoragePort, WebhookSenderPort } from '../../core/ports/index.js';
import { deliverDueMessages, type EndpointPauses } from '../../core/webhooks/deliver.js';
import { SystemClock } from '../../adapters/clock/system.clock.js';
import { resolveCoreDeps } from '../../adapters/container/core-deps.js';
import { documentsModule } from '../../adapters/container/documents.module.js';
import { infraModule } from '../../adapters/container/infra.module.js';
import { queueModule } from '../../adapters/container/queue.module.js';
import { storageModule } from '../../adapters/container/storage.module.js';
import { TOKENS } from '../../adapters/container/tokens.js';
import { webhookModule } from '../../adapters/container/webhook.module.js';
import { Uuid7Ids } from '../../adapters/ids/uuid7.ids.js';
import { QueueRunner } from '../../adapters/queue/runner.js';
import { sandboxDocumentsDir } from '../sandbox-documents.js';
import { randomBytes } from 'node:crypto';

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
  /** Another storage adapter in place of the in-memory one (benchmarks, adapter trials). The host closes it. */
  storage?: StoragePort;
  /** Estimated bytes of per-patient search indexes kept in memory; the index's default (64 MB) when absent. */
  searchCacheBytes?: number;
}

/**
 * The in-process sandbox: every adapter in memory, the same handler the HTTP service uses, and explicit
 * control of background work (`settle`) so integration tests are deterministic. Nothing is persisted.
 */
export class MemoryHost {
  /** Retry-After pauses asked for by webhook endpoints, kept across delivery passes. */
  private readonly endpointPauses: EndpointPauses = new Map();

  private constructor(
    readonly deps: CoreDeps,
    readonly handler: ApiHandler,
    private readonly runner: QueueRunner,
    private readonly container: Container,
  ) {}

  static async create(options: MemoryHostOptions = {}): Promise<MemoryHost> {
    const container = new Container();
    const config: CoreConfig = {
      publicUrl: (options.publicUrl ?? 'http://sandbox.carebridge.local').replace(/\/+$/, ''),
      webhookAllowPrivate: options.webhookAllowPrivate ?? true,
    };
    const clock = options.clock ?? new SystemClock();
    const ids = options.ids ?? new Uuid7Ids();
    container.bind(TOKENS.config).toConstantValue(config);
    container.load(
      infraModule({ urlSecret: options.urlSecret ?? randomBytes(32).toString('hex'), blob: { kind: 'memory' }, clock, ids }),
      storageModule(options.storage ? { kind: 'instance', storage: options.storage } : { kind: 'memory' }),
      queueModule({ kind: 'memory' }),
      // In-process conversion: a sandbox serves one developer or one test, and threads would each load the
      // converter again (about a second) for every host created.
      documentsModule({
        sandboxDocumentsDir: options.fixturesDir ?? sandboxDocumentsDir(),
        ccda: { kind: 'in-process' },
        ...(options.searchCacheBytes === undefined ? {} : { searchCacheBytes: options.searchCacheBytes }),
      }),
    );
    if (options.webhookSender) container.bind(TOKENS.webhookSender).toConstantValue(options.webhookSender);
    else container.load(webhookModule());

    const deps = await resolveCoreDeps(container);
    const handler = createApiHandler(deps);
    const runner = new QueueRunner({ queue: deps.queue, clock, handlers: coreJobHandlers(deps), workerId: 'memory-host', concurrency: 1, leaseMs: 60_000, pollMs: 50 });
    return new MemoryHost(deps, handler, runner, container);
  }

  /** Operator call: a new account and its API key (shown once). */
  async createAccount(name: string): Promise<{ accountId: string; apiKey: string }> {
    const { account, apiKey } = await createAccount(this.deps, { name });
    return { accountId: account.id, apiKey };
  }

  /** One API call, exactly as the HTTP service would handle it. */
  request(request: Partial<ApiRequest> & Pick<ApiRequest, 'method' | 'path'>): Promise<ApiResponse> {
    return this.handler({ query: {}, headers: {}, ...request });
  }

  /**
   * Runs background work until nothing is due at the current time: queued jobs, then webhook deliveries.
   * Never advances the clock: time-based work (expiry, retries) waits for the test to step it.
   */
  async settle(): Promise<void> {
    for (let round = 0; round < 1_000; round++) {
      const ran = await this.runner.drain();
      const delivered = await deliverDueMessages({ ...this.deps, random: Math.random, endpointPauses: this.endpointPauses }, { limit: 1_000 });
      if (ran === 0 && delivered.delivered + delivered.failed + delivered.parked === 0) return;
    }
  }

  async close(): Promise<void> {
    await this.runner.stop();
    await this.deps.storage.close();
    await this.container.unbindAllAsync();
  }
}
