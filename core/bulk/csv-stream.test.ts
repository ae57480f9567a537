import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { csvRecordChunks, csvRecords, RecordsWriter, storedRecordChunks } from './csv-stream.js';
import { csvSafeLineCells } from './csv-text.js';

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
  for await (const chunk of storedRecordChunks(stream)) records.push(...chunk.map(csvSafeLineCells));
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

async function parsed(stream: AsyncIterable<Uint8Array>): Promise<string[][]> {
  const records: string[][] = [];
  for await (const chunk of csvRecordChunks(stream)) records.push(...chunk);
  return records;
}

describe('csvRecordChunks', () => {
  test('property: however the bytes are cut (inside a multi-byte letter, a quoted cell, a CRLF), the records are csv-parse\'s of the whole text', async () => {
    const cell = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 8 }), fc.constantFrom('é', 'Zoë', '😀', 'a,b', 'say "hi"', 'two\nlines', 'cr\r\nlf', ' '));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(cell, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        async (rows, cuts) => {
          const text = stringify(rows, { record_delimiter: '\r\n', quote_record_delimiter: true });
          const bytes = new TextEncoder().encode(text);
          const expected = (parse(text, { relax_column_count: true, skip_empty_lines: true }) as string[][]).filter((row) => !row.every((c) => c.trim() === ''));
          expect(await parsed(cutAt(bytes, cuts.map((cut) => cut % (bytes.length + 1))))).toEqual(expected);
        },
      ),
      { numRuns: 150 },
    );
  });

  test('refuses what is not CSV text: invalid UTF-8 (also cut off at the very end), NUL, an unclosed quote', async () => {
    const encode = (text: string) => new TextEncoder().encode(text);
    const cutLetter = encode('a,b\nc,é');
    await expect(parsed(cutAt(cutLetter.slice(0, cutLetter.length - 1), [2]))).rejects.toMatchObject({ code: 'CSV_INVALID', message: expect.stringContaining('UTF-8') });
    await expect(parsed(cutAt(new Uint8Array([0x61, 0x2c, 0xff, 0x0a]), []))).rejects.toMatchObject({ code: 'CSV_INVALID', message: expect.stringContaining('UTF-8') });
    await expect(parsed(cutAt(encode('a,b\nc,\u0000d\n'), [3]))).rejects.toMatchObject({ code: 'CSV_INVALID', message: expect.stringContaining('binary') });
    await expect(parsed(cutAt(encode('a,b\nc,"never closed\n'), [5]))).rejects.toMatchObject({ code: 'CSV_INVALID', message: expect.stringContaining('never closed') });
  });
});

describe('line ends', () => {
  const rows = [
    ['firstName', 'lastName', 'notes'],
    ['Ann', 'Lee', 'two\nlines'],
    ['Bo', 'Kim', 'carriage\rreturn'],
    ['Cy', 'Roe', 'both\r\ninside'],
    ['Di', 'Fox', ''],
  ];
  const quoted = (cell: string) => (/[\r\n,"]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell);
  const fileWith = (eol: string) => rows.map((row) => row.map(quoted).join(',')).join(eol) + eol;

  test('property: the same rows written with LF, CRLF or CR alone (old spreadsheet tools for the Mac) give the same records, however the bytes are cut; a line break inside a quoted cell stays content', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('\n', '\r\n', '\r'), fc.array(fc.nat(), { maxLength: 10 }), async (eol, cuts) => {
        const bytes = new TextEncoder().encode(fileWith(eol));
        expect(await parsed(cutAt(bytes, cuts.map((cut) => cut % (bytes.length + 1))))).toEqual(rows);
      }),
      { numRuns: 200 },
    );
  });

  test('a CRLF cut between its CR and its LF still ends one record', async () => {
    const text = fileWith('\r\n');
    const bytes = new TextEncoder().encode(text);
    const cuts = [...text.matchAll(/\r\n/g)].map((match) => match.index! + 1);
    expect(await parsed(cutAt(bytes, cuts))).toEqual(rows);
  });
});
