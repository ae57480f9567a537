import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sequelize } from 'sequelize';
import { describe, expect, test } from 'vitest';
import { createPgSchema, probePostgres } from '../../../spec/support/pg.js';
import { SequelizeStorage } from './sequelize.storage.js';
import { columnsOf, TABLES, type TableName } from './schema.js';

interface FoundColumn {
  name: string;
  nullable: boolean;
  primaryKey: boolean;
}

/** What the migrations built, per table: column names, nullability, primary key. */
async function sqliteColumns(sequelize: Sequelize, table: string): Promise<FoundColumn[]> {
  const [rows] = (await sequelize.query(`PRAGMA table_info(${table})`)) as [{ name: string; notnull: number; pk: number }[], unknown];
  return rows.map((row) => ({ name: row.name, nullable: row.notnull === 0, primaryKey: row.pk > 0 }));
}

async function pgColumns(sequelize: Sequelize, schema: string, table: string): Promise<FoundColumn[]> {
  const [columns] = (await sequelize.query(
    `SELECT column_name, is_nullable FROM information_schema.columns WHERE table_schema = :schema AND table_name = :table ORDER BY ordinal_position`,
    { replacements: { schema, table } },
  )) as [{ column_name: string; is_nullable: string }[], unknown];
  const [keys] = (await sequelize.query(
    `SELECT k.column_name FROM information_schema.table_constraints c
       JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name AND k.table_schema = c.table_schema
      WHERE c.table_schema = :schema AND c.table_name = :table AND c.constraint_type = 'PRIMARY KEY'`,
    { replacements: { schema, table } },
  )) as [{ column_name: string }[], unknown];
  const primary = new Set(keys.map((key) => key.column_name));
  return columns.map((column) => ({ name: column.column_name, nullable: column.is_nullable === 'YES', primaryKey: primary.has(column.column_name) }));
}

function expectSchema(found: Record<string, FoundColumn[]>): void {
  for (const table of Object.keys(TABLES) as TableName[]) {
    const expected = columnsOf(table);
    const columns = found[table]!;
    expect(columns.map((column) => column.name).sort(), `${table}: columns`).toEqual(expected.map((column) => column.name).sort());
    for (const column of expected) {
      const built = columns.find((candidate) => candidate.name === column.name)!;
      expect(built.primaryKey, `${table}.${column.name}: primary key`).toBe(column.primaryKey);
      // SQLite lets a primary key column of a rowid table hold NULL unless declared NOT NULL: only the
      // other columns' nullability is compared.
      if (!column.primaryKey) expect(built.nullable, `${table}.${column.name}: nullable`).toBe(column.nullable);
    }
  }
}

describe('the table descriptions (schema.ts) are what the migrations build', () => {
  test('SQLite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'carebridge-schema-'));
    const storage = await SequelizeStorage.open({ dataDir: dir });
    try {
      const found: Record<string, FoundColumn[]> = {};
      for (const table of Object.keys(TABLES)) found[table] = await sqliteColumns(storage.sequelize, table);
      expectSchema(found);
    } finally {
      await storage.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('PostgreSQL', async () => {
    const probe = await probePostgres();
    if (!probe.available) return;
    const pg = await createPgSchema('schema');
    const storage = await SequelizeStorage.open({ url: pg.url, schema: pg.schema });
    try {
      const found: Record<string, FoundColumn[]> = {};
      for (const table of Object.keys(TABLES)) found[table] = await pgColumns(storage.sequelize, pg.schema, table);
      expectSchema(found);
    } finally {
      await storage.close();
      await pg.drop();
    }
  });
});
