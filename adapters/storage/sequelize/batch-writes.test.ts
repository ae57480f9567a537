import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { Transaction, type Sequelize } from 'sequelize';
import { afterAll, describe, expect, test } from 'vitest';
import type { BulkRowOutcome, Patient } from '../../../core/domain/types.js';
import { createPgSchema, probePostgres } from '../../../spec/support/pg.js';
import { runTransaction } from './connection.js';
import { SequelizeStorage } from './sequelize.storage.js';

/**
 * The bulk import's batch writes (insertMany, updateMany, bulkRows.putMany) travel as JSON through the
 * driver rather than through the models; whatever a field holds must come back exactly as written.
 */

const pg = await probePostgres();
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/**
 * Any text a field may hold: quotes, backslashes, emoji, line breaks, text that reads as JSON. Not NUL:
 * PostgreSQL text cannot hold it on any path, and a CSV holding one is refused as binary.
 */
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }).map((value) => value.replaceAll('\u0000', '')),
  fc.constantFrom('', 'null', 'true', '123', '1e3', ' lead', 'a"b', 'back\\slash', 'line\r\nbreak', '😀', '[1]', '{"a":1}'),
);

function patientArb(accountId: string) {
  return fc.record({
    facilityIds: fc.array(text, { maxLength: 3 }),
    cohortIds: fc.array(text, { maxLength: 3 }),
    externalId: fc.option(text, { nil: undefined }),
    firstName: text,
    lastName: text,
    dob: text,
    genderAtBirth: fc.constantFrom('M', 'F', 'O', 'U') as fc.Arbitrary<Patient['genderAtBirth']>,
    address: fc.array(
      fc.record(
        { addressLine1: text, addressLine2: text, city: text, state: text, zip: text, country: text },
        { requiredKeys: ['addressLine1', 'city', 'state', 'zip', 'country'] },
      ),
      { maxLength: 3 },
    ),
    contact: fc.array(fc.record({ phone: text, email: text }, { requiredKeys: [] }), { maxLength: 2 }),
    personalIdentifiers: fc.array(
      fc.oneof(
        fc.record({ type: fc.constant('ssn' as const), value: text }),
        fc.record({ type: fc.constant('driversLicense' as const), value: text, state: text }),
      ),
      { maxLength: 2 },
    ),
    hieOptOut: fc.boolean(),
    matchKeys: fc.uniqueArray(text, { minLength: 1, maxLength: 3 }),
    version: fc.constant(1),
    createdAt: text,
    updatedAt: text,
  }).map((fields) => ({ ...fields, accountId }));
}

let serial = 0;
const nextId = () => `0190${(++serial).toString(16).padStart(8, '0')}-0000-7000-8000-000000000000`;

/** Drops `undefined` optional fields, as a record read back has them absent. */
function stored(patient: Patient): Patient {
  return JSON.parse(JSON.stringify(patient)) as Patient;
}

