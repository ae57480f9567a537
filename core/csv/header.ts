import { INDEXED_COLUMNS, MAX_INDEX, SINGLE_COLUMNS, type HeaderLayout } from './types.js';

/** Columns a file must have for any row to be valid (PRODUCT: Input CSV row). */
export const REQUIRED_COLUMNS = ['firstName', 'lastName', 'dob', 'gender'] as const;

const BOM = '\uFEFF';

/** Lower-cased header text -> canonical column. Un-indexed `zip`, `city`... mean index 1. */
const CANONICAL_BY_LOWER: ReadonlyMap<string, string> = (() => {
  const map = new Map<string, string>();
  for (const column of SINGLE_COLUMNS) map.set(column.toLowerCase(), column);
  for (const column of INDEXED_COLUMNS) {
    map.set(column.toLowerCase(), `${column}-1`);
    for (let index = 1; index <= MAX_INDEX; index++) map.set(`${column.toLowerCase()}-${index}`, `${column}-${index}`);
  }
  return map;
})();

/**
 * The canonical column a header cell names (`' ZIP-2 '` -> `zip-2`, `zip` -> `zip-1`), or `undefined` for an
 * unknown column, including indexes beyond 10.
 */
export function canonicalColumn(headerCell: string): string | undefined {
  return CANONICAL_BY_LOWER.get(stripBom(headerCell).trim().toLowerCase());
}

function stripBom(cell: string): string {
  return cell.startsWith(BOM) ? cell.slice(1) : cell;
}

/** Maps a file's header row to canonical columns; never throws, whatever the cells. */
export function layoutHeader(cells: readonly string[]): HeaderLayout {
  const original = cells.map((cell, position) => (position === 0 ? stripBom(cell) : cell));
  const canonical: (string | undefined)[] = [];
  const positions = new Map<string, number>();
  const duplicated: string[] = [];
  for (let position = 0; position < original.length; position++) {
    const column = canonicalColumn(original[position]!);
    canonical.push(column);
    if (column === undefined) continue;
    if (positions.has(column)) {
      if (!duplicated.includes(column)) duplicated.push(column);
    } else {
      positions.set(column, position);
    }
  }
  const missingRequired = REQUIRED_COLUMNS.filter((column) => !positions.has(column));
  return { original, canonical, positions, missingRequired, duplicated };
}

/**
 * Why no row of a file with this header could ever be valid, as the reason of the failed request; or
 * `undefined` when the header is usable.
 */
export function headerProblem(layout: HeaderLayout): string | undefined {
  if (layout.missingRequired.length === 0) return undefined;
  const plural = layout.missingRequired.length > 1;
  return (
    `header: missing required column${plural ? 's' : ''} ${layout.missingRequired.join(', ')} ` +
    `(every file needs ${REQUIRED_COLUMNS.join(', ')})`
  );
}
