import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, vi } from 'vitest';
import { openSequelize, runTransaction } from './connection.js';

test('a SQLite transaction commits what its work wrote and rolls back what a failed work wrote, its BEGIN, COMMIT and ROLLBACK on the driver, not through Sequelize queries', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-tx-'));
  const sequelize = await openSequelize({ dataDir: dir });
  try {
    await sequelize.query('CREATE TABLE kept (id INTEGER PRIMARY KEY)');
    const statements: string[] = [];
    const original = sequelize.query.bind(sequelize) as (sql: string, options?: object) => Promise<unknown>;
    const query = vi.spyOn(sequelize, 'query').mockImplementation(((sql: string, options?: object) => {
      statements.push(sql);
      return original(sql, options);
    }) as never);

    await runTransaction(sequelize, (transaction) => sequelize.query('INSERT INTO kept (id) VALUES (1)', { transaction }));
    await expect(
      runTransaction(sequelize, async (transaction) => {
        await sequelize.query('INSERT INTO kept (id) VALUES (2)', { transaction });
        throw new Error('the work failed');
      }),
    ).rejects.toThrow('the work failed');
    // Transactions one after the other and side by side, as the writer queues them.
    await Promise.all([3, 4, 5].map((id) => runTransaction(sequelize, (transaction) => sequelize.query(`INSERT INTO kept (id) VALUES (${id})`, { transaction }))));

    expect(statements.filter((sql) => /^(BEGIN|COMMIT|ROLLBACK)/i.test(sql))).toEqual([]);
    expect(statements.filter((sql) => sql.startsWith('INSERT'))).toHaveLength(5);
    query.mockRestore();
    const [rows] = await sequelize.query('SELECT id FROM kept ORDER BY id');
    expect(rows).toEqual([{ id: 1 }, { id: 3 }, { id: 4 }, { id: 5 }]);
  } finally {
    await sequelize.close();
    await rm(dir, { recursive: true, force: true });
  }
});
