import fc from 'fast-check';
import { stringify } from 'csv-stringify/sync';
import { US_STATE_CODES } from '../../core/csv/addresses.js';
import type { ParsedRow } from '../../core/csv/types.js';
import type { Address, Gender } from '../../core/domain/types.js';
import { ARBITRARY_TODAY, baseName, dobUpTo, GENDERS, renderName } from './demographics.js';

/**
 * Generators of CSV rows for bulk patient create. A valid row is generated from its normalised model
 * (`expected`), then rendered the ways people write it (case, padding, separators, ZIP+4, phone
 * punctuation...), so the expected parse is known by construction, independently of the code under test.
 */

export { ARBITRARY_TODAY };

/** One row as cells keyed by canonical column (`firstName`, `zip-2`...). Absent key = empty cell. */
export type CellMap = Record<string, string>;

export interface GeneratedRow {
  cells: CellMap;
  /** What `validateRow` must return for it. */
  expected: ParsedRow;
}

/** One row in file form: header cells and data cells, in file order. */
export interface CsvRow {
  header: string[];
  cells: string[];
  expected: ParsedRow;
}

export interface CsvFile {
  header: string[];
  rows: string[][];
  expected: ParsedRow[];
}

const STATES = [...US_STATE_CODES];
const STREETS = ['Main St', 'Oak Avenue', "Rue de l'Église", '5th Ave', 'Elm Street, Apt 4', 'Calle Mayor', 'Old "Mill" Road'];
const LINE2 = ['Apt 2', 'Suite 100', 'Unit B', '#12', 'Floor 3, Room 7'];
const CITIES = ['Springfield', 'New York', 'San José', "Coeur d'Alene", 'St. Louis', 'Anchorage', 'Saint-Paul'];
const SPECIAL_NAMES = ["O'Brien", 'Smith-Jones', '李', 'Ωμέγα', 'Łukasz', 'Ødegaard', 'Straße', 'de', 'Nguyễn'];

const padding = fc.constantFrom('', '', '', ' ', '  ', '\t');

/** A cell rendered with random surrounding whitespace, which validation trims. */
function padded(value: string): fc.Arbitrary<string> {
  return fc.tuple(padding, padding).map(([left, right]) => left + value + right);
}

/** `value` in random per-letter case. */
export function randomCase(value: string): fc.Arbitrary<string> {
  return fc
    .array(fc.boolean(), { minLength: value.length, maxLength: value.length })
    .map((upper) => [...value].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join(''));
}

const digits = (n: number) => fc.stringMatching(new RegExp(`^\\d{${n}}$`));

/** Distinct indexes in 1..10, ascending; `withFirst` forces index 1 in (address 1 is required). */
function indexes(min: number, max: number, withFirst = false): fc.Arbitrary<number[]> {
  return fc
    .uniqueArray(fc.integer({ min: withFirst ? 2 : 1, max: 10 }), { minLength: Math.max(0, min - (withFirst ? 1 : 0)), maxLength: max - (withFirst ? 1 : 0) })
    .map((xs) => (withFirst ? [1, ...xs] : xs).sort((a, b) => a - b));
}

/** A written name: a base name rendered with case and accents, or one of a few non-ASCII/punctuated names. */
const writtenName: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: baseName.chain(renderName) },
  { weight: 1, arbitrary: fc.constantFrom(...SPECIAL_NAMES) },
);

/** Separators as written -> as stored after collapsing whitespace. */
const NAME_SEPARATORS: readonly (readonly [string, string])[] = [
  [' ', ' '],
  ['  ', ' '],
  ['\t', ' '],
  [',', ','],
  [', ', ', '],
  [' , ', ' , '],
];

interface Part {
  cells: CellMap;
}

