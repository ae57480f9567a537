import { accountsContract } from './storage/accounts.contract.js';
import { bulkContract } from './storage/bulk.contract.js';
import { documentsContract } from './storage/documents.contract.js';
import { entitiesContract } from './storage/entities.contract.js';
import { builders } from './storage/fixtures.js';
import type { StorageContractGroup, StorageContractOptions, StorageTest } from './storage/suite.js';
import { transactionsContract } from './storage/transactions.contract.js';
import { webhooksContract } from './storage/webhooks.contract.js';

export type { StorageContractOptions, StorageUnderTest } from './storage/suite.js';

/**
 * The contract of the storage port (core/ports/storage.port.ts), run against every adapter: one group per
 * family of repositories, each in its file under storage/, so a change to one family's port methods
 * changes one file. `make` returns a fresh, isolated storage per test; nothing is shared between tests.
 */
export function defineStorageContract(options: StorageContractOptions): void {
  const { make } = options;

  const test: StorageTest = (name, body, timeout) =>
    options.test(
      name,
      async () => {
        const subject = await make();
        try {
          await body(subject.storage, builders());
        } finally {
          await subject.close();
        }
      },
      timeout,
    );
  const group: StorageContractGroup = { test, numRuns: options.numRuns ?? 30, options };

  accountsContract(group);
  entitiesContract(group);
  bulkContract(group);
  documentsContract(group);
  webhooksContract(group);
  transactionsContract(group);

  test('close: is idempotent', async (storage) => {
    await storage.close();
    await storage.close();
  });
}
