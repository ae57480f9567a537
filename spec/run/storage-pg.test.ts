import { describe, test } from 'vitest';
import { SequelizeStorage } from '../../adapters/storage/sequelize/sequelize.storage.js';
import { defineStorageContract } from '../ports/storage.contract.js';
import { createPgSchema, probePostgres } from '../support/pg.js';

const pg = await probePostgres();

describe.skipIf(!pg.available)('storage contract: PostgreSQL', () => {
  defineStorageContract({
    test,
    make: async () => {
      const schema = await createPgSchema('storage');
      try {
        const storage = await SequelizeStorage.open({ url: schema.url, schema: schema.schema });
        return {
          storage,
          close: async () => {
            await storage.close();
            await schema.drop();
          },
        };
      } catch (error) {
        await schema.drop();
        throw error;
      }
    },
    // READ COMMITTED transactions run concurrently; updateIfStatus is how writers agree.
    serialisesTransactions: false,
    isolatesUncommittedWrites: true,
    numRuns: 20,
  });
});
