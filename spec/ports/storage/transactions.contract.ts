import { expect } from 'vitest';
import type { Patient } from '../../../core/domain/types.js';
import type { StoragePort } from '../../../core/ports/storage.port.js';
import { settleAll } from '../../../core/settle.js';
import { ACCOUNT_A, builders, row, ids, patientCount, rowCounts } from './fixtures.js';
import type { StorageContractGroup } from './suite.js';

/** Transactions across repositories: commit, rollback, nesting, concurrency, isolation. */
export function transactionsContract({ test, options }: StorageContractGroup): void {
  // ----- transactions

  /** Writes through several repositories, as a batch of the bulk import does. */
  const writeBatch = async (tx: StoragePort, build: ReturnType<typeof builders>, requestId: string) => {
    const patients = [build.patient(ACCOUNT_A, { matchKeys: ['tx-key'] }), build.patient(ACCOUNT_A, { matchKeys: ['tx-key'] })];
    await tx.patients.insertMany(patients);
    await tx.bulkRows.putMany(patients.map((patient, i) => row(requestId, i, { patientId: patient.id })));
    const request = (await tx.bulkRequests.get(ACCOUNT_A, requestId))!;
    await tx.bulkRequests.updateIfStatus({ ...request, processed: request.processed + 2, succeeded: request.succeeded + 2 }, request.status);
    const message = build.outbox(ACCOUNT_A);
    await tx.outbox.add(message);
    return { patients, message };
  };

  test('transaction: commits every write made through tx, and returns what work returns', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
    await storage.bulkRequests.insert(request);
    const { patients, message } = await storage.transaction(async (tx) => {
      const written = await writeBatch(tx, build, request.id);
      // Reads through tx see its own writes.
      expect(await tx.patients.get(ACCOUNT_A, written.patients[0]!.id)).toEqual(written.patients[0]);
      expect(ids(await tx.patients.findByMatchKeys(ACCOUNT_A, ['tx-key']))).toEqual(ids(written.patients));
      expect(await rowCounts(tx, request.id)).toEqual({ total: 2, failed: 0 });
      return written;
    });
    expect(await storage.patients.list(ACCOUNT_A)).toEqual(patients);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['tx-key']))).toEqual(ids(patients));
    expect(await rowCounts(storage, request.id)).toEqual({ total: 2, failed: 0 });
    expect((await storage.bulkRequests.get(ACCOUNT_A, request.id))!.processed).toBe(2);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(message);
  });

  test('transaction: a record written twice inside is found by its latest values only', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { matchKeys: ['first'], externalId: 'first' });
    const outside = build.patient(ACCOUNT_A, { matchKeys: ['first'], externalId: 'outside' });
    await storage.patients.insert(outside);
    const final: Patient = { ...patient, matchKeys: ['third'], externalId: 'third', version: 3 };
    await storage.transaction(async (tx) => {
      await tx.patients.insert(patient);
      await tx.patients.update({ ...patient, matchKeys: ['second'], externalId: 'second' });
      // The transaction reads its own writes' versions: a second update states the first one's.
      expect(await tx.patients.update({ ...patient, matchKeys: ['stale'] })).toBe('stale');
      await tx.patients.update({ ...final, version: 2 });
      await tx.patients.update({ ...outside, matchKeys: ['moved'] });
      for (const key of ['first', 'second']) expect(await tx.patients.findByMatchKeys(ACCOUNT_A, [key])).toEqual([]);
      expect(await tx.patients.findByMatchKeys(ACCOUNT_A, ['third'])).toEqual([final]);
      expect(await tx.patients.findByExternalId(ACCOUNT_A, 'second')).toEqual([]);
      expect(ids(await tx.patients.findByMatchKeys(ACCOUNT_A, ['moved']))).toEqual([outside.id]);
    });
    for (const key of ['first', 'second']) expect(await storage.patients.findByMatchKeys(ACCOUNT_A, [key])).toEqual([]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['third'])).toEqual([final]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['moved']))).toEqual([outside.id]);
    expect(await storage.patients.findByExternalId(ACCOUNT_A, 'third')).toEqual([final]);
  });

  test('transaction: a throw rolls back every write and rethrows the same error', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
    await storage.bulkRequests.insert(request);
    const survivor = build.patient(ACCOUNT_A, { matchKeys: ['tx-key'] });
    await storage.patients.insert(survivor);
    const failure = new Error('boom');
    let written: Awaited<ReturnType<typeof writeBatch>> | undefined;
    await expect(
      storage.transaction(async (tx) => {
        written = await writeBatch(tx, build, request.id);
        await tx.patients.update({ ...survivor, firstName: 'Rolled Back', matchKeys: ['gone'] });
        await tx.patients.remove(ACCOUNT_A, survivor.id);
        await tx.fhirResources.putMany([build.fhirResource(ACCOUNT_A, survivor.id)]);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(written).toBeDefined();
    for (const patient of written!.patients) expect(await storage.patients.get(ACCOUNT_A, patient.id)).toBeUndefined();
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([survivor]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['tx-key', 'gone']))).toEqual([survivor.id]);
    expect(await rowCounts(storage, request.id)).toEqual({ total: 0, failed: 0 });
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(request);
    expect(await storage.outbox.list(ACCOUNT_A)).toEqual([]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, survivor.id)).toEqual([]);
    // The storage is usable afterwards.
    await storage.transaction(async (tx) => tx.patients.insert(build.patient(ACCOUNT_A)));
    expect(await patientCount(storage, ACCOUNT_A)).toBe(2);
  });

  test('transaction: a failed insertMany inside leaves the whole transaction to roll back', async (storage, build) => {
    const existing = build.patient(ACCOUNT_A);
    await storage.patients.insert(existing);
    const first = build.patient(ACCOUNT_A);
    await expect(
      storage.transaction(async (tx) => {
        await tx.patients.insert(first);
        await tx.patients.insertMany([build.patient(ACCOUNT_A), existing]);
      }),
    ).rejects.toThrow();
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([existing]);
  });

  test('transaction: overlapping writes through tx (all settled before work returns) commit together', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
    await storage.bulkRequests.insert(request);
    const stored = build.patient(ACCOUNT_A, { matchKeys: ['old-key'] });
    await storage.patients.insert(stored);
    const created = [build.patient(ACCOUNT_A, { matchKeys: ['new-key'] }), build.patient(ACCOUNT_A, { matchKeys: ['new-key'] })];
    const changed = { ...stored, firstName: 'Changed', matchKeys: ['new-key'] };
    const outcomes = created.map((patient, i) => row(request.id, i, { patientId: patient.id }));
    const next = { ...request, processed: 2, succeeded: 2 };
    const [, , , updated] = await storage.transaction((tx) =>
      settleAll([
        tx.patients.insertMany(created),
        tx.patients.updateMany([changed]),
        tx.bulkRows.putMany(outcomes),
        tx.bulkRequests.updateIfStatus(next, 'processing'),
      ] as const),
    );
    expect(updated).toEqual(next);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['new-key'])).sort()).toEqual(ids([...created, changed]).sort());
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['old-key'])).toEqual([]);
    expect(await storage.patients.get(ACCOUNT_A, stored.id)).toEqual({ ...changed, version: 2 });
    expect(await storage.bulkRows.range(request.id, 0, 10)).toEqual(outcomes);
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(next);
  });

  test('transaction: overlapping writes through tx roll back together when one of them fails', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
    await storage.bulkRequests.insert(request);
    const existing = build.patient(ACCOUNT_A, { matchKeys: ['kept-key'] });
    await storage.patients.insert(existing);
    const fresh = build.patient(ACCOUNT_A, { matchKeys: ['fresh-key'] });
    await expect(
      storage.transaction((tx) =>
        settleAll([
          tx.bulkRows.putMany([row(request.id, 0, { patientId: fresh.id })]),
          tx.patients.insertMany([fresh, existing]),
          tx.bulkRequests.updateIfStatus({ ...request, processed: 1, succeeded: 1 }, 'processing'),
          tx.outbox.add(build.outbox(ACCOUNT_A)),
        ] as const),
      ),
    ).rejects.toThrow();
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([existing]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['fresh-key'])).toEqual([]);
    expect(await rowCounts(storage, request.id)).toEqual({ total: 0, failed: 0 });
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(request);
    expect(await storage.outbox.list(ACCOUNT_A)).toEqual([]);
    // Nothing ran after the rollback: the storage takes the same writes afterwards.
    await storage.transaction((tx) => tx.patients.insert(fresh));
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['fresh-key'])).toEqual([fresh]);
  });

  test('transaction: nested calls on tx join the outer transaction', async (storage, build) => {
    const inner = build.patient(ACCOUNT_A);
    const failure = new Error('outer fails after inner returned');
    await expect(
      storage.transaction(async (tx) => {
        const value = await tx.transaction(async (nested) => {
          await nested.patients.insert(inner);
          return 42;
        });
        expect(value).toBe(42);
        expect(await tx.patients.get(ACCOUNT_A, inner.id)).toEqual(inner);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await storage.patients.get(ACCOUNT_A, inner.id)).toBeUndefined();

    const committed = build.patient(ACCOUNT_A);
    await storage.transaction((tx) => tx.transaction((nested) => nested.patients.insert(committed)));
    expect(await storage.patients.get(ACCOUNT_A, committed.id)).toEqual(committed);
  });

  test('transaction: concurrent transactions each commit or roll back on their own', async (storage, build) => {
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        storage.transaction(async (tx) => {
          await tx.patients.insert(build.patient(ACCOUNT_A, { externalId: `tx-${i}` }));
          await tx.outbox.add(build.outbox(ACCOUNT_A));
          if (i % 2 === 1) throw new Error(`fail ${i}`);
          return i;
        }),
      ),
    );
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled', 'rejected']);
    const kept = (await storage.patients.list(ACCOUNT_A)).map((patient) => patient.externalId).sort();
    expect(kept).toEqual(['tx-0', 'tx-2', 'tx-4']);
    expect(await storage.outbox.counts(ACCOUNT_A)).toEqual({ pending: 3, delivered: 0, parked: 0 });
  });

  if (options.serialisesTransactions) {
    test('transaction: concurrent read-modify-write transactions lose no update (transactions are serialised)', async (storage, build) => {
      const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
      await storage.bulkRequests.insert(request);
      await Promise.all(
        Array.from({ length: 8 }, () =>
          storage.transaction(async (tx) => {
            const current = (await tx.bulkRequests.get(ACCOUNT_A, request.id))!;
            await new Promise((resolve) => setTimeout(resolve, 1));
            await tx.bulkRequests.updateIfStatus({ ...current, processed: current.processed + 1 }, current.status);
          }),
        ),
      );
      expect((await storage.bulkRequests.get(ACCOUNT_A, request.id))!.processed).toBe(8);
    });
  }

  if (options.isolatesUncommittedWrites) {
    test('transaction: writes are invisible outside until the commit', async (storage, build) => {
      const patient = build.patient(ACCOUNT_A, { matchKeys: ['iso'] });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let written!: () => void;
      const insideWrote = new Promise<void>((resolve) => {
        written = resolve;
      });
      const running = storage.transaction(async (tx) => {
        await tx.patients.insert(patient);
        written();
        await gate;
      });
      await insideWrote;
      expect(await storage.patients.get(ACCOUNT_A, patient.id)).toBeUndefined();
      expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['iso'])).toEqual([]);
      release();
      await running;
      expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual(patient);
    });
  }
}
