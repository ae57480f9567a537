import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { openSequelize } from './connection.js';
import { RawSql } from './raw-sql.js';

test('prepared reads: many more shapes than are kept all answer right, a failing one fails alone, and the connection still closes', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-prepared-'));
  const sequelize = await openSequelize({ dataDir: dir });
  try {
    const raw = new RawSql(sequelize);
    // 200 shapes (the kept set is far smaller), each read twice and some at once: old ones are evicted
    // while reads may still be queued on them.
    for (let round = 0; round < 2; round++) {
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, n) => raw.all(undefined, `SELECT ? + ${n} AS v`, [1000], { keepPrepared: true })),
      );
      expect(answers.map((rows) => rows[0]!.v)).toEqual(Array.from({ length: 200 }, (_, n) => 1000 + n));
    }
    await expect(raw.all(undefined, 'SELECT nothing FROM no_such_table WHERE id = ?', [1], { keepPrepared: true })).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(await raw.all(undefined, 'SELECT ? AS v', ['still fine'], { keepPrepared: true })).toEqual([{ v: 'still fine' }]);
  } finally {
    // SQLite refuses to close a connection with unfinalized statements: this throws if any were left.
    await sequelize.close();
    await rm(dir, { recursive: true, force: true });
  }
});
