import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pgDriver from 'pg';
import { describe, expect, test } from 'vitest';
import { CarebridgeClient } from '../../client/index.js';
import { createPgSchema, probePostgres } from '../../spec/support/pg.js';
import { createCarebridge } from './carebridge.js';
import { inProcessFetch } from '../../http/fetch.js';

/** `createCarebridge` from a database URL: PostgreSQL, in a schema of its own. Fails under CI when pg is down. */
const pg = await probePostgres();

describe.skipIf(!pg.available)('createCarebridge on PostgreSQL by URL', () => {
  test('the whole bulk flow runs in the background and the data lands in the given schema', async () => {
    const schema = await createPgSchema('embedded');
    const dataDir = await mkdtemp(join(tmpdir(), 'carebridge-embedded-pg-'));
    const publicUrl = 'http://app.example.test/api';
    const carebridge = await createCarebridge({ publicUrl, database: schema.url, databaseSchema: schema.schema, dataDir, pollMs: 20 });
    try {
      const { apiKey } = await carebridge.createAccount('PG Embedder');
      const client = new CarebridgeClient({ apiKey, baseUrl: publicUrl, fetch: inProcessFetch(carebridge.handler, { prefix: '/api' }) });
      await client.createFacility({ name: 'Main Clinic', npi: '1234567893', address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' } });
      const requestId = await client.createPatientsFromCsv('firstName,lastName,dob,gender,addressLine1,city,state,zip\nAnn,Lee,1970-01-01,F,1 Main St,Springfield,IL,62701\n');
      let status = await client.getBulkPatientCreate(requestId);
      for (let attempt = 0; attempt < 400 && status.status === 'processing'; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        status = await client.getBulkPatientCreate(requestId);
      }
      expect(status).toMatchObject({ status: 'completed', succeeded: 1 });
      const sql = new pgDriver.Client({ connectionString: schema.url });
      await sql.connect();
      try {
        const { rows } = await sql.query(`SELECT COUNT(*) AS n FROM "${schema.schema}".patients`);
        // PostgreSQL answers COUNT as a string.
        expect(Number(rows[0].n)).toBe(1);
      } finally {
        await sql.end();
      }
    } finally {
      await carebridge.close();
      await schema.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
