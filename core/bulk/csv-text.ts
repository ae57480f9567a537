// RFC 4180 text as the result CSV is written (see `csvSafeLine` for what it does to formula-looking cells): a cell holding a comma, a quote or a line break (CR or LF
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

// Every cell of the result CSV is written so that a spreadsheet opening it shows it as text and never runs
// it: a cell a spreadsheet would read as a formula (one starting with =, +, -, @, a tab or a CR) gets a
// leading apostrophe, the usual mark of "text, not formula". A cell that is apostrophes then such a
// character gets one more too, so the mark is always one apostrophe and `restored` can take it off again:
// the import validates what was uploaded, not what the result shows.

const APOSTROPHE = 39;

/** `=`, `+`, `-`, `@`, TAB, CR. */
function isFormulaStart(c: number): boolean {
  return c === 61 || c === 43 || c === 45 || c === 64 || c === 9 || c === 13;
}

/** Whether the cell is apostrophes (any number, none too) followed by a formula character. */
function needsMark(cell: string): boolean {
  let c = cell.charCodeAt(0);
  // One compare passes almost every cell: letters are above '@' (64), the highest character that matters.
  if (!(c <= 64)) return false;
  let i = 0;
  while (c === APOSTROPHE) c = cell.charCodeAt(++i);
  return isFormulaStart(c);
}

/** The cell as the result CSV shows it: with a leading apostrophe when a spreadsheet would run it. */
export function neutralised(cell: string): string {
  return needsMark(cell) ? `'${cell}` : cell;
}

/** The cell `neutralised` was given. */
export function restored(cell: string): string {
  return cell.charCodeAt(0) === APOSTROPHE && needsMark(cell) ? cell.slice(1) : cell;
}

/** One cell as the result CSV writes it: neutralised, then RFC 4180. */
export function csvSafeCell(cell: string): string {
  return csvCell(neutralised(cell));
}

/** One record as the result CSV writes it: `csvLine` of the neutralised cells. */
export function csvSafeLine(cells: readonly string[]): string {
  for (let i = 0; i < cells.length; i++) {
    const cell = cells[i]!;
    if (needsMark(cell) || needsQuotes(cell)) return cells.map(csvSafeCell).join(',');
  }
  return cells.join(',');
}

/** The cells of a line `csvSafeLine` wrote, as they were before `neutralised`. */
export function csvSafeLineCells(line: string): string[] {
  const cells = csvLineCells(line);
  // A line without an apostrophe has no mark to take off (most lines): no second pass.
  if (!line.includes("'")) return cells;
  for (let i = 0; i < cells.length; i++) cells[i] = restored(cells[i]!);
  return cells;
}

/** The text of the lines as the result CSV writes them (`csvSafeLine`), CRLF after each. */
export function csvText(lines: readonly (readonly string[])[]): string {
  let text = '';
  for (const line of lines) text += csvSafeLine(line) + '\r\n';
  return text;
}
