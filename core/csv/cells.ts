/**
 * A bound on a cell whose format bounds it anyway (state, zip, phone, email, ssn, ids), checked before the
 * format is, so a hostile file's megabyte cell is refused unread. Free-text fields (names, address lines,
 * city, externalId, licence number) have their own, shorter limits in limits.ts.
 */
export const MAX_CELL_LENGTH = 1000;

export const TOO_LONG = `must be at most ${MAX_CELL_LENGTH} characters`;

/**
 * The trimmed cell at `position`, `''` when the column is absent from the header (`position < 0`), the
 * row is shorter than the header, or the cell holds only whitespace.
 */
export function cellAt(cells: readonly string[], position: number): string {
  if (position < 0) return '';
  const raw = cells[position];
  if (raw === undefined || raw === '') return '';
  // most cells carry no padding: skip trim's scan and copy when both ends are visible ASCII
  const first = raw.charCodeAt(0);
  const last = raw.charCodeAt(raw.length - 1);
  if (first > 32 && first < 127 && last > 32 && last < 127) return raw;
  return raw.trim();
}
