import { INDEXED_COLUMNS, MAX_INDEX, SINGLE_COLUMNS, type HeaderLayout, type IndexedColumn } from './types.js';

/** Columns a file must have for any row to be valid. */
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

const FAMILY_BY_LOWER: ReadonlyMap<string, IndexedColumn> = new Map(INDEXED_COLUMNS.map((column) => [column.toLowerCase(), column]));

/**
 * The family and index of a header cell naming an indexed column beyond MAX_INDEX (`' ZIP-11 '` -> zip, 11),
 * or `undefined`. Index 0 and zero-padded indexes are not indexes the importer numbers, so not beyond it.
 */
function beyondLimitColumn(headerCell: string): { family: IndexedColumn; index: number } | undefined {
  const text = stripBom(headerCell).trim().toLowerCase();
  const dash = text.lastIndexOf('-');
  const family = dash > 0 ? FAMILY_BY_LOWER.get(text.slice(0, dash)) : undefined;
  const digits = text.slice(dash + 1);
  if (family === undefined || digits === '' || digits.length > 15 || digits.charCodeAt(0) === 48) return undefined;
  for (let i = 0; i < digits.length; i++) {
    const c = digits.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  const index = Number(digits);
  return index > MAX_INDEX ? { family, index } : undefined;
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
  // Every non-blank column by the name it is known by (canonical, else its normalised text), with its positions.
  const named = new Map<string, { name: string; positions: number[] }>();
  const beyondLimit: HeaderLayout['beyondLimit'] = [];
  const ignored: string[] = [];
  for (let position = 0; position < original.length; position++) {
    const column = canonicalColumn(original[position]!);
    canonical.push(column);
    const text = original[position]!.trim();
    if (text !== '') {
      const key = column ?? `?${text.toLowerCase()}`;
      const seen = named.get(key);
      if (seen) seen.positions.push(position);
      else named.set(key, { name: column ?? text, positions: [position] });
    }
    if (column === undefined) {
      const beyond = beyondLimitColumn(text);
      if (beyond) beyondLimit.push({ column: `${beyond.family}-${beyond.index}`, position, ...beyond });
      else if (text !== '') ignored.push(text);
      continue;
    }
    if (positions.has(column)) {
      if (!duplicated.includes(column)) duplicated.push(column);
    } else {
      positions.set(column, position);
    }
  }
  const missingRequired = REQUIRED_COLUMNS.filter((column) => !positions.has(column));
  const repeated = [...named.values()].filter((column) => column.positions.length > 1);
  return { original, canonical, positions, missingRequired, duplicated, repeated, beyondLimit, ignored };
}

/** How many repeated columns, and positions of each, a reason lists before summing up the rest. */
const LISTED = 3;
const LISTED_POSITIONS = 5;
const MAX_NAME_SHOWN = 40;

function listed(items: readonly string[]): string {
  return items.length === 1 ? items[0]! : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

function repeatedColumnProblem({ name, positions }: { name: string; positions: number[] }): string {
  const shown = name.length > MAX_NAME_SHOWN ? `${name.slice(0, MAX_NAME_SHOWN)}…` : name;
  const times = positions.length === 2 ? 'twice' : `${positions.length} times`;
  const numbers = positions.slice(0, LISTED_POSITIONS).map((position) => String(position + 1));
  if (positions.length > LISTED_POSITIONS) numbers.push(`${positions.length - LISTED_POSITIONS} more`);
  return `The header names the column "${shown}" ${times} (columns ${listed(numbers)})`;
}

/**
 * Why no row of a file with this header could ever be valid, as the reason of the failed request; or
 * `undefined` when the header is usable.
 */
export function headerProblem(layout: HeaderLayout): string | undefined {
  if (layout.missingRequired.length === 0) return repeatedColumnsProblem(layout);
  const plural = layout.missingRequired.length > 1;
  return (
    `header: missing required column${plural ? 's' : ''} ${layout.missingRequired.join(', ')} ` +
    `(every file needs ${REQUIRED_COLUMNS.join(', ')})`
  );
}

/**
 * A column named twice is refused, known or not: for a known one, which cell holds the value would be a
 * guess; for any, the result CSV would have two identical headers and a reader could not tell the cells
 * apart. Blank header cells (the trailing commas of spreadsheet exports) may repeat: they name nothing.
 */
function repeatedColumnsProblem(layout: HeaderLayout): string | undefined {
  if (layout.repeated.length === 0) return undefined;
  const problems = layout.repeated.slice(0, LISTED).map(repeatedColumnProblem);
  const more = layout.repeated.length - LISTED;
  if (more > 0) problems.push(`${more} more column${more > 1 ? 's are' : ' is'} named more than once`);
  return `${problems.join('; ')}; keep one column of each name`;
}
