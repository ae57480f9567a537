import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Sequelize } from 'sequelize';
import { openSequelize } from '../adapters/storage/sequelize/connection.js';
import type { ServiceSettings } from './settings.js';

export function isPostgresUrl(url: string | undefined): boolean {
  return url !== undefined && /^postgres(ql)?:\/\//.test(url);
}

/**
 * The service database from the settings: PostgreSQL when DATABASE_URL says so (in DATABASE_SCHEMA,
 * created when missing), else SQLite (DATABASE_URL `sqlite:<file>`, or `carebridge.sqlite` in DATA_DIR).
 * Shared by the service and the CLI's account commands, so both open the same database.
 */
export async function openDatabase(settings: Pick<ServiceSettings, 'databaseUrl' | 'databaseSchema' | 'dataDir'>): Promise<Sequelize> {
  if (!isPostgresUrl(settings.databaseUrl)) {
    await mkdir(resolve(settings.dataDir), { recursive: true });
    return openSequelize({ ...(settings.databaseUrl ? { url: settings.databaseUrl } : {}), dataDir: settings.dataDir });
  }
  const sequelize = await openSequelize({ url: settings.databaseUrl, ...(settings.databaseSchema ? { schema: settings.databaseSchema } : {}) });
  try {
    // openSequelize checked the name; the schema must exist before the migrations run in it.
    if (settings.databaseSchema) await sequelize.query(`CREATE SCHEMA IF NOT EXISTS "${settings.databaseSchema}"`);
  } catch (error) {
    await sequelize.close();
    throw error;
  }
  return sequelize;
}
