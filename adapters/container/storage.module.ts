import { ContainerModule } from 'inversify';
import type { StoragePort } from '../../core/ports/storage.port.js';
import { MemoryStorage } from '../storage/memory/memory.storage.js';
import { SequelizeStorage, type SequelizeStorageOptions } from '../storage/sequelize/sequelize.storage.js';
import { TOKENS } from './tokens.js';

export type StorageModuleOptions =
  /** In-process Maps: the sandbox. */
  | { kind: 'memory' }
  /**
   * SQLite or PostgreSQL through Sequelize; migrations run when the storage is first resolved. The binding
   * is asynchronous: resolve it with `container.getAsync(TOKENS.storage)` (once, at start).
   */
  | ({ kind: 'sequelize' } & SequelizeStorageOptions)
  /** A storage the host already opened (e.g. to share its Sequelize instance with the durable queue). */
  | { kind: 'instance'; storage: StoragePort };

/**
 * Binds TOKENS.storage, one storage per container. `unbindAllAsync()` (container shutdown) closes it,
 * unless it was given as an instance: whoever opened that one closes it.
 */
export function storageModule(options: StorageModuleOptions): ContainerModule {
  return new ContainerModule(({ bind }) => {
    if (options.kind === 'instance') {
      bind(TOKENS.storage).toConstantValue(options.storage);
      return;
    }
    const open = (): StoragePort | Promise<StoragePort> => {
      if (options.kind === 'memory') return new MemoryStorage();
      const { kind: _kind, ...sequelizeOptions } = options;
      return SequelizeStorage.open(sequelizeOptions);
    };
    bind(TOKENS.storage)
      .toDynamicValue(open)
      .inSingletonScope()
      .onDeactivation((storage) => storage.close());
  });
}
