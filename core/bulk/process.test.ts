import { describe, expect, test } from 'vitest';
import { MemoryBlob } from '../../adapters/blob/memory/memory.blob.js';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { HmacUrlSigner } from '../../adapters/crypto/hmac.url-signer.js';
import { NodeSecrets } from '../../adapters/crypto/node.secrets.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryQueue } from '../../adapters/queue/memory/memory.queue.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import { createAccount } from '../accounts.js';
import type { CoreDeps } from '../deps.js';
import type { Account, BulkRequest } from '../domain/types.js';
import type { StoragePort } from '../ports/storage.port.js';
import { failBulkRequest } from './complete.js';
import { processBulkRequest } from './process.js';
import { BULK_BATCH_SIZE, sameAsEarlierRowReason } from './row-importer.js';
import { startBulkCreate } from './start.js';
import { acceptUpload, recordsKeyOf } from './upload.js';

const HEADER = 'externalId,firstName,lastName,dob,gender,addressLine1,city,state,zip';

/** Every row its own person (distinct last names), unless `people` says otherwise for a row index. */
function csvOf(rows: number, people: Record<number, string> = {}): string {
  const lines = [HEADER];
  for (let i = 0; i < rows; i++) lines.push(people[i] ?? `e${i},Pat,Person${i},1980-01-0${1 + (i % 9)},F,1 Main St,Springfield,IL,62701`);
  return lines.join('\n') + '\n';
}

/**
 * A storage whose transactions start late, as a busy database's do: the importer's lookup for the next
 * batch runs while the previous batch is still uncommitted, so it sees the storage as it was before.
 */
function slowCommits(storage: StoragePort, delayMs: number): StoragePort {
  return {
    ...storage,
    accounts: storage.accounts,
    transaction: async (work) => {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return storage.transaction(work);
    },
    close: () => storage.close(),
  };
}

/**
 * A storage on which another writer acts right after the importer's `lookUp`-th look-up of candidates (the
 * one outside a transaction) has read, before the batch is written: what a request or another import does
 * in that window, made to happen every time instead of by chance.
 */
function writerAfterLookUp(storage: StoragePort, lookUp: number, write: (storage: StoragePort) => Promise<void>): StoragePort & { wrote: () => boolean } {
  let lookUps = 0;
  let wrote = false;
  return {
    ...storage,
    wrote: () => wrote,
    patients: {
      ...storage.patients,
      findByMatchKeys: async (accountId, keys) => {
        const found = await storage.patients.findByMatchKeys(accountId, keys);
        if (++lookUps === lookUp) {
          await write(storage);
          wrote = true;
        }
        return found;
      },
    },
    transaction: (work) => storage.transaction(work),
    close: () => storage.close(),
  };
}

/** A storage whose row outcomes fail to store from the `failAt`-th batch on, as a database gone bad would. */
function failingOutcomes(storage: StoragePort, failAt: number): StoragePort {
  let calls = 0;
  const failing = (tx: StoragePort): StoragePort => ({
    ...tx,
    bulkRows: {
      ...tx.bulkRows,
      putMany: async (outcomes) => {
        if (++calls >= failAt) throw new Error('disk full');
        return tx.bulkRows.putMany(outcomes);
      },
    },
  });
  return { ...storage, transaction: (work) => storage.transaction((tx) => work(failing(tx))), close: () => storage.close() };
}

/** A blob storage that remembers every key written to it. */
function recordingBlob(): { blob: MemoryBlob; written: Set<string> } {
  const blob = new MemoryBlob();
  const written = new Set<string>();
  const put = blob.put.bind(blob);
  blob.put = (key, data, options) => {
    written.add(key);
    return put(key, data, options);
  };
  return { blob, written };
}

async function world(storage: StoragePort = new MemoryStorage()) {
  const clock = new SteppedClock('2026-01-05T10:00:00.000Z');
  const ids = new SequentialIds();
  const unused = new Proxy({}, { get: () => () => Promise.reject(new Error('not used by the import')) });
  const deps = {
    storage,
    blob: new MemoryBlob(),
    queue: new MemoryQueue({ clock, ids, random: () => 0 }),
    urlSigner: new HmacUrlSigner('process-test-secret'),
    clock,
    ids,
    secrets: new NodeSecrets(),
    webhookSender: unused,
    hie: unused,
    pharmacy: unused,
    lab: unused,
    ccda: unused,
    search: unused,
    renderer: unused,
    config: { publicUrl: 'http://carebridge.test', webhookAllowPrivate: true },
  } as unknown as CoreDeps;
  const { account } = await createAccount(deps, { name: 'Process Clinic' });
  const now = clock.now().toISOString();
  const facilityId = ids.next();
  await storage.facilities.insert({
    id: facilityId,
    accountId: account.id,
    oid: '2.25.1',
    name: 'Main',
    npi: '1234567893',
    active: true,
    address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' },
    createdAt: now,
    updatedAt: now,
  });
  return { deps, account, facilityId };
}

