/**
 * Waits for every promise, then resolves with their values in order or rejects with the first failure
 * (in argument order). Unlike `Promise.all` it never returns while one is still running: writes made
 * through a transaction must all have finished before the transaction commits or rolls back, or a late
 * one would land after the ROLLBACK, outside any transaction.
 */
export async function settleAll<T extends readonly unknown[]>(promises: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(promises);
  const values: unknown[] = [];
  for (const outcome of settled) {
    if (outcome.status === 'rejected') throw outcome.reason;
    values.push(outcome.value);
  }
  return values as { -readonly [K in keyof T]: Awaited<T[K]> };
}
