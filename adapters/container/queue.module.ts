import { ContainerModule } from 'inversify';
import type { Sequelize } from 'sequelize';
import type { QueuePort } from '../../core/ports/queue.port.js';
import { MemoryQueue } from '../queue/memory/memory.queue.js';
import type { QueueOptions } from '../queue/queue-common.js';
import { SqlQueue } from '../queue/sql/sql.queue.js';
import { TOKENS } from './tokens.js';

/** Retry settings shared by both adapters (see QueueOptions). */
type QueueTuning = Omit<QueueOptions, 'clock' | 'ids'>;

export type QueueModuleOptions =
  /** In-process: the sandbox and tests. */
  | ({ kind: 'memory' } & QueueTuning)
  /**
   * Durable, in the service database (SQLite or PostgreSQL), sharing the storage's Sequelize instance.
   * Its migrations run when the queue is first resolved, so the binding is asynchronous: resolve it with
   * `container.getAsync(TOKENS.queue)`.
   */
  | ({ kind: 'sql'; sequelize: Sequelize; schema?: string } & QueueTuning)
  | { kind: 'instance'; queue: QueuePort };

/** Binds TOKENS.queue, one queue per container, on the container's TOKENS.clock and TOKENS.ids. */
export function queueModule(options: QueueModuleOptions): ContainerModule {
  return new ContainerModule(({ bind }) => {
    if (options.kind === 'instance') {
      bind(TOKENS.queue).toConstantValue(options.queue);
      return;
    }
    bind(TOKENS.queue)
      .toDynamicValue((context): QueuePort | Promise<QueuePort> => {
        const clock = context.get(TOKENS.clock);
        const ids = context.get(TOKENS.ids);
        if (options.kind === 'memory') {
          const { kind: _kind, ...tuning } = options;
          return new MemoryQueue({ ...tuning, clock, ids });
        }
        const { kind: _kind, ...sqlOptions } = options;
        return SqlQueue.open({ ...sqlOptions, clock, ids });
      })
      .inSingletonScope();
  });
}
