import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { expect } from 'vitest';
import { isCoreError } from '../../core/errors.js';
import type { BlobPort } from '../../core/ports/blob.port.js';

type ContractTest = (name: string, fn: () => Promise<void>, timeout?: number) => void;

export interface BlobContractOptions {
  test: ContractTest;
  /** A fresh, empty, isolated blob store on every call. */
  make: () => BlobPort | Promise<BlobPort>;
  /**
   * Whether the adapter keeps memory bounded while a large stream goes in and out (a disk-backed store
   * does; a Map-backed one holds the bytes by design). When false the large round-trip is still checked.
   */
  boundedMemory: boolean;
  /** Size of the large stream; 20 MiB unless told. */
  largeBytes?: number;
  /**
   * With `boundedMemory`: the most the test process's live buffers may grow while the large stream goes in
   * and out; min(8 MiB, largeBytes / 2) unless told. An adapter that uploads in parts holds a few parts at
   * once, so it needs more than a disk-backed one; keep it well under `largeBytes`, so that holding the
   * whole stream still fails.
   */
  memoryBudgetBytes?: number;
  /** fast-check runs of the round-trip property. */
  numRuns?: number;
}

async function collect(stream: AsyncIterable<Uint8Array> | undefined): Promise<Uint8Array | undefined> {
  if (!stream) return undefined;
  const parts: Uint8Array[] = [];
  for await (const part of stream) parts.push(part);
  return Uint8Array.from(Buffer.concat(parts));
}

const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes));

async function* chunks(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield new TextEncoder().encode(part);
}

async function* failingAfter(parts: string[], error: Error): AsyncGenerator<Uint8Array> {
  yield* chunks(...parts);
  throw error;
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'expected a rejection').toBeDefined();
  expect(isCoreError(error) ? error.code : error).toBe(code);
}

/** A Node-only way to force a GC from a test, so memory samples measure what is live, not garbage. */
function forceGc(): () => void {
  setFlagsFromString('--expose_gc');
  return runInNewContext('gc') as () => void;
}

/** Deterministic pseudo-random chunks (xorshift32), so the large payload is not trivially compressible. */
function* largeChunks(totalBytes: number, chunkBytes: number): Generator<Uint8Array> {
  let state = 0x9e3779b9;
  for (let offset = 0; offset < totalBytes; offset += chunkBytes) {
    const words = new Uint32Array(Math.ceil(Math.min(chunkBytes, totalBytes - offset) / 4));
    for (let i = 0; i < words.length; i++) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      words[i] = state >>> 0;
    }
    yield new Uint8Array(words.buffer, 0, Math.min(chunkBytes, totalBytes - offset));
  }
}

const validKeySegment = fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9_. -]{0,20}$/).filter((s) => !s.endsWith('.blob') && !s.endsWith('.meta.json'));
const validKey = fc.array(validKeySegment, { minLength: 1, maxLength: 4 }).map((segments) => segments.join('/'));