function defineBatchWriteTests(name: string, open: () => Promise<{ storage: SequelizeStorage; close: () => Promise<void> }>, numRuns: number) {
  describe(`batch writes round-trip: ${name}`, () => {
    test('property: insertMany then updateMany store every field exactly as given', async () => {
      const { storage, close } = await open();
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.tuple(patientArb('account-a'), patientArb('account-a')), { minLength: 1, maxLength: 6 }),
            async (pairs) => {
              const inserted = pairs.map(([first]) => ({ ...first, id: nextId() }) as Patient);
              await storage.patients.insertMany(inserted);
              for (const patient of inserted) expect(await storage.patients.get('account-a', patient.id)).toEqual(stored(patient));

              const updated = pairs.map(([, second], i) => ({ ...second, id: inserted[i]!.id }) as Patient);
              expect(await storage.patients.updateMany(updated)).toEqual([]);
              for (const patient of updated) expect(await storage.patients.get('account-a', patient.id)).toEqual(stored({ ...patient, version: 2 }));
              // The blocking-key index follows the new keys: each patient is found by its own, and only the new ones.
              for (const patient of updated) {
                const found = await storage.patients.findByMatchKeys('account-a', patient.matchKeys);
                expect(found.map((p) => p.id)).toContain(patient.id);
              }
              const oldOnly = inserted.flatMap((p, i) => p.matchKeys.filter((key) => !updated.some((u) => u.matchKeys.includes(key))).map((key) => [key, i] as const));
              for (const [key, i] of oldOnly) {
                expect((await storage.patients.findByMatchKeys('account-a', [key])).map((p) => p.id)).not.toContain(updated[i]!.id);
              }
            },
          ),
          { numRuns },
        );
      } finally {
        await close();
      }
    });

    test('property: bulkRows.putMany stores and replaces outcomes exactly', async () => {
      const { storage, close } = await open();
      try {
        const outcome = fc.record(
          {
            status: fc.constantFrom('succeeded', 'failed') as fc.Arbitrary<BulkRowOutcome['status']>,
            action: fc.constantFrom('created', 'updated', 'validated') as fc.Arbitrary<NonNullable<BulkRowOutcome['action']>>,
            patientId: text,
            reason: text,
          },
          { requiredKeys: ['status'] },
        );
        let request = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(outcome, { minLength: 1, maxLength: 8 }), fc.array(outcome, { minLength: 1, maxLength: 8 }), async (first, second) => {
            const requestId = `request-${++request}`;
            const rows = (list: typeof first) => list.map((fields, rowIndex) => ({ ...fields, requestId, rowIndex }) as BulkRowOutcome);
            await storage.bulkRows.putMany(rows(first));
            await storage.bulkRows.putMany(rows(second));
            const expected = [...rows(second), ...rows(first).slice(second.length)].map((row) => JSON.parse(JSON.stringify(row)));
            expect(await storage.bulkRows.range(requestId, 0, 100)).toEqual(expected);
          }),
          { numRuns },
        );
      } finally {
        await close();
      }
    });

    test('a duplicate id in insertMany is a CONFLICT, and nothing of the batch stays', async () => {
      const { storage, close } = await open();
      try {
        const [one, two] = fc.sample(patientArb('account-b'), { numRuns: 2, seed: 7 }).map((fields) => ({ ...fields, id: nextId() }) as Patient);
        await storage.patients.insert(one!);
        await expect(storage.patients.insertMany([two!, one!])).rejects.toMatchObject({ code: 'CONFLICT' });
        expect(await storage.patients.get('account-b', two!.id)).toBeUndefined();
      } finally {
        await close();
      }
    });
  });
}

defineBatchWriteTests(
  'SQLite file',
  async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'carebridge-batch-'));
    dirs.push(dataDir);
    const storage = await SequelizeStorage.open({ dataDir });
    return { storage, close: () => storage.close() };
  },
  40,
);

describe.skipIf(!pg.available)('on PostgreSQL', () => {
  defineBatchWriteTests(
    'PostgreSQL',
    async () => {
      const schema = await createPgSchema('batch');
      const storage = await SequelizeStorage.open({ url: schema.url, schema: schema.schema });
      return {
        storage,
        close: async () => {
          await storage.close();
          await schema.drop();
        },
      };
    },
    25,
  );
});

describe('SQLite transaction connections', () => {
  const connectionOf = (transaction: Transaction) => (transaction as unknown as { connection: { open: boolean } }).connection;

  test('a finished transaction leaves its connection for the next one, which finds it as it was left', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'carebridge-conn-'));
    dirs.push(dataDir);
    const storage = await SequelizeStorage.open({ dataDir });
    const sequelize: Sequelize = storage.sequelize;
    try {
      const first = await runTransaction(sequelize, async (transaction) => {
        // A TEMP table lives in its connection only: the next transaction sees it only on the same connection.
        await sequelize.query('CREATE TEMP TABLE reuse_marker (x INTEGER)', { transaction });
        return connectionOf(transaction);
      });
      const second = await runTransaction(sequelize, async (transaction) => {
        await sequelize.query('SELECT x FROM reuse_marker', { transaction });
        return connectionOf(transaction);
      });
      expect(second).toBe(first);
    } finally {
      await storage.close();
    }
  });

  test('transactions running at once each get a connection of their own; closing closes the kept ones', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'carebridge-conn-'));
    dirs.push(dataDir);
    const storage = await SequelizeStorage.open({ dataDir });
    const sequelize: Sequelize = storage.sequelize;
    const seen: { open: boolean }[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Deferred transactions (not through runTransaction's writer lock) so two are open at the same time.
    const holder = sequelize.transaction({ type: Transaction.TYPES.DEFERRED }, async (transaction) => {
      seen.push(connectionOf(transaction));
      await gate;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await sequelize.transaction({ type: Transaction.TYPES.DEFERRED }, async (transaction) => {
      seen.push(connectionOf(transaction));
    });
    release();
    await holder;
    expect(seen).toHaveLength(2);
    expect(seen[0]).not.toBe(seen[1]);
    expect(seen.every((connection) => connection.open)).toBe(true);
    await storage.close();
    expect(seen.every((connection) => !connection.open)).toBe(true);
  });
});