const nameField = (column: 'firstName' | 'lastName') =>
  fc
    .tuple(fc.array(writtenName, { minLength: 1, maxLength: 3 }), fc.array(fc.constantFrom(...NAME_SEPARATORS), { minLength: 3, maxLength: 3 }))
    .chain(([names, separators]) => {
      const written = names.reduce((text, name, i) => (i === 0 ? name : text + separators[i]![0] + name), '');
      const text = names.reduce((out, name, i) => (i === 0 ? name : out + separators[i]![1] + name), '');
      return padded(written).map((cell) => ({ cells: { [column]: cell }, text, names }));
    });

const genderPart = fc.constantFrom(...GENDERS).chain((gender: Gender) =>
  fc.constantFrom(gender, gender.toLowerCase()).chain(padded).map((cell) => ({ cells: { gender: cell }, gender })),
);

const dobPart = (today: string) => dobUpTo(today).chain((dob) => padded(dob).map((cell) => ({ cells: { dob: cell }, dob })));

const zipCell = (zip: string) => fc.oneof(fc.constant(zip), digits(4).map((plus4) => `${zip}-${plus4}`), digits(4).map((plus4) => zip + plus4));

const address = (index: number) =>
  fc
    .record({
      line1: fc.tuple(fc.integer({ min: 1, max: 99999 }), fc.constantFrom(...STREETS)).map(([n, street]) => `${n} ${street}`),
      line2: fc.option(fc.constantFrom(...LINE2), { nil: undefined }),
      city: fc.constantFrom(...CITIES),
      state: fc.constantFrom(...STATES),
      zip: digits(5),
    })
    .chain((a) =>
      fc
        .record({
          line1: padded(a.line1),
          line2: a.line2 === undefined ? fc.constant(undefined) : padded(a.line2),
          city: padded(a.city),
          state: randomCase(a.state).chain(padded),
          zip: zipCell(a.zip).chain(padded),
        })
        .map((cells) => {
          const map: CellMap = {
            [`addressLine1-${index}`]: cells.line1,
            [`city-${index}`]: cells.city,
            [`state-${index}`]: cells.state,
            [`zip-${index}`]: cells.zip,
          };
          if (cells.line2 !== undefined) map[`addressLine2-${index}`] = cells.line2;
          const expected: Address = {
            addressLine1: a.line1,
            addressLine2: a.line2,
            city: a.city,
            state: a.state,
            zip: a.zip,
            country: 'USA',
          };
          return { cells: map, address: expected };
        }),
    );

const addressesPart = indexes(1, 3, true).chain((at) =>
  fc.tuple(...at.map(address)).map((parts) => ({ cells: Object.assign({}, ...parts.map((p) => p.cells)) as CellMap, addresses: parts.map((p) => p.address) })),
);

const phoneCell = (phone: string) => {
  const [a, b, c] = [phone.slice(0, 3), phone.slice(3, 6), phone.slice(6)];
  return fc.constantFrom(phone, `(${a}) ${b}-${c}`, `${a}-${b}-${c}`, `${a}.${b}.${c}`, `+1 ${a} ${b} ${c}`, `1-${a}-${b}-${c}`, `1${phone}`, `+1${phone}`);
};

const email = fc
  .record({
    local: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,10}$/),
    labels: fc.array(fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/), { minLength: 1, maxLength: 2 }),
    tld: fc.stringMatching(/^[a-z]{2,6}$/),
  })
  .map(({ local, labels, tld }) => ({ local, domain: [...labels, tld].join('.') }));

/** Values at distinct indexes of an indexed column, in index order. */
function indexedPart<T>(
  column: string,
  value: fc.Arbitrary<T>,
  cell: (v: T) => fc.Arbitrary<string>,
  normalised: (v: T) => string,
  max: number,
): fc.Arbitrary<Part & { values: string[] }> {
  return indexes(0, max).chain((at) =>
    fc.tuple(...at.map(() => value.chain((v) => cell(v).chain(padded).map((c) => [v, c] as const)))).map((pairs) => {
      const cells: CellMap = {};
      pairs.forEach(([, c], i) => (cells[`${column}-${at[i]}`] = c));
      return { cells, values: pairs.map(([v]) => normalised(v)) };
    }),
  );
}