export function defineBlobContract(options: BlobContractOptions): void {
  const { test, make } = options;
  const largeBytes = options.largeBytes ?? 20 * 1024 * 1024;
  const memoryBudget = options.memoryBudgetBytes ?? Math.min(8 * 1024 * 1024, largeBytes / 2);
  if (options.boundedMemory && memoryBudget >= largeBytes) throw new Error('memoryBudgetBytes must be below largeBytes, or holding the whole stream would pass');

  test('put then get, head and stream return the bytes and their size', async () => {
    const blob = await make();
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    expect(await blob.put('acct/docs/one', bytes, { contentType: 'application/octet-stream' })).toEqual({ size: 5 });
    expect(await blob.get('acct/docs/one')).toEqual(bytes);
    expect(await collect(await blob.stream('acct/docs/one'))).toEqual(bytes);
    expect(await blob.head('acct/docs/one')).toEqual({ size: 5, contentType: 'application/octet-stream' });
  });

  test('a string is stored as UTF-8 and its size counts bytes, not characters', async () => {
    const blob = await make();
    expect(await blob.put('acct/text', 'héllo ✓', { contentType: 'text/plain; charset=utf-8' })).toEqual({ size: 10 });
    expect(text(await blob.get('acct/text'))).toBe('héllo ✓');
    expect((await blob.head('acct/text'))?.size).toBe(10);
  });

  test('an async iterable is stored as the concatenation of its chunks', async () => {
    const blob = await make();
    expect(await blob.put('acct/uploads/u1', chunks('firstName,lastName\n', 'Ann,Lee\n', ''))).toEqual({ size: 27 });
    expect(text(await blob.get('acct/uploads/u1'))).toBe('firstName,lastName\nAnn,Lee\n');
  });

  test('an empty blob exists and has size 0', async () => {
    const blob = await make();
    expect(await blob.put('acct/empty', new Uint8Array())).toEqual({ size: 0 });
    expect(await blob.get('acct/empty')).toEqual(new Uint8Array());
    expect(await blob.head('acct/empty')).toEqual({ size: 0 });
    expect(await collect(await blob.stream('acct/empty'))).toEqual(new Uint8Array());
  });

  test('without a content type, head has none', async () => {
    const blob = await make();
    await blob.put('acct/plain', 'x');
    const head = await blob.head('acct/plain');
    expect(head?.size).toBe(1);
    expect(head?.contentType).toBeUndefined();
  });

  test('missing keys give undefined from get, stream and head; deleting one is not an error', async () => {
    const blob = await make();
    expect(await blob.get('acct/nothing')).toBeUndefined();
    expect(await blob.stream('acct/nothing')).toBeUndefined();
    expect(await blob.head('acct/nothing')).toBeUndefined();
    await expect(blob.delete('acct/nothing')).resolves.toBeUndefined();
    await expect(blob.delete('no/such/folder/at/all')).resolves.toBeUndefined();
  });

  test('put replaces the bytes and the content type', async () => {
    const blob = await make();
    await blob.put('acct/result', 'old content that is longer', { contentType: 'text/csv' });
    await blob.put('acct/result', 'new');
    expect(text(await blob.get('acct/result'))).toBe('new');
    expect(await blob.head('acct/result')).toEqual({ size: 3 });
    await blob.put('acct/result', 'newer', { contentType: 'application/json' });
    expect(await blob.head('acct/result')).toEqual({ size: 5, contentType: 'application/json' });
  });

  test('delete removes the key and leaves other keys alone', async () => {
    const blob = await make();
    await blob.put('acct/a', 'a');
    await blob.put('acct/b', 'b');
    await blob.delete('acct/a');
    expect(await blob.get('acct/a')).toBeUndefined();
    expect(await blob.head('acct/a')).toBeUndefined();
    expect(text(await blob.get('acct/b'))).toBe('b');
    await blob.put('acct/a', 'again');
    expect(text(await blob.get('acct/a'))).toBe('again');
  });

  test('keys with slashes are independent, including a key that is a prefix of another', async () => {
    const blob = await make();
    await blob.put('a', 'top');
    await blob.put('a/b', 'nested');
    await blob.put('a/b/c', 'deeper');
    await blob.put('acct-1/uploads/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.csv', 'csv');
    await blob.put('acct-1/documents/file name é.xml', 'xml');
    expect(text(await blob.get('a'))).toBe('top');
    expect(text(await blob.get('a/b'))).toBe('nested');
    expect(text(await blob.get('a/b/c'))).toBe('deeper');
    expect(text(await blob.get('acct-1/uploads/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.csv'))).toBe('csv');
    expect(text(await blob.get('acct-1/documents/file name é.xml'))).toBe('xml');
    await blob.delete('a/b');
    expect(text(await blob.get('a'))).toBe('top');
    expect(text(await blob.get('a/b/c'))).toBe('deeper');
  });

  test('keys that could escape or confuse a path are refused with BAD_REQUEST', async () => {
    const blob = await make();
    const bad = ['', '../etc/passwd', 'a/../../b', 'a/./b', '/absolute', 'a//b', 'a/', 'nul\u0000byte', 'back\\slash', '.hidden', 'a/.tmp/x', 'x.blob', 'y/z.meta.json', 'line\nbreak'];
    for (const key of bad) {
      await expectCode(blob.put(key, 'x'), 'BAD_REQUEST');
      await expectCode(blob.get(key), 'BAD_REQUEST');
      await expectCode(blob.stream(key), 'BAD_REQUEST');
      await expectCode(blob.head(key), 'BAD_REQUEST');
      await expectCode(blob.delete(key), 'BAD_REQUEST');
    }
  });

  test('a stream that throws midway stores nothing and rejects with its error', async () => {
    const blob = await make();
    const boom = new Error('client went away');
    await expect(blob.put('acct/uploads/broken', failingAfter(['id,name\n', '1,Ann\n'], boom))).rejects.toBe(boom);
    expect(await blob.get('acct/uploads/broken')).toBeUndefined();
    expect(await blob.head('acct/uploads/broken')).toBeUndefined();
    expect(await blob.stream('acct/uploads/broken')).toBeUndefined();
  });

  test('a stream that throws midway while replacing keeps the previous value whole', async () => {
    const blob = await make();
    await blob.put('acct/uploads/kept', 'previous', { contentType: 'text/csv' });
    await expect(blob.put('acct/uploads/kept', failingAfter(['partial'], new Error('reset')), { contentType: 'text/plain' })).rejects.toThrow('reset');
    expect(text(await blob.get('acct/uploads/kept'))).toBe('previous');
    expect(await blob.head('acct/uploads/kept')).toEqual({ size: 8, contentType: 'text/csv' });
  });

  test('stored bytes are copies: changing the input or a returned array changes nothing stored', async () => {
    const blob = await make();
    const input = new Uint8Array([1, 2, 3]);
    await blob.put('acct/copy', input);
    input[0] = 99;
    const first = await blob.get('acct/copy');
    expect(first).toEqual(new Uint8Array([1, 2, 3]));
    first![1] = 99;
    expect(await blob.get('acct/copy')).toEqual(new Uint8Array([1, 2, 3]));
  });

  test('a stream opened before a replace reads the bytes it started with', async () => {
    const blob = await make();
    await blob.put('acct/snap', 'before');
    const stream = await blob.stream('acct/snap');
    await blob.put('acct/snap', 'after!!');
    expect(text(await collect(stream))).toBe('before');
    expect(text(await blob.get('acct/snap'))).toBe('after!!');
  });

  test('concurrent puts to one key leave exactly one of the values, whole', async () => {
    const blob = await make();
    const values = Array.from({ length: 8 }, (_, i) => String(i).repeat(10_000 + i));
    await Promise.all(values.map((value) => blob.put('acct/race', chunks(value.slice(0, 5000), value.slice(5000)))));
    const stored = text(await blob.get('acct/race'));
    expect(values).toContain(stored);
    expect((await blob.head('acct/race'))?.size).toBe(stored?.length);
  });

  test('two stores from make do not share keys', async () => {
    const first = await make();
    const second = await make();
    await first.put('acct/only-in-first', 'x');
    expect(await second.get('acct/only-in-first')).toBeUndefined();
  });

  test('property: any bytes under any valid key round-trip through get, stream and head', async () => {
    const blob = await make();
    await fc.assert(
      fc.asyncProperty(validKey, fc.uint8Array({ maxLength: 2048 }), fc.option(fc.constantFrom('text/csv', 'application/xml', 'application/pdf'), { nil: undefined }), async (key, bytes, contentType) => {
        await blob.put(key, bytes, contentType === undefined ? undefined : { contentType });
        expect(await blob.get(key)).toEqual(bytes);
        expect(await collect(await blob.stream(key))).toEqual(bytes);
        const head = await blob.head(key);
        expect(head?.size).toBe(bytes.byteLength);
        expect(head?.contentType).toBe(contentType);
      }),
      { numRuns: options.numRuns ?? 50 },
    );
  });

  test(`a ${Math.round(largeBytes / 1024 / 1024)} MiB stream round-trips${options.boundedMemory ? ' with bounded memory' : ''}`, async () => {
    const blob = await make();
    const chunkBytes = 64 * 1024;
    const gc = options.boundedMemory ? forceGc() : undefined;
    const liveBuffers = () => {
      gc?.();
      return process.memoryUsage().arrayBuffers;
    };
    const baseline = liveBuffers();
    let peak = baseline;
    const sample = (index: number) => {
      // Every 2 MiB: often enough to see a store that accumulates, rarely enough to stay fast.
      if (gc && index % 32 === 31) peak = Math.max(peak, liveBuffers());
    };

    const written = createHash('sha256');
    async function* source(): AsyncGenerator<Uint8Array> {
      let index = 0;
      for (const chunk of largeChunks(largeBytes, chunkBytes)) {
        written.update(chunk);
        yield chunk;
        sample(index++);
      }
    }
    expect(await blob.put('acct/uploads/large.csv', source(), { contentType: 'text/csv' })).toEqual({ size: largeBytes });
    expect((await blob.head('acct/uploads/large.csv'))?.size).toBe(largeBytes);

    const read = createHash('sha256');
    let readBytes = 0;
    let index = 0;
    for await (const chunk of (await blob.stream('acct/uploads/large.csv'))!) {
      read.update(chunk);
      readBytes += chunk.byteLength;
      sample(index++);
    }
    expect(readBytes).toBe(largeBytes);
    expect(read.digest('hex')).toBe(written.digest('hex'));
    if (gc) {
      // Holding the payload would show as ~largeBytes of live buffers; streaming needs a few chunks.
      expect(peak - baseline).toBeLessThan(memoryBudget);
    }
  }, 60_000);
}
