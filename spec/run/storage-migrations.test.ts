import { QueryTypes, type Sequelize } from 'sequelize';
import { describe, expect, test } from 'vitest';
import { openSequelize, runTransaction } from '../../adapters/storage/sequelize/connection.js';
import * as matchKeyHashes from '../../adapters/storage/sequelize/migrations/0002-match-key-hashes.js';
import * as bulkCounts from '../../adapters/storage/sequelize/migrations/0007-bulk-counts.js';
import * as rekeyNames from '../../adapters/storage/sequelize/migrations/0008-rekey-names.js';
import { matchKeysFor } from '../../core/matching/block.js';
import { SequelizeStorage } from '../../adapters/storage/sequelize/sequelize.storage.js';
import type { BulkRequest, Patient } from '../../core/domain/types.js';
import { createPgSchema, probePostgres } from '../support/pg.js';

// Under CI an unreachable PostgreSQL throws here, failing the file; elsewhere its half is skipped with a printed reason.
const pg = await probePostgres();

function patient(n: number, accountId: string, lastName: string): Patient {
  const dob = `19${String(50 + (n % 40))}-0${1 + (n % 9)}-1${n % 10}`;
  const keys = lastName.split(' ').map((name) => `${dob}|female|${name.toLowerCase()}`);
  return {
    id: `00000000-0000-7000-8000-${n.toString(16).padStart(12, '0')}`,
    accountId,
    facilityIds: ['facility'],
    cohortIds: [],
    firstName: 'Ada',
    lastName,
    dob,
    genderAtBirth: 'F',
    address: [],
    contact: [],
    personalIdentifiers: [],
    hieOptOut: false,
    matchKeys: keys,
    version: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
}

/**
 * A database holding patients under 0001's text key index (made by running 0002 down) is migrated up
 * again: every patient is found by each of its keys, only in its own account, and a later write keeps
 * the index right. More than one page of keys, so the carried-over copy pages.
 */
async function roundTrip(sequelize: Sequelize): Promise<void> {
  const patients = Array.from({ length: 6_100 }, (_, n) => patient(n + 1, n % 2 === 0 ? 'account-a' : 'account-b', n % 3 === 0 ? 'Garcia Lopez' : `Name${n}`));
  const first = await SequelizeStorage.open({ sequelize });
  await first.patients.insertMany(patients);
  await runTransaction(sequelize, async (transaction) => {
    await matchKeyHashes.down({ context: { queryInterface: sequelize.getQueryInterface(), transaction } });
    await sequelize.query(`DELETE FROM carebridge_storage_migrations WHERE name = '${matchKeyHashes.name}'`, { transaction });
  });
  const [{ count }] = (await sequelize.query('SELECT COUNT(*) AS count FROM patient_match_keys', { type: QueryTypes.SELECT })) as [{ count: number | string }];
  expect(Number(count)).toBe(patients.reduce((sum, p) => sum + p.matchKeys.length, 0));

  const second = await SequelizeStorage.open({ sequelize });
  const tables = await sequelize.getQueryInterface().showAllTables();
  expect(tables.map(String)).not.toContain('patient_match_keys');
  for (const sample of [patients[0]!, patients[3]!, patients[4_001]!, patients[6_099]!]) {
    for (const key of sample.matchKeys) {
      const found = await second.patients.findByMatchKeys(sample.accountId, [key]);
      expect(found.map((p) => p.id)).toContain(sample.id);
      expect(found.every((p) => p.accountId === sample.accountId && p.matchKeys.includes(key))).toBe(true);
      const other = sample.accountId === 'account-a' ? 'account-b' : 'account-a';
      expect((await second.patients.findByMatchKeys(other, [key])).map((p) => p.id)).not.toContain(sample.id);
    }
  }
  const renamed = { ...patients[0]!, lastName: 'Other', matchKeys: [`${patients[0]!.dob}|female|other`] };
  await second.patients.updateMany([renamed]);
  expect((await second.patients.findByMatchKeys('account-a', patients[0]!.matchKeys)).map((p) => p.id)).not.toContain(renamed.id);
  expect((await second.patients.findByMatchKeys('account-a', renamed.matchKeys)).map((p) => p.id)).toEqual([renamed.id]);
}

describe('storage migration 0002 (hashed blocking keys)', () => {
  test('SQLite: keys stored under 0001 are carried over and found', async () => {
    const sequelize = await openSequelize({ url: ':memory:' });
    try {
      await roundTrip(sequelize);
    } finally {
      await sequelize.close();
    }
  });

  test.skipIf(!pg.available)('PostgreSQL: keys stored under 0001 are carried over and found', async () => {
    const schema = await createPgSchema('migrate0002');
    const sequelize = await openSequelize({ url: schema.url, schema: schema.schema });
    try {
      await roundTrip(sequelize);
    } finally {
      await sequelize.close();
      await schema.drop();
    }
  });
});

/**
 * Requests imported before 0007 get their created and updated counts from their row outcomes; later ones
 * keep what the import counted.
 */
async function bulkCountsRoundTrip(sequelize: Sequelize): Promise<void> {
  const first = await SequelizeStorage.open({ sequelize });
  const request: BulkRequest = {
    id: 'r0000000-0000-7000-8000-000000000001',
    accountId: 'account-a',
    facilityId: 'facility',
    dryRun: false,
    status: 'completed',
    processed: 5,
    succeeded: 4,
    failed: 1,
    created: 0,
    updated: 0,
    uploadKey: 'u.csv',
    expiresAt: '2026-01-01T00:10:00.000Z',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:01:00.000Z',
  };
  await first.bulkRequests.insert(request);
  const actions = ['created', 'updated', 'created', undefined, 'created'] as const;
  await first.bulkRows.putMany(
    actions.map((action, rowIndex) =>
      action ? { requestId: request.id, rowIndex, status: 'succeeded', action, patientId: `p${rowIndex}` } : { requestId: request.id, rowIndex, status: 'failed', reason: 'dob: required' },
    ),
  );
  await runTransaction(sequelize, async (transaction) => {
    await bulkCounts.down({ context: { queryInterface: sequelize.getQueryInterface(), transaction } });
    await sequelize.query(`DELETE FROM carebridge_storage_migrations WHERE name = '${bulkCounts.name}'`, { transaction });
  });
  const second = await SequelizeStorage.open({ sequelize });
  expect(await second.bulkRequests.getById(request.id)).toEqual({ ...request, created: 3, updated: 1 });
}

describe('storage migration 0007 (bulk counts)', () => {
  test('SQLite: requests stored before count their created and updated rows', async () => {
    const sequelize = await openSequelize({ url: ':memory:' });
    try {
      await bulkCountsRoundTrip(sequelize);
    } finally {
      await sequelize.close();
    }
  });

  test.skipIf(!pg.available)('PostgreSQL: requests stored before count their created and updated rows', async () => {
    const schema = await createPgSchema('migrate0007');
    const sequelize = await openSequelize({ url: schema.url, schema: schema.schema });
    try {
      await bulkCountsRoundTrip(sequelize);
    } finally {
      await sequelize.close();
      await schema.drop();
    }
  });
});

/**
 * Patients stored with keys folded the old way (marks dropped, final sigma kept, full width kept) get the
 * keys a row folds to now, so a later row of the same person finds them; patients whose keys are current
 * are left as they are.
 */
async function rekeyRoundTrip(sequelize: Sequelize): Promise<void> {
  const first = await SequelizeStorage.open({ sequelize });
  const stale = [
    { ...patient(1, 'account-a', 'Παπαδόπουλος'), matchKeys: ['1951-02-11|F|παπαδοπουλος'] },
    { ...patient(2, 'account-a', 'राम'), matchKeys: ['1952-03-12|F|रम'] },
    { ...patient(3, 'account-b', 'Ｄｏｅ'), matchKeys: ['1953-04-13|F|ｄｏｅ'] },
  ];
  const current = patient(4, 'account-a', 'Garcia Lopez');
  current.matchKeys = matchKeysFor(current);
  await first.patients.insertMany([...stale, current]);
  await runTransaction(sequelize, async (transaction) => {
    await rekeyNames.down();
    await sequelize.query(`DELETE FROM carebridge_storage_migrations WHERE name = '${rekeyNames.name}'`, { transaction });
  });

  const second = await SequelizeStorage.open({ sequelize });
  for (const stored of stale) {
    const keys = matchKeysFor(stored);
    expect(keys).not.toEqual(stored.matchKeys);
    expect((await second.patients.findByMatchKeys(stored.accountId, keys)).map((p) => p.id)).toEqual([stored.id]);
    expect(await second.patients.findByMatchKeys(stored.accountId, stored.matchKeys)).toEqual([]);
    expect(await second.patients.get(stored.accountId, stored.id)).toEqual({ ...stored, matchKeys: keys });
  }
  expect(await second.patients.get('account-a', current.id)).toEqual(current);
  expect((await second.patients.findByMatchKeys('account-a', current.matchKeys)).map((p) => p.id)).toEqual([current.id]);
}

describe('storage migration 0008 (blocking keys of names folded the old way)', () => {
  test('SQLite: stored patients are found by the keys their names fold to now', async () => {
    const sequelize = await openSequelize({ url: ':memory:' });
    try {
      await rekeyRoundTrip(sequelize);
    } finally {
      await sequelize.close();
    }
  });

  test.skipIf(!pg.available)('PostgreSQL: stored patients are found by the keys their names fold to now', async () => {
    const schema = await createPgSchema('migrate0008');
    const sequelize = await openSequelize({ url: schema.url, schema: schema.schema });
    try {
      await rekeyRoundTrip(sequelize);
    } finally {
      await sequelize.close();
      await schema.drop();
    }
  });
});