describe('blocking-key index under hash collisions', () => {
  // Every key of every account hashes alike: the index narrows nothing, the patients' own keys decide.
  for (const [name, open] of [
    ['SQLite', async () => ({ storage: await SequelizeStorage.open({ url: ':memory:', matchKeyHasher: () => 42 }), drop: async () => undefined })],
    [
      'PostgreSQL',
      async () => {
        const schema = await createPgSchema('collide');
        return { storage: await SequelizeStorage.open({ url: schema.url, schema: schema.schema, matchKeyHasher: () => 42 }), drop: () => schema.drop() };
      },
    ],
  ] as const) {
    test.skipIf(name === 'PostgreSQL' && !pg.available)(`${name}: lookups return exactly the account's patients sharing a key`, async () => {
      const { storage, drop } = await open();
      try {
        const make = (accountId: string, matchKeys: string[]) =>
          ({ ...fc.sample(patientArb(accountId), { numRuns: 1, seed: serial })[0]!, id: nextId(), matchKeys }) as Patient;
        const ada = make('account-a', ['k1', 'k2']);
        const bob = make('account-a', ['k3']);
        const eve = make('account-b', ['k1']);
        await storage.patients.insertMany([ada, bob]);
        await storage.patients.insert(eve);
        const ids = async (accountId: string, keys: string[]) => (await storage.patients.findByMatchKeys(accountId, keys)).map((p) => p.id).sort();
        expect(await ids('account-a', ['k1'])).toEqual([ada.id]);
        expect(await ids('account-a', ['k3', 'k2'])).toEqual([ada.id, bob.id].sort());
        expect(await ids('account-b', ['k1', 'k3'])).toEqual([eve.id]);
        expect(await ids('account-a', ['k9'])).toEqual([]);

        await storage.patients.updateMany([{ ...ada, matchKeys: ['k2'] }]);
        expect(await ids('account-a', ['k1'])).toEqual([]);
        expect(await ids('account-a', ['k2'])).toEqual([ada.id]);
        await storage.patients.update({ ...bob, matchKeys: ['k1'] });
        expect(await ids('account-a', ['k1', 'k3'])).toEqual([bob.id]);
        expect(await storage.patients.remove('account-a', bob.id)).toBe(true);
        expect(await ids('account-a', ['k1'])).toEqual([]);
        expect(await ids('account-a', ['k2'])).toEqual([ada.id]);
      } finally {
        await storage.close();
        await drop();
      }
    });
  }
});

describe('prepared batch statements (SQLite)', () => {
  test('a kept statement whose table went away fails the write instead of hanging; the file still closes', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'carebridge-prepared-'));
    dirs.push(dataDir);
    const storage = await SequelizeStorage.open({ dataDir });
    const batch = () => fc.sample(patientArb('account-p'), { numRuns: 3, seed: 11 }).map((fields) => ({ ...fields, id: nextId() }) as Patient);
    await storage.patients.insertMany(batch());
    await storage.patients.insertMany(batch());
    await storage.sequelize.query('DROP TABLE patient_key_hashes');
    await expect(storage.patients.insertMany(batch())).rejects.toMatchObject({ code: 'INTERNAL' });
    // A text never prepared before, on a missing table: the prepare itself fails.
    await expect(storage.patients.insertMany([...batch(), ...batch()])).rejects.toMatchObject({ code: 'INTERNAL' });
    // SQLite refuses to close a connection with statements left unfinalized; close finalizes the kept ones.
    await storage.close();
  });
});
