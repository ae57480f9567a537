import { describe, expect, test } from 'vitest';
import { describeZodError } from '../api/problem.js';
import { addressSchema, patientCreateSchema } from '../api/schemas.js';
import { asCsvRow } from '../../spec/arbitraries/rows.js';
import { layoutHeader } from './header.js';
import { FIELD_MAX_LENGTH } from './limits.js';
import { formatReason, validateRow } from './validate-row.js';

const ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62704' };
const PATIENT = { firstName: 'Anne', lastName: 'Smith', dob: '1980-02-29', genderAtBirth: 'F', address: ADDRESS };
const CELLS = { firstName: 'Anne', lastName: 'Smith', dob: '1980-02-29', gender: 'F', 'addressLine1-1': '1 Main St', 'city-1': 'Springfield', 'state-1': 'IL', 'zip-1': '62704' };

function jsonProblem(body: unknown): string | undefined {
  const result = patientCreateSchema.safeParse(body);
  return result.success ? undefined : describeZodError(result.error);
}

function csvProblem(cells: Record<string, string>): string | undefined {
  const row = asCsvRow(cells);
  const result = validateRow(row.cells, layoutHeader(row.header), '2025-06-30');
  return result.ok ? undefined : formatReason(result.problems);
}

describe('one limit per field, for the CSV import and the JSON API', () => {
  test('a 201-character first name is refused by both, naming the same limit; 200 characters pass both', () => {
    expect(FIELD_MAX_LENGTH.firstName).toBe(200);
    expect(jsonProblem({ ...PATIENT, firstName: 'A'.repeat(201) })).toBe('firstName: must be at most 200 characters');
    expect(csvProblem({ ...CELLS, firstName: 'A'.repeat(201) })).toBe('firstName: must be at most 200 characters');
    expect(jsonProblem({ ...PATIENT, firstName: 'A'.repeat(200) })).toBeUndefined();
    expect(csvProblem({ ...CELLS, firstName: 'A'.repeat(200) })).toBeUndefined();
  });

  test('every limited field: the longest value passes both, one more character fails both with the same message', () => {
    const cases: { field: keyof typeof FIELD_MAX_LENGTH; json: (value: string) => unknown; jsonPath: string; csv: (value: string) => Record<string, string>; csvColumn: string }[] = [
      { field: 'firstName', json: (v) => ({ ...PATIENT, firstName: v }), jsonPath: 'firstName', csv: (v) => ({ ...CELLS, firstName: v }), csvColumn: 'firstName' },
      { field: 'lastName', json: (v) => ({ ...PATIENT, lastName: v }), jsonPath: 'lastName', csv: (v) => ({ ...CELLS, lastName: v }), csvColumn: 'lastName' },
      { field: 'addressLine1', json: (v) => ({ ...PATIENT, address: [{ ...ADDRESS, addressLine1: v }] }), jsonPath: 'address.0.addressLine1', csv: (v) => ({ ...CELLS, 'addressLine1-1': v }), csvColumn: 'addressLine1-1' },
      { field: 'addressLine2', json: (v) => ({ ...PATIENT, address: [{ ...ADDRESS, addressLine2: v }] }), jsonPath: 'address.0.addressLine2', csv: (v) => ({ ...CELLS, 'addressLine2-1': v }), csvColumn: 'addressLine2-1' },
      { field: 'city', json: (v) => ({ ...PATIENT, address: [{ ...ADDRESS, city: v }] }), jsonPath: 'address.0.city', csv: (v) => ({ ...CELLS, 'city-1': v }), csvColumn: 'city-1' },
      { field: 'externalId', json: (v) => ({ ...PATIENT, externalId: v }), jsonPath: 'externalId', csv: (v) => ({ ...CELLS, externalId: v }), csvColumn: 'externalId' },
      {
        field: 'driversLicenceNo',
        json: (v) => ({ ...PATIENT, personalIdentifiers: [{ type: 'driversLicense', value: v, state: 'NY' }] }),
        jsonPath: 'personalIdentifiers.0.value',
        csv: (v) => ({ ...CELLS, driversLicenceNo: v, driversLicenceState: 'NY' }),
        csvColumn: 'driversLicenceNo',
      },
    ];
    for (const { field, json, jsonPath, csv, csvColumn } of cases) {
      const max = FIELD_MAX_LENGTH[field];
      expect(jsonProblem(json('a'.repeat(max))), field).toBeUndefined();
      expect(csvProblem(csv('a'.repeat(max))), field).toBeUndefined();
      expect(jsonProblem(json('a'.repeat(max + 1)))).toBe(`${jsonPath}: must be at most ${max} characters`);
      expect(csvProblem(csv('a'.repeat(max + 1)))).toBe(`${csvColumn}: must be at most ${max} characters`);
    }
  });

  test('the name rule and the control-character rule are the JSON API\'s too', () => {
    expect(jsonProblem({ ...PATIENT, firstName: '=HYPERLINK("http://evil.example","x")' })).toBe(
      'firstName: must start with a letter, not =, +, - or @ (a spreadsheet would run the cell as a formula)',
    );
    expect(jsonProblem({ ...PATIENT, lastName: 'Smi\u202eth' })).toMatch(/^lastName: must not contain invisible text-direction marks/);
    expect(jsonProblem({ ...PATIENT, lastName: 'Smi\u0000th' })).toMatch(/^lastName: must not contain control characters/);
    expect(addressSchema.safeParse({ ...ADDRESS, city: 'Spring\u0000field' }).success).toBe(false);
    expect(jsonProblem({ ...PATIENT, externalId: 'ext\n1' })).toBe('externalId: must be one line of visible text: no line breaks, tabs or other control characters');
  });
});
