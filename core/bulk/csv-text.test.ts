import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { csvCell, csvLine, csvLineCells, csvSafeCell, csvSafeLine, csvSafeLineCells, neutralised, restored } from './csv-text.js';
import { csvText, resultLine, resultLineText } from './result.js';
import type { BulkRowOutcome } from '../domain/types.js';

// Cells as csvRecords can yield them: anything but NUL, with the characters quoting is about made likely.
const cell = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }).map((value) => value.replaceAll('\u0000', '')),
  fc.constantFrom('', ',', '"', '""', '\r', '\n', '\r\n', ' a ', 'a,"b"\nc', 'Elm St, Apt 4', 'say "hi"', '"', ',,', 'x"'),
  fc.constantFrom('=1+1', '+a', '-2', '@x', '\tx', '\rx', "'", "'=", "''-", "'a", '\t', '=', "O'Brien"),
);
const cells = fc.array(cell, { minLength: 1, maxLength: 8 });

/** What csvLine must equal: every cell quoted on its own, as csv-stringify does. */
function slowLine(line: readonly string[]): string {
  return line.map(csvCell).join(',');
}

describe('csvLine', () => {
  test('property: the text csv-stringify writes for the record (without the line end)', () => {
    fc.assert(
      fc.property(cells, (line) => {
        expect(csvLine(line)).toBe(slowLine(line));
        expect(csvLine(line) + '\r\n').toBe(stringify([line], { record_delimiter: '\r\n', quote_record_delimiter: true }));
      }),
      { numRuns: 500 },
    );
  });

  test('a comma, a quote, a CR or an LF inside a cell quotes that cell only', () => {
    expect(csvLine(['a', 'b,c', 'd'])).toBe('a,"b,c",d');
    expect(csvLine(['a', 'say "hi"'])).toBe('a,"say ""hi"""');
    expect(csvLine(['x\ry', 'z'])).toBe('"x\ry",z');
    expect(csvLine([',', ''])).toBe('",",');
    expect(csvLine(['plain', '', 'cells'])).toBe('plain,,cells');
  });
});

describe('csvLineCells', () => {
  test('property: reads back the cells of any line csvLine wrote', () => {
    fc.assert(
      fc.property(cells, (line) => {
        expect(csvLineCells(csvLine(line))).toEqual(line);
      }),
      { numRuns: 500 },
    );
  });

  test('empty cells at either end and around quoted ones', () => {
    for (const line of [[''], ['', ''], ['a,b', ''], ['', 'a,b'], ['', '"', ''], ['a"', ',']]) expect(csvLineCells(csvLine(line))).toEqual(line);
  });
});

describe('resultLineText', () => {
  const outcome = fc.option(
    fc.record({
      requestId: fc.constant('r'),
      rowIndex: fc.nat(),
      status: fc.constantFrom('succeeded' as const, 'failed' as const),
      patientId: fc.option(fc.oneof(fc.uuid(), cell), { nil: undefined }),
      reason: fc.option(cell, { nil: undefined }),
    }),
    { nil: undefined },
  );

  test('property: the text of resultLine, from the line csvLine wrote', () => {
    fc.assert(
      fc.property(cells, fc.nat({ max: 10 }), outcome, (line, width, result) => {
        const o = result as BulkRowOutcome | undefined;
        expect(resultLineText(csvSafeLine(line), line.length, width, o) + '\r\n').toBe(csvText([resultLine(line, width, o)]));
      }),
      { numRuns: 500 },
    );
  });
});

describe('csvSafeLine', () => {
  test('property: csvLine of the neutralised cells, and csvSafeLineCells gives back the cells as they were', () => {
    fc.assert(
      fc.property(cells, (line) => {
        expect(csvSafeLine(line)).toBe(line.map(csvSafeCell).join(','));
        expect(csvSafeLine(line)).toBe(csvLine(line.map(neutralised)));
        expect(csvSafeLineCells(csvSafeLine(line))).toEqual(line);
      }),
      { numRuns: 500 },
    );
  });

  test('property: a neutralised cell never starts with a formula character, and restored undoes neutralised', () => {
    fc.assert(
      fc.property(cell, (value) => {
        expect(neutralised(value)).not.toMatch(/^[=+\-@\t\r]/);
        expect(restored(neutralised(value))).toBe(value);
      }),
      { numRuns: 1000 },
    );
  });
});
