import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ARBITRARY_TODAY, asCsvRow, brokenRow, validCsvFile, validCsvRow, validRow } from '../../spec/arbitraries/rows.js';
import { layoutHeader } from './header.js';
import { formatReason, validateRow } from './validate-row.js';

describe('row properties', () => {
  test('any generated valid row is ok and parses to its model', () => {
    fc.assert(
      fc.property(validRow(), ({ cells, expected }) => {
        const row = asCsvRow(cells);
        const result = validateRow(row.cells, layoutHeader(row.header), ARBITRARY_TODAY);
        if (!result.ok) throw new Error(formatReason(result.problems));
        expect(result.row).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  test('a valid row parses the same whatever the header spelling, column order, BOM, extra columns or short rows', () => {
    fc.assert(
      fc.property(validCsvRow(), ({ header, cells, expected }) => {
        const result = validateRow(cells, layoutHeader(header), ARBITRARY_TODAY);
        if (!result.ok) throw new Error(formatReason(result.problems));
        expect(result.row).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  test('every row of a generated file validates under the one header', () => {
    fc.assert(
      fc.property(validCsvFile({ maxRows: 8 }), ({ header, rows, expected }) => {
        const layout = layoutHeader(header);
        expect(rows.map((cells) => validateRow(cells, layout, ARBITRARY_TODAY))).toEqual(expected.map((row) => ({ ok: true, row })));
      }),
      { numRuns: 50 },
    );
  });

  test('a single broken rule fails the row with problems naming exactly the broken columns, quoting no value', () => {
    fc.assert(
      fc.property(brokenRow(), ({ cells, columns, rule, value }) => {
        const row = asCsvRow(cells);
        const result = validateRow(row.cells, layoutHeader(row.header), ARBITRARY_TODAY);
        expect(result.ok, rule).toBe(false);
        if (result.ok) return;
        expect(result.problems.map((p) => p.column).sort(), rule).toEqual([...columns].sort());
        for (const problem of result.problems) expect(problem.message.length).toBeGreaterThan(0);
        if (value !== undefined && value.length >= 3) expect(formatReason(result.problems)).not.toContain(value);
      }),
      { numRuns: 500 },
    );
  });
});
