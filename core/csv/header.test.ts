import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ALL_CANONICAL_COLUMNS, headerSpelling, UNKNOWN_HEADERS } from '../../spec/arbitraries/rows.js';
import { canonicalColumn, headerProblem, layoutHeader, REQUIRED_COLUMNS } from './header.js';

describe('layoutHeader', () => {
  test('matches names case-insensitively after trimming and removing a BOM', () => {
    const layout = layoutHeader(['\uFEFFFIRSTNAME', ' lastName ', 'Dob', '\tgender', 'Zip-2', ' ZIP-2 ', 'zip', 'hieoptout']);
    expect(layout.original[0]).toBe('FIRSTNAME');
    expect(layout.original[1]).toBe(' lastName ');
    expect(layout.canonical).toEqual(['firstName', 'lastName', 'dob', 'gender', 'zip-2', 'zip-2', 'zip-1', 'hieOptOut']);
    expect(layout.positions.get('zip-2')).toBe(4);
    expect(layout.positions.get('zip-1')).toBe(6);
    expect(layout.duplicated).toEqual(['zip-2']);
    expect(layout.missingRequired).toEqual([]);
  });

  test('un-indexed address, contact and cohort columns mean index 1', () => {
    for (const name of ['addressLine1', 'addressLine2', 'city', 'state', 'zip', 'phone', 'email', 'cohort']) {
      expect(canonicalColumn(name)).toBe(`${name}-1`);
      expect(canonicalColumn(`${name}-10`)).toBe(`${name}-10`);
    }
  });

  test('index 11+, index 0, zero-padded indexes and unknown names are unknown columns, kept in place', () => {
    const layout = layoutHeader(['firstName', 'zip-11', 'phone-0', 'email-01', 'notes', '', 'lastName']);
    expect(layout.canonical).toEqual(['firstName', undefined, undefined, undefined, undefined, undefined, 'lastName']);
    expect(layout.original).toEqual(['firstName', 'zip-11', 'phone-0', 'email-01', 'notes', '', 'lastName']);
    expect(layout.positions.get('lastName')).toBe(6);
    expect(layout.positions.size).toBe(2);
  });

  test('an indexed column beyond 10 is told apart from an unknown one: its values fail their rows, the others are listed as ignored', () => {
    const layout = layoutHeader(['firstName', ' ZIP-11 ', 'phone-0', 'email-01', 'notes', '', 'addressline1-12', 'Cohort-999999999999', 'lastName']);
    expect(layout.beyondLimit).toEqual([
      { column: 'zip-11', position: 1, family: 'zip', index: 11 },
      { column: 'addressLine1-12', position: 6, family: 'addressLine1', index: 12 },
      { column: 'cohort-999999999999', position: 7, family: 'cohort', index: 999_999_999_999 },
    ]);
    expect(layout.ignored).toEqual(['phone-0', 'email-01', 'notes']);
  });

  test('a header and its un-indexed spelling of index 1 are the same column: the first wins', () => {
    const layout = layoutHeader(['city', 'City-1']);
    expect(layout.positions.get('city-1')).toBe(0);
    expect(layout.duplicated).toEqual(['city-1']);
  });

  test('reports missing required columns, in the order of REQUIRED_COLUMNS', () => {
    expect(REQUIRED_COLUMNS).toEqual(['firstName', 'lastName', 'dob', 'gender']);
    expect(layoutHeader(['gender', 'firstName', 'zip']).missingRequired).toEqual(['lastName', 'dob']);
    expect(layoutHeader([]).missingRequired).toEqual(['firstName', 'lastName', 'dob', 'gender']);
  });

  test('property: insensitive to case, padding, BOM and column order', () => {
    const canonicalSet = fc.uniqueArray(fc.constantFrom(...ALL_CANONICAL_COLUMNS), { minLength: 1, maxLength: 25 });
    fc.assert(
      fc.property(
        canonicalSet.chain((columns) =>
          fc.record({
            columns: fc.shuffledSubarray(columns, { minLength: columns.length }),
            unknown: fc.array(fc.constantFrom(...UNKNOWN_HEADERS), { maxLength: 3 }),
            bom: fc.boolean(),
          }),
        ).chain(({ columns, unknown, bom }) =>
          fc
            .shuffledSubarray([...columns, ...unknown.map((u) => `?${u}`)], { minLength: columns.length + unknown.length })
            .chain((order) =>
              fc.tuple(fc.constant(order), fc.tuple(...order.map((c) => (c.startsWith('?') ? fc.constant(c.slice(1)) : headerSpelling(c)))), fc.constant(bom)),
            ),
        ),
        ([order, spelled, bom]) => {
          const header = bom ? spelled.map((h, i) => (i === 0 ? `\uFEFF${h}` : h)) : spelled;
          const layout = layoutHeader(header);
          const expectedCanonical = order.map((c) => (c.startsWith('?') ? undefined : c));
          expect(layout.canonical).toEqual(expectedCanonical);
          for (const [position, column] of order.entries()) if (!column.startsWith('?')) expect(layout.positions.get(column)).toBe(position);
          expect(layout.positions.size).toBe(order.filter((c) => !c.startsWith('?')).length);
          expect(layout.duplicated).toEqual([]);
          expect(layout.missingRequired).toEqual(REQUIRED_COLUMNS.filter((c) => !order.includes(c)));
          expect(layout.original.length).toBe(header.length);
          expect(layout.original[0]?.startsWith('\uFEFF')).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('headerProblem', () => {
  test('is undefined for a usable header', () => {
    expect(headerProblem(layoutHeader(['firstName', 'lastName', 'dob', 'gender']))).toBeUndefined();
  });

  test('names every missing required column', () => {
    expect(headerProblem(layoutHeader(['firstName', 'lastName', 'gender']))).toBe(
      'header: missing required column dob (every file needs firstName, lastName, dob, gender)',
    );
    expect(headerProblem(layoutHeader(['name', 'birthdate']))).toBe(
      'header: missing required columns firstName, lastName, dob, gender (every file needs firstName, lastName, dob, gender)',
    );
  });

  test('refuses a known column named twice after normalisation (case, padding, BOM, un-indexed spelling), naming it and its columns', () => {
    expect(headerProblem(layoutHeader(['\uFEFFfirstName', 'lastName', 'dob', 'gender', ' FIRSTNAME ']))).toBe(
      'The header names the column "firstName" twice (columns 1 and 5); keep one column of each name',
    );
    expect(headerProblem(layoutHeader(['firstName', 'lastName', 'dob', 'gender', 'city', 'City-1', 'CITY']))).toBe(
      'The header names the column "city-1" 3 times (columns 5, 6 and 7); keep one column of each name',
    );
  });

  test('refuses an unknown column named twice too (the result CSV would have two identical headers), but blank header cells may repeat', () => {
    const base = ['firstName', 'lastName', 'dob', 'gender'];
    expect(headerProblem(layoutHeader([...base, 'Notes', ' notes']))).toBe(
      'The header names the column "Notes" twice (columns 5 and 6); keep one column of each name',
    );
    expect(headerProblem(layoutHeader([...base, '', ' ', '']))).toBeUndefined();
  });

  test('lists a few repeated columns and positions, then sums up the rest', () => {
    const header = ['firstName', 'lastName', 'dob', 'gender', ...Array.from({ length: 8 }, () => 'x'), 'a', 'a', 'b', 'b', 'c', 'c'];
    expect(headerProblem(layoutHeader(header))).toBe(
      'The header names the column "x" 8 times (columns 5, 6, 7, 8, 9 and 3 more); ' +
        'The header names the column "a" twice (columns 13 and 14); The header names the column "b" twice (columns 15 and 16); ' +
        '1 more column is named more than once; keep one column of each name',
    );
  });
});
