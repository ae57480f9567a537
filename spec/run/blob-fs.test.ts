import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { FsBlob } from '../../adapters/blob/fs/fs.blob.js';
import { defineBlobContract } from '../ports/blob.contract.js';

let parent: string;
let made = 0;

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'carebridge-blob-'));
});
afterAll(async () => {
  await rm(parent, { recursive: true, force: true });
});

const makeRoot = () => join(parent, `store-${++made}`);

defineBlobContract({ test, make: () => new FsBlob({ root: makeRoot() }), boundedMemory: true });

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1)).sort();
}

test('fs: a key nests by segment, with the bytes and a content-type sidecar', async () => {
  const root = makeRoot();
  const blob = new FsBlob({ root });
  await blob.put('acct/uploads/r1', 'a,b\n', { contentType: 'text/csv' });
  expect(await filesUnder(root)).toEqual(['acct/uploads/r1.blob', 'acct/uploads/r1.meta.json']);
  expect(await readFile(join(root, 'acct/uploads/r1.blob'), 'utf8')).toBe('a,b\n');
  expect(JSON.parse(await readFile(join(root, 'acct/uploads/r1.meta.json'), 'utf8'))).toEqual({ contentType: 'text/csv' });
});

test('fs: a failed stream leaves no temporary file and no file under the key', async () => {
  const root = makeRoot();
  const blob = new FsBlob({ root });
  async function* broken(): AsyncGenerator<Uint8Array> {
    yield new Uint8Array(100_000);
    throw new Error('aborted upload');
  }
  await expect(blob.put('acct/uploads/r2', broken())).rejects.toThrow('aborted upload');
  expect(await filesUnder(root)).toEqual([]);
});

test('fs: delete removes both the bytes and the sidecar', async () => {
  const root = makeRoot();
  const blob = new FsBlob({ root });
  await blob.put('acct/x', 'x', { contentType: 'text/plain' });
  await blob.delete('acct/x');
  expect(await filesUnder(root)).toEqual([]);
});

test('fs: a store opened on an existing root sees what an earlier instance wrote', async () => {
  const root = makeRoot();
  await new FsBlob({ root }).put('acct/durable', 'still here', { contentType: 'text/plain' });
  const reopened = new FsBlob({ root });
  expect(new TextDecoder().decode(await reopened.get('acct/durable'))).toBe('still here');
  expect(await reopened.head('acct/durable')).toEqual({ size: 10, contentType: 'text/plain' });
});

test('fs: a damaged content-type sidecar costs the content type, not the blob', async () => {
  const root = makeRoot();
  const blob = new FsBlob({ root });
  await blob.put('acct/y', 'bytes', { contentType: 'text/plain' });
  await writeFile(join(root, 'acct/y.meta.json'), '{not json');
  expect(await blob.head('acct/y')).toEqual({ size: 5 });
  expect(new TextDecoder().decode(await blob.get('acct/y'))).toBe('bytes');
});