const phonesPart = indexedPart('phone', fc.tuple(fc.integer({ min: 2, max: 9 }), digits(9)).map(([a, rest]) => `${a}${rest}`), phoneCell, (p) => p, 3);
const emailsPart = indexedPart('email', email, (e) => randomCase(e.domain).map((d) => `${e.local}@${d}`), (e) => `${e.local}@${e.domain}`, 2);

const ssnPart = fc.option(
  digits(9).chain((ssn) =>
    fc
      .constantFrom(ssn, `${ssn.slice(0, 3)}-${ssn.slice(3, 5)}-${ssn.slice(5)}`, `${ssn.slice(0, 3)} ${ssn.slice(3, 5)} ${ssn.slice(5)}`)
      .chain(padded)
      .map((cell) => ({ cells: { ssn: cell }, ssn })),
  ),
  { nil: undefined },
);

const licencePart = fc.option(
  fc.tuple(fc.stringMatching(/^[A-Z0-9]{5,12}$/), fc.constantFrom(...STATES)).chain(([value, state]) =>
    fc
      .tuple(padded(value), randomCase(state).chain(padded))
      .map(([no, st]) => ({ cells: { driversLicenceNo: no, driversLicenceState: st }, licence: { value, state } })),
  ),
  { nil: undefined },
);

const uuidCell = (uuid: string) => fc.constantFrom(uuid, uuid.toUpperCase()).chain(padded);

const cohortsPart = indexes(0, 3).chain((at) =>
  fc.uniqueArray(fc.uuid(), { minLength: at.length, maxLength: at.length }).chain((ids) =>
    fc.tuple(...ids.map(uuidCell)).map((cells) => {
      const map: CellMap = {};
      cells.forEach((c, i) => (map[`cohort-${at[i]}`] = c));
      return { cells: map, cohortIds: ids.map((id) => id.toLowerCase()) };
    }),
  ),
);

const facilityPart = fc.option(fc.uuid().chain((id) => uuidCell(id).map((cell) => ({ cells: { facilityId: cell }, facilityId: id.toLowerCase() }))), { nil: undefined });

const hieOptOutPart = fc.option(
  fc.boolean().chain((value) => randomCase(String(value)).chain(padded).map((cell) => ({ cells: { hieOptOut: cell }, hieOptOut: value }))),
  { nil: undefined },
);

const externalIdPart = fc.option(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/).chain((id) => padded(id).map((cell) => ({ cells: { externalId: cell }, externalId: id }))),
  { nil: undefined },
);

/** A valid row as cells keyed by canonical column, with the parse `validateRow` must give it. */
export function validRow(options: { today?: string } = {}): fc.Arbitrary<GeneratedRow> {
  const today = options.today ?? ARBITRARY_TODAY;
  return fc
    .record({
      first: nameField('firstName'),
      last: nameField('lastName'),
      dob: dobPart(today),
      gender: genderPart,
      addresses: addressesPart,
      phones: phonesPart,
      emails: emailsPart,
      ssn: ssnPart,
      licence: licencePart,
      cohorts: cohortsPart,
      facility: facilityPart,
      hieOptOut: hieOptOutPart,
      externalId: externalIdPart,
    })
    .map((p) => {
      const parts: (Part | undefined)[] = Object.values(p);
      const cells: CellMap = Object.assign({}, ...parts.map((part) => part?.cells ?? {}));
      const expected: ParsedRow = {
        externalId: p.externalId?.externalId,
        firstName: p.first.text,
        lastName: p.last.text,
        firstNames: p.first.names,
        lastNames: p.last.names,
        dob: p.dob.dob,
        gender: p.gender.gender,
        addresses: p.addresses.addresses,
        phones: p.phones.values,
        emails: p.emails.values,
        ssn: p.ssn?.ssn,
        driversLicence: p.licence?.licence,
        cohortIds: p.cohorts.cohortIds,
        facilityId: p.facility?.facilityId,
        hieOptOut: p.hieOptOut?.hieOptOut,
      };
      return { cells, expected };
    });
}

