import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { csvRecords, RecordsWriter, storedRecordChunks } from './csv-stream.js';

/** The bytes cut at the given offsets (sorted, deduplicated), as a blob stream might deliver them. */
async function* cutAt(bytes: Uint8Array, offsets: number[]): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const offset of [...new Set(offsets)].sort((a, b) => a - b)) {
    if (offset <= start || offset >= bytes.length) continue;
    yield bytes.slice(start, offset);
    start = offset;
  }
  yield bytes.slice(start);
}

function write(records: readonly string[][]): Uint8Array {
  const writer = new RecordsWriter();
  const chunks: Uint8Array[] = [];
  for (const record of records) {
    const chunk = writer.add(record);
    if (chunk) chunks.push(chunk);
  }
  const tail = writer.flush();
  if (tail) chunks.push(tail);
  const bytes = new Uint8Array(chunks.reduce((size, chunk) => size + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

async function read(stream: AsyncIterable<Uint8Array>): Promise<string[][]> {
  const records: string[][] = [];
  for await (const chunk of storedRecordChunks(stream)) records.push(...chunk);
  return records;
}

// Cells as csvRecords can yield them: anything but NUL (a file holding one is refused as binary).
const cell = fc.string({ unit: 'binary', maxLength: 20 }).map((value) => value.replaceAll('\u0000', ''));

describe('stored records', () => {
  test('property: records read back exactly as written, however the bytes are cut', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(cell, { minLength: 1, maxLength: 6 }), { maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (records, cuts) => {
          const bytes = write(records);
          expect(await read(cutAt(bytes, cuts.map((cut) => cut % (bytes.length + 1))))).toEqual(records);
        },
      ),
      { numRuns: 200 },
    );
  });

  test('many records are gathered into chunks of tens of kilobytes', () => {
    const writer = new RecordsWriter();
    let chunks = 0;
    for (let i = 0; i < 5_000; i++) if (writer.add(['a cell of some length', String(i), 'another, with a comma'])) chunks++;
    expect(chunks).toBeGreaterThan(0);
    expect(chunks).toBeLessThan(10);
  });

  test('a stream that ends inside a record is damaged', async () => {
    const bytes = write([['a', 'b'], ['c', 'd']]);
    await expect(read(cutAt(bytes.slice(0, bytes.length - 3), []))).rejects.toMatchObject({ code: 'INTERNAL' });
  });

  test('what csvRecords parses from a messy file survives the round trip', async () => {
    const csv = '\uFEFFfirstName,lastName,notes\r\n"Ann, Marie","O\'Brien","line one\nline two"\r\n,,\r\nJosé,"say ""hi""",\n';
    const parsed: string[][] = [];
    for await (const record of csvRecords(cutAt(new TextEncoder().encode(csv), [9]))) parsed.push(record);
    expect(parsed).toHaveLength(3);
    expect(await read(cutAt(write(parsed), [5, 17, 40]))).toEqual(parsed);
  });
});