async function upload(deps: CoreDeps, account: Account, facilityId: string, csv: string, dryRun = false): Promise<BulkRequest> {
  const { request } = await startBulkCreate(deps, account, { facilityId, dryRun });
  return acceptUpload(deps, account, request.id, { contentType: 'text/csv', body: csv });
}

async function resultText(deps: CoreDeps, request: BulkRequest): Promise<string> {
  const stored = await deps.storage.bulkRequests.getById(request.id);
  expect(stored?.status).toBe('completed');
  return new TextDecoder().decode(await deps.blob.get(stored!.resultKey!));
}

describe('processBulkRequest', () => {
  test('a row meets the patients earlier batches created, even while those were still being written, and fails as their repeat', async () => {
    const B = BULK_BATCH_SIZE;
    const rows = 2 * B + 600;
    const { deps, account, facilityId } = await world(slowCommits(new MemoryStorage(), 15));
    const csv = csvOf(rows, {
      10: 'ann-1,Ann,Able,1970-02-02,F,1 Main St,Springfield,IL,11111',
      // Next batch: its candidates are looked up while batch 0 (which created Ann) is uncommitted.
      [B + 10]: 'ann-2,Ann,Able,1970-02-02,F,2 Oak St,Springfield,IL,11111',
      // The batch after: Ann again, with a second last name (other blocking keys as well).
      [2 * B + 20]: ',Ann,"Able,Baker",1970-02-02,F,3 Elm St,Springfield,IL,11111',
      // Across a batch boundary.
      [B - 1]: 'bob-1,Bob,Boundary,1960-03-03,M,1 Main St,Springfield,IL,22222',
      [B]: 'bob-2,Bob,Boundary,1960-03-03,M,1 Main St,Springfield,IL,22222',
    });
    const request = await upload(deps, account, facilityId, csv);
    await processBulkRequest(deps, request.id);

    const outcomes = await deps.storage.bulkRows.range(request.id, 0, rows + 100);
    expect(outcomes).toHaveLength(rows);
    const ann = outcomes[10]!;
    expect(ann).toMatchObject({ status: 'succeeded', action: 'created' });
    for (const repeat of [B + 10, 2 * B + 20]) {
      expect(outcomes[repeat]).toMatchObject({ status: 'failed' });
      expect(outcomes[repeat]!.reason).toMatch(/^the same person as row 11 of this file/);
    }
    expect(outcomes[B - 1]).toMatchObject({ action: 'created' });
    expect(outcomes[B]).toMatchObject({ status: 'failed', reason: expect.stringMatching(new RegExp(`^the same person as row ${B} of this file`)) });
    expect(outcomes.filter((outcome) => outcome.action === 'created')).toHaveLength(rows - 3);

    // What the first row wrote is what is stored.
    const stored = await deps.storage.patients.get(account.id, ann.patientId!);
    expect(stored).toMatchObject({ lastName: 'Able', externalId: 'ann-1' });
    expect(stored!.address.map((address) => address.addressLine1)).toEqual(['1 Main St']);
    expect((await deps.storage.patients.list(account.id)).length).toBe(rows - 3);
    expect(await deps.storage.bulkRequests.getById(request.id)).toMatchObject({
      status: 'completed',
      processed: rows,
      succeeded: rows - 3,
      failed: 3,
      created: rows - 3,
      updated: 0,
    });
  });

  test('an import resumed after a crash still fails a repeat of a person the batches before the crash created', async () => {
    const B = BULK_BATCH_SIZE;
    const storage = new MemoryStorage();
    const { deps, account, facilityId } = await world(failingOutcomes(storage, 3));
    const csv = csvOf(3 * B + 100, {
      10: 'ann-1,Ann,Able,1970-02-02,F,1 Main St,Springfield,IL,11111',
      [3 * B + 10]: 'ann-2,Ann,Able,1970-02-02,F,2 Oak St,Springfield,IL,11111',
    });
    const request = await upload(deps, account, facilityId, csv);
    await expect(processBulkRequest(deps, request.id)).rejects.toThrow('disk full');
    expect(await storage.bulkRequests.getById(request.id)).toMatchObject({ status: 'processing', processed: 2 * B });

    // The retried job, on a storage that works again, starts after the two committed batches.
    await processBulkRequest({ ...deps, storage }, request.id);
    const outcomes = await storage.bulkRows.range(request.id, 0, 4 * B);
    expect(outcomes[3 * B + 10]).toMatchObject({ status: 'failed', reason: expect.stringMatching(/^the same person as row 11 of this file/) });
    expect(await storage.patients.get(account.id, outcomes[10]!.patientId!)).toMatchObject({ externalId: 'ann-1' });
    expect(await storage.bulkRequests.getById(request.id)).toMatchObject({ status: 'completed', created: 3 * B + 99, updated: 0, failed: 1 });
  });

  test('a person another writer creates between a batch’s look-up and its write is matched, not created again; so are the later batches’ rows of the batch matched again', async () => {
    const B = BULK_BATCH_SIZE;
    const rows = 3 * B;
    const memory = new MemoryStorage();
    const ann = 'ann-1,Ann,Able,1970-02-02,F,1 Main St,Springfield,IL,11111';
    let foreignId = '';
    // The second look-up is batch 1's, made while batch 0 is written: Ann arrives from elsewhere then.
    const storage = writerAfterLookUp(memory, 2, async (store) => {
      const [account] = await store.accounts.list();
      const facility = (await store.facilities.list(account!.id))[0]!;
      foreignId = '01900000-0000-7000-8000-0000000000aa';
      await store.patients.insert({
        id: foreignId,
        accountId: account!.id,
        facilityIds: [facility.id],
        cohortIds: [],
        firstName: 'Ann',
        lastName: 'Able',
        dob: '1970-02-02',
        genderAtBirth: 'F',
        address: [{ addressLine1: '9 Far Rd', city: 'Springfield', state: 'IL', zip: '11111', country: 'USA' }],
        contact: [],
        personalIdentifiers: [],
        hieOptOut: true,
        matchKeys: ['1970-02-02|F|able'],
        version: 1,
        createdAt: '2026-01-05T09:00:00.000Z',
        updatedAt: '2026-01-05T09:00:00.000Z',
      });
    });
    const { deps, account, facilityId } = await world(storage);
    // Ann in batch 1 (matched again at its write), then in batch 2 (matched against batch 1 as first
    // matched, so again too), and a person of batch 1 again in batch 2 (the ids batch 1 wrote are new).
    const csv = csvOf(rows, { [B + 5]: ann, [2 * B + 5]: ann.replace('ann-1', 'ann-2'), [2 * B + 6]: `again,Pat,Person${B + 7},1980-01-0${1 + ((B + 7) % 9)},F,1 Main St,Springfield,IL,62701` });
    const request = await upload(deps, account, facilityId, csv);
    await processBulkRequest(deps, request.id);
    expect(storage.wrote()).toBe(true);

    const outcomes = await deps.storage.bulkRows.range(request.id, 0, rows);
    expect(outcomes[B + 5]).toMatchObject({ status: 'succeeded', action: 'updated', patientId: foreignId });
    // Rows of a person an earlier row of the file already applied fail naming that row (matched again, they
    // find the same patient, never a new one).
    expect(outcomes[2 * B + 5]).toMatchObject({ status: 'failed', reason: sameAsEarlierRowReason(B + 5) });
    expect(outcomes[2 * B + 6]).toMatchObject({ status: 'failed', reason: sameAsEarlierRowReason(B + 7) });
    // Every patient an outcome names exists: a batch matched against what was not written would name others.
    for (const id of new Set(outcomes.flatMap((outcome) => outcome.patientId ?? []))) expect(await deps.storage.patients.get(account.id, id), id).toBeDefined();
    expect((await deps.storage.patients.list(account.id)).length).toBe(rows - 2);
    // The row's empty hieOptOut cell keeps what the other writer set; the address is the row's.
    expect(await deps.storage.patients.get(account.id, foreignId)).toMatchObject({ hieOptOut: true, externalId: 'ann-1', address: [{ addressLine1: '1 Main St' }] });
    // The result file says what was stored.
    const result = (await resultText(deps, request)).split('\r\n');
    expect(result[B + 6]).toContain(foreignId);
  });

  test('an opt-out sent between a batch’s look-up and its write is kept: the batch is matched again on the patient as it is then', async () => {
    const rows = 20;
    const memory = new MemoryStorage();
    let optedOut: string | undefined;
    const storage = writerAfterLookUp(memory, 2, async (store) => {
      const [account] = await store.accounts.list();
      const [first] = await store.patients.list(account!.id, { limit: 1 });
      const stored = await store.patients.update({ ...first!, hieOptOut: true });
      expect(stored).toMatchObject({ hieOptOut: true });
      optedOut = first!.id;
    });
    const { deps, account, facilityId } = await world(storage);
    await processBulkRequest(deps, (await upload(deps, account, facilityId, csvOf(rows))).id);
    // The same people again, with empty hieOptOut cells: the second import's look-up is the second.
    const again = await upload(deps, account, facilityId, csvOf(rows));
    await processBulkRequest(deps, again.id);
    expect(optedOut).toBeDefined();
    const outcomes = await deps.storage.bulkRows.range(again.id, 0, rows);
    expect(outcomes.every((outcome) => outcome.action === 'updated')).toBe(true);
    expect(await deps.storage.patients.get(account.id, optedOut!)).toMatchObject({ hieOptOut: true, version: 3 });
    expect((await deps.storage.patients.list(account.id)).length).toBe(rows);
  });

  test('a request that fails after some batches keeps its upload and nothing else it wrote to the blob storage', async () => {
    const { deps, account, facilityId } = await world(failingOutcomes(new MemoryStorage(), 3));
    const { blob, written } = recordingBlob();
    deps.blob = blob;
    const request = await upload(deps, account, facilityId, csvOf(4 * BULK_BATCH_SIZE));
    await expect(processBulkRequest(deps, request.id)).rejects.toThrow('disk full');
    const stuck = (await deps.storage.bulkRequests.getById(request.id))!;
    expect(stuck).toMatchObject({ status: 'processing', processed: 2 * BULK_BATCH_SIZE });
    expect(written.size).toBeGreaterThan(4);

    // What the job does on its last attempt.
    await failBulkRequest(deps, stuck, 'The import stopped on an internal error; start a new bulk request');
    expect(await deps.storage.bulkRequests.getById(request.id)).toMatchObject({ status: 'failed' });
    const left = [];
    for (const key of written) if (await blob.head(key)) left.push(key);
    expect(left).toEqual([request.uploadKey]);
  });

  test('the records the upload check stored are used, then removed; without them the CSV is parsed again, to the same result', async () => {
    const { deps, account, facilityId } = await world();
    const csv = csvOf(BULK_BATCH_SIZE + 500, { 3: 'x,Broken,Row,1980-13-40,F,1 Main St,Springfield,IL,62701', 7: '"quoted, cell",Ann,"Multi\nLine",1970-02-02,F,1 Main St,Springfield,IL,11111' });

    const withRecords = await upload(deps, account, facilityId, csv, true);
    expect(await deps.blob.head(recordsKeyOf(withRecords.uploadKey))).toBeDefined();
    await processBulkRequest(deps, withRecords.id);
    expect(await deps.blob.head(recordsKeyOf(withRecords.uploadKey))).toBeUndefined();

    const withoutRecords = await upload(deps, account, facilityId, csv, true);
    await deps.blob.delete(recordsKeyOf(withoutRecords.uploadKey));
    await processBulkRequest(deps, withoutRecords.id);

    const result = await resultText(deps, withRecords);
    expect(await resultText(deps, withoutRecords)).toBe(result);
    expect(result.split('\r\n')[4]).toContain('failed');
  });

  test('records that are no longer stored are not needed: the CSV is parsed again and gives the same result', async () => {
    const { deps, account, facilityId } = await world();
    const csv = csvOf(BULK_BATCH_SIZE + 200, { 5: '"quoted, cell",Ann,Lee,1970-02-02,F,1 Main St,Springfield,IL,11111' });
    const reference = await upload(deps, account, facilityId, csv, true);
    await processBulkRequest(deps, reference.id);

    const request = await upload(deps, account, facilityId, csv, true);
    await deps.blob.delete(recordsKeyOf(request.uploadKey));
    await processBulkRequest(deps, request.id);
    expect(await resultText(deps, request)).toBe(await resultText(deps, reference));
  });

  test('damaged stored records fail the job; the retry parses the CSV and resumes after the committed batches', async () => {
    const { deps, account, facilityId } = await world();
    const csv = csvOf(2 * BULK_BATCH_SIZE + BULK_BATCH_SIZE / 2);
    const reference = await upload(deps, account, facilityId, csv, true);
    await processBulkRequest(deps, reference.id);

    const request = await upload(deps, account, facilityId, csv, true);
    const key = recordsKeyOf(request.uploadKey);
    const bytes = (await deps.blob.get(key))!;
    // Cut in the middle of a record of the third batch: two batches commit before the damage shows.
    const text = new TextDecoder().decode(bytes);
    const cut = text.indexOf(`Person${2 * BULK_BATCH_SIZE + 100},`);
    await deps.blob.put(key, new TextEncoder().encode(text.slice(0, cut)));

    await expect(processBulkRequest(deps, request.id)).rejects.toMatchObject({ code: 'INTERNAL' });
    expect((await deps.storage.bulkRequests.getById(request.id))?.processed).toBe(2 * BULK_BATCH_SIZE);
    expect(await deps.blob.head(key)).toBeUndefined();

    await processBulkRequest(deps, request.id);
    expect(await resultText(deps, request)).toBe(await resultText(deps, reference));
  });
});