const INDEXED = ['addressLine1', 'addressLine2', 'city', 'state', 'zip', 'phone', 'email', 'cohort'] as const;
const SINGLE = ['externalId', 'firstName', 'lastName', 'dob', 'gender', 'ssn', 'driversLicenceNo', 'driversLicenceState', 'facilityId', 'hieOptOut'];
export const ALL_CANONICAL_COLUMNS: readonly string[] = [...SINGLE, ...INDEXED.flatMap((c) => Array.from({ length: 10 }, (_, i) => `${c}-${i + 1}`))];

/** Header texts that name no known column, index 11+ and index 0 among them. */
export const UNKNOWN_HEADERS = ['notes', 'middleName', 'zip-11', 'phone-0', 'cohort-12', 'email-01', 'address', 'Comments', ''];
/** Known columns beyond index 10: a value in one fails its row, so valid rows leave them empty. */
const BEYOND_LIMIT_HEADERS = new Set(['zip-11', 'cohort-12']);

/** Ways a person may write the header of `canonical`: any case, padded, and un-indexed for index 1. */
export function headerSpelling(canonical: string): fc.Arbitrary<string> {
  const unindexed = canonical.endsWith('-1') && INDEXED.some((c) => `${c}-1` === canonical) ? [canonical.slice(0, -2)] : [];
  return fc.constantFrom(canonical, ...unindexed).chain(randomCase).chain(padded);
}

/** Lays cell maps out under one header: columns in `columns` order, absent cells empty. */
export function layOut(columns: readonly string[], rows: readonly CellMap[]): string[][] {
  return rows.map((row) => columns.map((column) => row[column] ?? ''));
}

/** The union of the rows' columns plus the required ones, in canonical order. */
export function columnsOf(rows: readonly CellMap[]): string[] {
  const used = new Set<string>(['firstName', 'lastName', 'dob', 'gender']);
  for (const row of rows) for (const column of Object.keys(row)) used.add(column);
  return ALL_CANONICAL_COLUMNS.filter((column) => used.has(column));
}

/** A row under a plain canonical header: what tests of one cell map need. */
export function asCsvRow(cells: CellMap): { header: string[]; cells: string[] } {
  const header = columnsOf([cells]);
  return { header, cells: layOut(header, [cells])[0]! };
}

/**
 * Rows in file form under a header as people write them: columns shuffled, each header spelled in any
 * case with padding (un-indexed for index 1), a BOM on the first cell sometimes, empty columns of other
 * indexes and unknown columns mixed in, and trailing empty cells sometimes left off.
 */
function inFileForm(rows: readonly CellMap[]): fc.Arbitrary<{ header: string[]; rows: string[][] }> {
  const used = columnsOf(rows);
  const unused = ALL_CANONICAL_COLUMNS.filter((column) => !used.includes(column));
  return fc
    .record({
      extraColumns: fc.subarray(unused, { maxLength: 4 }),
      // Each unknown name once (blank ones may repeat): a file naming a column twice is refused.
      unknown: fc.uniqueArray(fc.tuple(fc.constantFrom(...UNKNOWN_HEADERS), fc.string({ maxLength: 12 })), {
        maxLength: 3,
        selector: ([header]) => (header.trim() === '' ? Symbol() : header.trim().toLowerCase()),
      }),
      bom: fc.boolean(),
      shortRows: fc.boolean(),
    })
    .chain(({ extraColumns, unknown, bom, shortRows }) => {
      type Column = { canonical: string } | { unknownHeader: string; value: string };
      const columns: Column[] = [
        ...[...used, ...extraColumns].map((canonical) => ({ canonical })),
        ...unknown.map(([unknownHeader, value]) => ({ unknownHeader, value: BEYOND_LIMIT_HEADERS.has(unknownHeader) ? '' : value })),
      ];
      return fc.shuffledSubarray(columns, { minLength: columns.length, maxLength: columns.length }).chain((order) =>
        fc
          .tuple(...order.map((c) => ('canonical' in c ? headerSpelling(c.canonical) : fc.constant(c.unknownHeader))))
          .map((spelled) => {
            const header = bom ? spelled.map((h, i) => (i === 0 ? `\uFEFF${h}` : h)) : spelled;
            const data = rows.map((row) => {
              const cells = order.map((c) => ('canonical' in c ? (row[c.canonical] ?? '') : c.value));
              if (shortRows) while (cells.length > 0 && cells[cells.length - 1] === '') cells.pop();
              return cells;
            });
            return { header, rows: data };
          }),
      );
    });
}

