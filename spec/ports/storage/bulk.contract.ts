import { expect } from 'vitest';
import type { BulkRequest } from '../../../core/domain/types.js';
import { at, ACCOUNT_A, ACCOUNT_B, row, ids, rowCounts } from './fixtures.js';
import type { StorageContractGroup } from './suite.js';

/** Bulk imports: the requests and their row outcomes. */
export function bulkContract({ test }: StorageContractGroup): void {
  // ----- bulk requests

  test('bulkRequests: insert, get (scoped), getById; a write replaces the whole record', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A);
    await storage.bulkRequests.insert(request);
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(request);
    expect(await storage.bulkRequests.get(ACCOUNT_B, request.id)).toBeUndefined();
    expect(await storage.bulkRequests.getById(request.id)).toEqual(request);
    expect(await storage.bulkRequests.getById('missing')).toBeUndefined();
    await expect(storage.bulkRequests.insert(request)).rejects.toThrow();

    const { metadata: _dropped, ...rest } = request;
    const completed: BulkRequest = {
      ...rest,
      status: 'completed',
      total: 0,
      resultKey: 'results/r.csv',
      processed: 3,
      succeeded: 2,
      failed: 1,
      created: 1,
      updated: 1,
      ignoredColumns: ['notes', 'Favourite "colour"', 'ünïcode'],
      updatedAt: at(60),
    };
    expect(await storage.bulkRequests.updateIfStatus(completed, request.status)).toEqual(completed);
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(completed);
    expect(await storage.bulkRequests.updateIfStatus({ ...completed, accountId: ACCOUNT_B }, 'completed')).toBeUndefined();
    expect(await storage.bulkRequests.updateIfStatus(build.bulkRequest(ACCOUNT_A), request.status)).toBeUndefined();
    expect(await storage.bulkRequests.getById(request.id)).toEqual(completed);
  });

  test('bulkRequests: updateIfStatus replaces only from the expected status', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A);
    await storage.bulkRequests.insert(request);
    const processing: BulkRequest = { ...request, status: 'processing', total: 10, ignoredColumns: [], updatedAt: at(1) };
    expect(await storage.bulkRequests.updateIfStatus(processing, 'waiting')).toEqual(processing);
    expect(await storage.bulkRequests.updateIfStatus({ ...processing, status: 'expired' }, 'waiting')).toBeUndefined();
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(processing);
    expect(await storage.bulkRequests.updateIfStatus({ ...processing, accountId: ACCOUNT_B, status: 'failed' }, 'processing')).toBeUndefined();
    expect(await storage.bulkRequests.updateIfStatus(build.bulkRequest(ACCOUNT_A), 'waiting')).toBeUndefined();
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(processing);
    // A pause is kept with the request, and a write without one ends it.
    const paused: BulkRequest = { ...processing, paused: { code: 'STORAGE_FULL', since: at(2) }, updatedAt: at(2) };
    expect(await storage.bulkRequests.updateIfStatus(paused, 'processing')).toEqual(paused);
    expect(await storage.bulkRequests.getById(request.id)).toEqual(paused);
    const resumed: BulkRequest = { ...processing, processed: 5, updatedAt: at(3) };
    expect(await storage.bulkRequests.updateIfStatus(resumed, 'processing')).toEqual(resumed);
    expect(await storage.bulkRequests.getById(request.id)).toEqual(resumed);
  });

  test('bulkRequests: of racing updateIfStatus calls from one status, exactly one wins', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A);
    await storage.bulkRequests.insert(request);
    const outcomes = ['processing', 'expired', 'failed', 'processing', 'expired'] as const;
    const results = await Promise.all(
      outcomes.map((status, i) => storage.bulkRequests.updateIfStatus({ ...request, status, reason: `racer ${i}` }, 'waiting')),
    );
    const winners = results.filter((result) => result !== undefined);
    expect(winners).toHaveLength(1);
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(winners[0]);
  });

  test('bulkRequests: listByStatus spans accounts, oldest first, limited; list is the account’s, newest first', async (storage, build) => {
    const a1 = build.bulkRequest(ACCOUNT_A, { status: 'processing', createdAt: at(3) });
    const b1 = build.bulkRequest(ACCOUNT_B, { status: 'processing', createdAt: at(1) });
    const a2 = build.bulkRequest(ACCOUNT_A, { status: 'waiting', createdAt: at(2) });
    const a3 = build.bulkRequest(ACCOUNT_A, { status: 'processing', createdAt: at(5) });
    for (const request of [a1, b1, a2, a3]) await storage.bulkRequests.insert(request);
    expect(ids(await storage.bulkRequests.listByStatus('processing', 10))).toEqual([b1.id, a1.id, a3.id]);
    expect(ids(await storage.bulkRequests.listByStatus('processing', 2))).toEqual([b1.id, a1.id]);
    expect(await storage.bulkRequests.listByStatus('expired', 10)).toEqual([]);
    expect(ids(await storage.bulkRequests.list(ACCOUNT_A))).toEqual([a3.id, a1.id, a2.id]);
    expect(ids(await storage.bulkRequests.list(ACCOUNT_A, 2))).toEqual([a3.id, a1.id]);
    expect(ids(await storage.bulkRequests.list(ACCOUNT_B))).toEqual([b1.id]);
  });

  // ----- bulk rows

  test('bulkRows: empty request has no rows, next index 0', async (storage) => {
    expect(await storage.bulkRows.range('r', 0, 100)).toEqual([]);
    expect(await rowCounts(storage, 'r')).toEqual({ total: 0, failed: 0 });
    expect(await storage.bulkRows.nextRowIndex('r')).toBe(0);
  });

  test('bulkRows: range is [from, to) by rowIndex; outcomes and nextRowIndex are per request', async (storage) => {
    const outcomes = [4, 0, 2, 1, 3].map((i) =>
      row('r1', i, i % 2 === 1 ? { status: 'failed', action: undefined, patientId: undefined, reason: 'zip-1: must be 5 digits; dob: required' } : {}),
    );
    await storage.bulkRows.putMany(outcomes);
    await storage.bulkRows.putMany([row('r2', 0), row('r2', 9)]);
    await storage.bulkRows.putMany([]);
    const sorted = [...outcomes].sort((a, b) => a.rowIndex - b.rowIndex);
    expect(await storage.bulkRows.range('r1', 0, 5)).toEqual(sorted);
    expect(await storage.bulkRows.range('r1', 1, 3)).toEqual(sorted.slice(1, 3));
    expect(await storage.bulkRows.range('r1', 3, 1_000_000)).toEqual(sorted.slice(3));
    expect(await storage.bulkRows.range('r1', 5, 10)).toEqual([]);
    expect(await rowCounts(storage, 'r1')).toEqual({ total: 5, failed: 2 });
    expect(await storage.bulkRows.nextRowIndex('r1')).toBe(5);
    expect(await rowCounts(storage, 'r2')).toEqual({ total: 2, failed: 0 });
    expect(await storage.bulkRows.nextRowIndex('r2')).toBe(10);
    const failed = (await storage.bulkRows.range('r1', 1, 2))[0]!;
    expect(failed).toEqual({ requestId: 'r1', rowIndex: 1, status: 'failed', reason: 'zip-1: must be 5 digits; dob: required' });
  });

  test('bulkRows: putMany replaces a stored outcome, so replaying a batch is harmless', async (storage) => {
    await storage.bulkRows.putMany([row('r', 0), row('r', 1, { status: 'failed', action: undefined, patientId: undefined, reason: 'first' })]);
    const replay = [row('r', 0, { action: 'updated', patientId: 'p-x' }), row('r', 1)];
    await storage.bulkRows.putMany(replay);
    await storage.bulkRows.putMany(replay);
    expect(await storage.bulkRows.range('r', 0, 2)).toEqual(replay);
    expect(await rowCounts(storage, 'r')).toEqual({ total: 2, failed: 0 });
    // A batch naming one row twice keeps the last, as two sequential puts would.
    await storage.bulkRows.putMany([row('r', 2, { reason: 'first' }), row('r', 2, { status: 'failed', reason: 'second' })]);
    expect((await storage.bulkRows.range('r', 2, 3))[0]).toMatchObject({ status: 'failed', reason: 'second' });
    expect(await rowCounts(storage, 'r')).toEqual({ total: 3, failed: 1 });
  });

  test('bulkRows: a large batch is stored whole', async (storage) => {
    const outcomes = Array.from({ length: 2_500 }, (_, i) => row('big', i, i % 7 === 0 ? { status: 'failed', reason: 'bad' } : {}));
    await storage.bulkRows.putMany(outcomes);
    expect(await rowCounts(storage, 'big')).toEqual({ total: 2_500, failed: outcomes.filter((o) => o.status === 'failed').length });
    expect(await storage.bulkRows.nextRowIndex('big')).toBe(2_500);
    expect(await storage.bulkRows.range('big', 1_000, 1_003)).toEqual(outcomes.slice(1_000, 1_003));
  });
}
