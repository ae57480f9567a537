import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { csvText, resultLine } from './result.js';

describe('result CSV text', () => {
  test('property: the same bytes as csv-stringify with CRLF records and line breaks quoted; csv-parse reads the cells back', () => {
    const cell = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom('', ',', '"', '""', '\r', '\n', '\r\n', ' a ', 'a,"b"\nc'));
    fc.assert(
      fc.property(fc.array(fc.array(cell, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 12 }), (lines) => {
        const text = csvText(lines);
        expect(text).toBe(stringify(lines, { record_delimiter: '\r\n', quote_record_delimiter: true }));
        // A line of one empty cell is an empty line, which readers skip; the others read back as written.
        const readable = lines.filter((line) => !(line.length === 1 && line[0] === ''));
        expect(parse(csvText(readable), { relax_column_count: true })).toEqual(readable);
      }),
      { numRuns: 150 },
    );
  });

  test('a result line pads a short row to the header, then adds metriportId, status and reason', () => {
    expect(resultLine(['a'], 3, { requestId: 'r', rowIndex: 0, status: 'succeeded', action: 'created', patientId: 'p1' })).toEqual(['a', '', '', 'p1', 'succeeded', '']);
    expect(resultLine(['a', 'b', 'c', 'd'], 3, { requestId: 'r', rowIndex: 0, status: 'failed', reason: 'dob: bad' })).toEqual(['a', 'b', 'c', 'd', '', 'failed', 'dob: bad']);
    expect(resultLine(['a'], 1, undefined)).toEqual(['a', '', 'failed', 'row was not processed']);
  });
});