/** A valid row in file form (see `inFileForm`). */
export function validCsvRow(options: { today?: string } = {}): fc.Arbitrary<CsvRow> {
  return validRow(options).chain(({ cells, expected }) =>
    inFileForm([cells]).map(({ header, rows }) => ({ header, cells: rows[0]!, expected })),
  );
}

/** A file of valid rows in file form. Rows may happen to be the same person; that is for matching to decide. */
export function validCsvFile(options: { today?: string; minRows?: number; maxRows?: number } = {}): fc.Arbitrary<CsvFile> {
  return fc
    .array(validRow(options), { minLength: options.minRows ?? 1, maxLength: options.maxRows ?? 20 })
    .chain((generated) =>
      inFileForm(generated.map((g) => g.cells)).map(({ header, rows }) => ({ header, rows, expected: generated.map((g) => g.expected) })),
    );
}

/** CSV text of a file (RFC 4180 quoting), with an optional BOM and line ending. */
export function toCsvText(file: { header: readonly string[]; rows: readonly (readonly string[])[] }, options: { bom?: boolean; eol?: '\n' | '\r\n' } = {}): string {
  // csv-stringify quotes a field holding its own record delimiter only: a lone \n in a CRLF file (or \r in
  // an LF one) would be written bare, and RFC 4180 readers rightly end the record there.
  const text = stringify([file.header as string[], ...(file.rows as string[][])], {
    record_delimiter: options.eol === '\r\n' ? 'windows' : 'unix',
    quoted_match: /[\r\n]/,
  });
  return (options.bom ? '\uFEFF' : '') + text;
}

// ---- broken rows -------------------------------------------------------------------------------------

/** A valid row with exactly one rule broken, and the columns the problems must name (no more, no fewer). */
export interface BrokenRow {
  cells: CellMap;
  /** Canonical columns the row's problems name, exactly. */
  columns: string[];
  /** The broken rule, for reading failures. */
  rule: string;
  /** The offending cell value, when there is one: it must not appear in any problem (PHI). */
  value?: string;
}

/** Blank in one of the ways a cell can be blank: absent, empty or whitespace only. */
function blanked(cells: CellMap, column: string): fc.Arbitrary<CellMap> {
  return fc.constantFrom<'absent' | '' | '   ' | '\t'>('absent', '', '   ', '\t').map((how) => {
    const copy = { ...cells };
    if (how === 'absent') delete copy[column];
    else copy[column] = how;
    return copy;
  });
}

function withCell(cells: CellMap, column: string, value: string): CellMap {
  return { ...cells, [column]: value };
}

function broken(rule: string, column: string, cells: fc.Arbitrary<CellMap>): fc.Arbitrary<BrokenRow> {
  return cells.map((c) => ({ cells: c, columns: [column], rule }));
}

function badValue(rule: string, cells: CellMap, column: string, values: readonly string[]): fc.Arbitrary<BrokenRow> {
  return fc.constantFrom(...values).chain(padded).map((value) => ({ cells: withCell(cells, column, value), columns: [column], rule, value: value.trim() }));
}

const indexesIn = (cells: CellMap, prefix: string) =>
  Object.keys(cells)
    .filter((column) => column.startsWith(`${prefix}-`))
    .map((column) => Number(column.slice(prefix.length + 1)));

