// RFC 4180 text as the result CSV is written: a cell holding a comma, a quote or a line break (CR or LF
// alone too) is quoted, its quotes doubled; the others are written as they are. The same bytes as
// csv-stringify with `quote_record_delimiter: true` (a test holds them equal).

const QUOTE = 34;
const COMMA = 44;
const LF = 10;
const CR = 13;

function needsQuotes(cell: string): boolean {
  for (let i = 0; i < cell.length; i++) {
    const c = cell.charCodeAt(i);
    // One compare rejects almost every character: the four that matter are all <= ','.
    if (c <= COMMA && (c === COMMA || c === QUOTE || c === LF || c === CR)) return true;
  }
  return false;
}

/** One cell as RFC 4180 text. */
export function csvCell(cell: string): string {
  return needsQuotes(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
}

/** One record as RFC 4180 text: cells joined by commas, quoted where needed. */
export function csvLine(cells: readonly string[]): string {
  for (let i = 0; i < cells.length; i++) if (needsQuotes(cells[i]!)) return cells.map(csvCell).join(',');
  return cells.join(',');
}

/**
 * The cells of a line `csvLine` wrote (not of any CSV: it relies on a quote appearing only in a quoted
 * cell, which `csvLine` guarantees). A line without a quote is a plain split.
 */
export function csvLineCells(line: string): string[] {
  if (!line.includes('"')) return line.split(',');
  const cells: string[] = [];
  let at = 0;
  for (;;) {
    if (line.charCodeAt(at) === QUOTE) {
      let cell = '';
      let from = at + 1;
      for (;;) {
        const close = line.indexOf('"', from);
        // csvLine closes every quote it opens; a line cut short ends its last cell where the text ends.
        if (close < 0) {
          cell += line.slice(from);
          at = line.length;
          break;
        }
        cell += line.slice(from, close);
        if (line.charCodeAt(close + 1) === QUOTE) {
          cell += '"';
          from = close + 2;
        } else {
          at = close + 1;
          break;
        }
      }
      cells.push(cell);
    } else {
      const comma = line.indexOf(',', at);
      const end = comma < 0 ? line.length : comma;
      cells.push(line.slice(at, end));
      at = end;
    }
    // `at` is now on the comma after the cell, or at the end of the line.
    if (at >= line.length) return cells;
    at++;
    if (at === line.length) {
      cells.push('');
      return cells;
    }
  }
}

/** RFC 4180 text of the lines, CRLF after each. */
export function csvText(lines: readonly (readonly string[])[]): string {
  let text = '';
  for (const line of lines) text += csvLine(line) + '\r\n';
  return text;
}
