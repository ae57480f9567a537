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
import { CoreError } from '../errors.js';
import { storedRecordChunks } from './csv-stream.js';
import { csvSafeLineCells } from './csv-text.js';
import { startBulkCreate } from './start.js';
import { acceptUpload, recordsKeyOf } from './upload.js';

/** A memory blob store that knows which keys it holds. */
class ListedBlob extends MemoryBlob {
  readonly keys = new Set<string>();
  override async put(...args: Parameters<MemoryBlob['put']>) {
    const stored = await super.put(...args);
    this.keys.add(args[0]);
    return stored;
  }
  override async delete(key: string) {
    await super.delete(key);
    this.keys.delete(key);
  }
}

async function world() {
  const clock = new SteppedClock('2026-01-05T10:00:00.000Z');
  const ids = new SequentialIds();
  const blob = new ListedBlob();
  const deps = {
    storage: new MemoryStorage(),
    blob,
    queue: new MemoryQueue({ clock, ids, random: () => 0 }),
    urlSigner: new HmacUrlSigner('upload-test-secret'),
    clock,
    ids,
    secrets: new NodeSecrets(),
    config: { publicUrl: 'http://carebridge.test', webhookAllowPrivate: true },
  } as unknown as CoreDeps;
  const { account } = await createAccount(deps, { name: 'Upload Clinic' });
  const now = clock.now().toISOString();
  const facilityId = ids.next();
  await deps.storage.facilities.insert({
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
  const { request } = await startBulkCreate(deps, account, { facilityId, dryRun: false });
  return { deps, account, request, blob };
}

/** The bytes in chunks of the given sizes, in turn, as a slow client or a proxy might send them; `fail` throws after that many bytes. */
async function* chunked(bytes: Uint8Array, sizes: number[], fail?: { after: number; error: Error }): AsyncGenerator<Uint8Array> {
  for (let offset = 0, i = 0; offset < bytes.length; i++) {
    if (fail && offset >= fail.after) throw fail.error;
    const size = sizes[i % sizes.length]!;
    yield bytes.slice(offset, offset + size);
    offset += size;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function csv(rows: number): Uint8Array {
  const lines = ['firstName,lastName,dob,gender,addressLine1,city,state,zip,notes'];
  for (let i = 0; i < rows; i++) lines.push(`Ann,Lee${i},1980-01-01,F,1 Main St,Springfield,IL,62701,"a note, with a comma\nand a line"`);
  return new TextEncoder().encode(lines.join('\r\n') + '\r\n');
}

async function records(deps: CoreDeps, key: string): Promise<string[][]> {
  const stream = await deps.blob.stream(key);
  const all: string[][] = [];
  for await (const chunk of storedRecordChunks(stream!)) all.push(...chunk.map(csvSafeLineCells));
  return all;
}

describe('acceptUpload', () => {
  test('a body arriving in uneven chunks is stored byte for byte, checked, and its records kept for the import', async () => {
    const { deps, account, request } = await world();
    const bytes = csv(3_000);
    const accepted = await acceptUpload(deps, account, request.id, { contentType: 'text/csv', body: chunked(bytes, [1, 7, 65_536, 300, 4_096]) });
    expect(accepted).toMatchObject({ status: 'processing', total: 3_000 });
    expect(await deps.blob.get(accepted.uploadKey)).toEqual(bytes);
    const kept = await records(deps, recordsKeyOf(accepted.uploadKey));
    expect(kept).toHaveLength(3_001);
    expect(kept[2_999]).toEqual(['Ann', 'Lee2998', '1980-01-01', 'F', '1 Main St', 'Springfield', 'IL', '62701', 'a note, with a comma\nand a line']);
  });

  test('a file refused early (binary) is still stored whole, and no records are kept', async () => {
    const { deps, account, request } = await world();
    const bytes = new Uint8Array(200_000);
    bytes.set(new TextEncoder().encode('firstName,lastName,dob,gender\n'));
    for (let i = 40; i < bytes.length; i++) bytes[i] = i % 251;
    await expect(acceptUpload(deps, account, request.id, { contentType: 'text/csv', body: chunked(bytes, [1_000]) })).rejects.toMatchObject({ code: 'CSV_INVALID' });
    const failed = await deps.storage.bulkRequests.getById(request.id);
    expect(failed).toMatchObject({ status: 'failed' });
    expect(await deps.blob.get(failed!.uploadKey)).toEqual(bytes);
    expect(await deps.blob.head(recordsKeyOf(failed!.uploadKey))).toBeUndefined();
  });

  test('a body that stops with an error is refused with that error; the request keeps waiting and nothing is stored', async () => {
    const { deps, account, request, blob } = await world();
    const cutOff = new CoreError('PAYLOAD_TOO_LARGE', 'The file is larger than allowed');
    await expect(
      acceptUpload(deps, account, request.id, { contentType: 'text/csv', body: chunked(csv(3_000), [10_000], { after: 50_000, error: cutOff }) }),
    ).rejects.toBe(cutOff);
    expect(await deps.storage.bulkRequests.getById(request.id)).toMatchObject({ status: 'waiting' });
    expect([...blob.keys].filter((key) => key.includes('/upload-'))).toEqual([]);
  });
});