function freeIndex(cells: CellMap, prefix: string): fc.Arbitrary<number> {
  const used = indexesIn(cells, prefix);
  return fc.constantFrom(...Array.from({ length: 10 }, (_, i) => i + 1).filter((i) => !used.includes(i)));
}

const REQUIRED_ADDRESS_PARTS = ['addressLine1', 'city', 'state', 'zip'] as const;

function brokenAddress(cells: CellMap, today: string): fc.Arbitrary<BrokenRow>[] {
  void today;
  const groups = [...new Set(indexesIn(cells, 'addressLine1'))];
  const existing = fc.constantFrom(...groups);
  const free = [2, 3, 4, 5, 6, 7, 8, 9, 10].filter((i) => !groups.includes(i));
  const breakers: fc.Arbitrary<BrokenRow>[] = [
    fc.tuple(existing, fc.constantFrom(...REQUIRED_ADDRESS_PARTS)).chain(([index, part]) =>
      broken(`address-${part}-missing`, `${part}-${index}`, blanked(cells, `${part}-${index}`)),
    ),
    existing.chain((index) => badValue('state-invalid', cells, `state-${index}`, ['XX', 'ZZ', 'N', 'NYC', 'New York', '1A', 'UK'])),
    existing.chain((index) => badValue('zip-invalid', cells, `zip-${index}`, ['9876', '987654', 'abcde', '98765-43', '9876-54321', '98 765', '9876543'])),
    fc.tuple(existing, fc.constantFrom('addressLine1', 'addressLine2', 'city')).map(([index, part]) => ({
      cells: withCell(cells, `${part}-${index}`, 'x'.repeat(1001)),
      columns: [`${part}-${index}`],
      rule: 'cell-too-long',
    })),
  ];
  if (free.length > 0) {
    // a partly filled group at an unused index: each required column left out is named
    breakers.push(
      fc
        .tuple(fc.constantFrom(...free), fc.subarray(['addressLine1', 'addressLine2', 'city', 'state', 'zip'] as const, { minLength: 1 }))
        .filter(([, given]) => !REQUIRED_ADDRESS_PARTS.every((p) => given.includes(p)))
        .map(([index, given]) => {
          const filled: Record<string, string> = { addressLine1: '1 Main St', addressLine2: 'Apt 1', city: 'Springfield', state: 'IL', zip: '62704' };
          const copy = { ...cells };
          for (const part of given) copy[`${part}-${index}`] = filled[part]!;
          return {
            cells: copy,
            columns: REQUIRED_ADDRESS_PARTS.filter((p) => !given.includes(p)).map((p) => `${p}-${index}`),
            rule: 'address-group-incomplete',
          };
        }),
    );
  }
  return breakers;
}

