import type { StoragePort } from '../../core/ports/storage.port.js';

/** Methods of the storage port that change something (a queue or outbox claim included): not reads. */
const WRITE = /^(insert|update|put|remove|add|replace|set|disable|claim|release|prune|lock)/;

/**
 * `storage` counting its reads by `repository.method` into `reads`, those made in its transactions too
 * (the `tx` a transaction hands its work is counted the same way). For tests of how much a use case reads.
 */
export function countingReads(storage: StoragePort, reads: Map<string, number>): StoragePort {
  return counting(storage, reads, (method) => !WRITE.test(method));
}

/** `countingReads` for writes: `storage` counting the calls of its methods that change something into `writes`. */
export function countingWrites(storage: StoragePort, writes: Map<string, number>): StoragePort {
  return counting(storage, writes, (method) => WRITE.test(method));
}

/** `storage` counting the calls of the methods `isCounted` names into `calls`, in its transactions too. */
function counting(storage: StoragePort, calls: Map<string, number>, isCounted: (method: string) => boolean): StoragePort {
  const counted = <T extends object>(repository: T, name: string): T =>
    new Proxy(repository, {
      get(object, key, receiver) {
        const value = Reflect.get(object, key, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const method = `${name}.${String(key)}`;
          if (isCounted(String(key))) calls.set(method, (calls.get(method) ?? 0) + 1);
          return value.apply(object, args);
        };
      },
    });
  const wrap = (port: StoragePort): StoragePort =>
    new Proxy(port, {
      get(object, key, receiver) {
        if (key === 'transaction') return <T>(work: (tx: StoragePort) => Promise<T>) => object.transaction((tx) => work(wrap(tx)));
        const value = Reflect.get(object, key, receiver);
        if (typeof value === 'function') return value.bind(object);
        return typeof value === 'object' && value !== null ? counted(value, String(key)) : value;
      },
    });
  return wrap(storage);
}

/** The reads of `reads` over their bound in `bounds` (a read without a bound has bound 0), as `method: count > bound`. */
export function readsOverBounds(reads: ReadonlyMap<string, number>, bounds: Readonly<Record<string, number>>): string[] {
  return [...reads].filter(([method, count]) => count > (bounds[method] ?? 0)).map(([method, count]) => `${method}: ${count} > ${bounds[method] ?? 0}`);
}