/** Days after `today`, as YYYY-MM-DD. */
function after(today: string, days: number): string {
  return new Date(Date.parse(`${today}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

/**
 * A generated valid row with exactly one rule broken. The row's other cells stay valid, so the problems
 * must name exactly `columns`.
 */
export function brokenRow(options: { today?: string } = {}): fc.Arbitrary<BrokenRow> {
  const today = options.today ?? ARBITRARY_TODAY;
  return validRow({ today }).chain(({ cells }) => {
    const hasLicence = cells.driversLicenceNo !== undefined;
    const breakers: fc.Arbitrary<BrokenRow>[] = [
      fc.constantFrom('firstName', 'lastName').chain((column) =>
        fc.oneof(broken('name-missing', column, blanked(cells, column)), badValue('name-without-letters', cells, column, [',', ' , ', '-', "'", '123', '1, 2'])),
      ),
      broken('dob-missing', 'dob', blanked(cells, 'dob')),
      badValue('dob-format', cells, 'dob', ['1980/01/02', '01-02-1980', '1980-1-2', '19800102', 'abc', '1980-01-02T00:00']),
      badValue('dob-not-a-date', cells, 'dob', ['1981-02-29', '1900-02-29', '1980-04-31', '1980-13-01', '1980-00-10', '1980-01-00', '1980-01-32']),
      badValue('dob-before-1900', cells, 'dob', ['1899-12-31', '1850-06-01', '0001-01-01']),
      fc.integer({ min: 1, max: 40_000 }).chain((days) => badValue('dob-future', cells, 'dob', [after(today, days)])),
      broken('gender-missing', 'gender', blanked(cells, 'gender')),
      badValue('gender-invalid', cells, 'gender', ['X', 'male', 'MF', '0', 'Female']),
      ...brokenAddress(cells, today),
      freeIndex(cells, 'phone').chain((i) =>
        badValue('phone-invalid', cells, `phone-${i}`, ['123456789', '22345678901', '555-123-456a', '+44 20 7946 0958', '(555) 123-45678', '+2 555 123 4567']),
      ),
      freeIndex(cells, 'email').chain((i) =>
        badValue('email-invalid', cells, `email-${i}`, ['plainaddress', 'a@b', 'a@@b.com', 'a b@c.com', '@mail.org', 'anne@example', 'anne@.com', 'anne@exa_mple.com']),
      ),
      badValue('ssn-invalid', cells, 'ssn', ['12345678', '1234567890', '12-34-567a', 'unknown']),
      freeIndex(cells, 'cohort').chain((i) =>
        badValue('cohort-invalid', cells, `cohort-${i}`, ['not-a-uuid', 'abcdef01-e89b-12d3-a456-42661417400', '123e4567e89b12d3a456426614174000', 'g23e4567-e89b-12d3-a456-426614174000']),
      ),
      badValue('facility-invalid', cells, 'facilityId', ['facility-1', 'abcd4567-e89b-12d3-a456', '{123e4567-e89b-12d3-a456-426614174000}']),
      badValue('hie-opt-out-invalid', cells, 'hieOptOut', ['yes', 'no', '1', '0', 't', 'truee', 'FALSEY']),
      fc.integer({ min: 257, max: 600 }).map((n) => ({ cells: withCell(cells, 'externalId', 'e'.repeat(n)), columns: ['externalId'], rule: 'external-id-too-long' })),
      fc.constantFrom('firstName', 'lastName').map((column) => ({ cells: withCell(cells, column, 'Ann '.repeat(300)), columns: [column], rule: 'cell-too-long' })),
      fc.constantFrom('firstName', 'lastName').chain((column) =>
        fc.oneof(
          badValue('name-formula-start', cells, column, ['=Ann', '+Ann', '-Ann', '@Ann', '=HYPERLINK("http://evil.example","x")']),
          badValue('name-bidi-control', cells, column, ['Ann\u202eA', '\u200fAnn', 'An\u2066n', 'Ann\u061c']),
          badValue('name-control', cells, column, ['An\u0001n', 'Ann\u007f', 'A\u001bnn']),
        ),
      ),
      badValue('text-control', cells, 'city-1', ['Spring\u0001field', 'Spring\nfield', 'Spring\tfield', 'Spring\u007ffield']),
    ];
    if (hasLicence) {
      breakers.push(
        broken('licence-state-missing', 'driversLicenceState', blanked(cells, 'driversLicenceState')),
        broken('licence-number-missing', 'driversLicenceNo', blanked(cells, 'driversLicenceNo')),
        badValue('licence-state-invalid', cells, 'driversLicenceState', ['XX', 'New York', 'N']),
      );
    } else {
      breakers.push(
        fc.constantFrom('IL', 'ny').map((state) => ({ cells: withCell(cells, 'driversLicenceState', state), columns: ['driversLicenceNo'], rule: 'licence-number-missing' })),
        fc.constant({ cells: withCell(cells, 'driversLicenceNo', 'D1234567'), columns: ['driversLicenceState'], rule: 'licence-state-missing' }),
      );
    }
    return fc.oneof(...breakers);
  });
}
