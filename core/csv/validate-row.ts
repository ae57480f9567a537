import type { Address } from '../domain/types.js';
import { addressRequiredMessage, COUNTRY, normaliseState, normaliseZip, STATE_INVALID, ZIP_INVALID } from './addresses.js';
import { cellAt, MAX_CELL_LENGTH, TOO_LONG } from './cells.js';
import { HIE_OPT_OUT_INVALID, parseHieOptOut } from './consent.js';
import { EMAIL_INVALID, normaliseEmail, normalisePhone, PHONE_INVALID } from './contacts.js';
import { DOB_REQUIRED, dobProblem } from './dates.js';
import { GENDER_INVALID, GENDER_REQUIRED, normaliseGender } from './gender.js';
import { FIELD_MAX_LENGTH, freeTextProblem, tooLongMessage, type LimitedField } from './limits.js';
import {
  LICENCE_NO_REQUIRED,
  LICENCE_STATE_REQUIRED,
  normaliseSsn,
  normaliseUuid,
  SSN_INVALID,
  UUID_INVALID,
} from './identifiers.js';
import { NAME_REQUIRED, nameProblem, parseNameField, type NameField } from './names.js';
import { MAX_INDEX, type HeaderLayout, type IndexedColumn, type ParsedRow, type RowProblem, type RowValidation } from './types.js';

interface AddressGroupPlan {
  index: number;
  line1: number;
  line2: number;
  city: number;
  state: number;
  zip: number;
  line1Column: string;
  line2Column: string;
  cityColumn: string;
  stateColumn: string;
  zipColumn: string;
  requiredMessage: string;
}

interface IndexedCellPlan {
  column: string;
  position: number;
}

/** Where every rule reads its cells, worked out once per header rather than once per row. */
interface RowPlan {
  externalId: number;
  firstName: number;
  lastName: number;
  dob: number;
  gender: number;
  ssn: number;
  licenceNo: number;
  licenceState: number;
  facilityId: number;
  hieOptOut: number;
  /** Index 1 always (it is required); other indexes only when the header has one of their columns. */
  addressGroups: AddressGroupPlan[];
  phones: IndexedCellPlan[];
  emails: IndexedCellPlan[];
  cohorts: IndexedCellPlan[];
  /** Indexed columns beyond MAX_INDEX, in header order, with the problem a value in one makes. */
  beyondLimit: (IndexedCellPlan & { group: string | undefined; message: string })[];
}

const ADDRESS_FAMILIES: ReadonlySet<IndexedColumn> = new Set(['addressLine1', 'addressLine2', 'city', 'state', 'zip']);
const BEYOND_ADDRESS_LIMIT =
  `beyond the limit of ${MAX_INDEX} address groups per row (addressLine1-${MAX_INDEX} ... zip-${MAX_INDEX} is the last); ` +
  'this address would be dropped: put it in a free group or leave it out';
const BEYOND_LIMIT_NOUNS: Readonly<Record<string, string>> = { phone: 'phone', email: 'email', cohort: 'cohort' };

function beyondLimitMessage(family: IndexedColumn): string {
  if (ADDRESS_FAMILIES.has(family)) return BEYOND_ADDRESS_LIMIT;
  return (
    `beyond the limit of ${MAX_INDEX} ${BEYOND_LIMIT_NOUNS[family] ?? family} columns per row (${family}-${MAX_INDEX} is the last); ` +
    'this value would be dropped: move it to a free column or leave it out'
  );
}

const plans = new WeakMap<HeaderLayout, RowPlan>();

function planFor(layout: HeaderLayout): RowPlan {
  let plan = plans.get(layout);
  if (plan === undefined) {
    plan = makePlan(layout);
    plans.set(layout, plan);
  }
  return plan;
}

function makePlan(layout: HeaderLayout): RowPlan {
  const at = (column: string) => layout.positions.get(column) ?? -1;
  const indexed = (name: string): IndexedCellPlan[] => {
    const cells: IndexedCellPlan[] = [];
    for (let index = 1; index <= MAX_INDEX; index++) {
      const column = `${name}-${index}`;
      const position = at(column);
      if (position >= 0) cells.push({ column, position });
    }
    return cells;
  };
  const addressGroups: AddressGroupPlan[] = [];
  for (let index = 1; index <= MAX_INDEX; index++) {
    const group: AddressGroupPlan = {
      index,
      line1: at(`addressLine1-${index}`),
      line2: at(`addressLine2-${index}`),
      city: at(`city-${index}`),
      state: at(`state-${index}`),
      zip: at(`zip-${index}`),
      line1Column: `addressLine1-${index}`,
      line2Column: `addressLine2-${index}`,
      cityColumn: `city-${index}`,
      stateColumn: `state-${index}`,
      zipColumn: `zip-${index}`,
      requiredMessage: addressRequiredMessage(index),
    };
    const inHeader = group.line1 >= 0 || group.line2 >= 0 || group.city >= 0 || group.state >= 0 || group.zip >= 0;
    if (index === 1 || inHeader) addressGroups.push(group);
  }
  return {
    externalId: at('externalId'),
    firstName: at('firstName'),
    lastName: at('lastName'),
    dob: at('dob'),
    gender: at('gender'),
    ssn: at('ssn'),
    licenceNo: at('driversLicenceNo'),
    licenceState: at('driversLicenceState'),
    facilityId: at('facilityId'),
    hieOptOut: at('hieOptOut'),
    addressGroups,
    phones: indexed('phone'),
    emails: indexed('email'),
    cohorts: indexed('cohort'),
    beyondLimit: layout.beyondLimit.map(({ column, position, family, index }) => ({
      column,
      position,
      // The columns of one address group make one problem: the address, not each of its cells, is dropped.
      group: ADDRESS_FAMILIES.has(family) ? `address-${index}` : undefined,
      message: beyondLimitMessage(family),
    })),
  };
}

function nameField(value: string, column: 'firstName' | 'lastName', problems: RowProblem[]): NameField | undefined {
  if (value === '') problems.push({ column, message: NAME_REQUIRED });
  else if (value.length > FIELD_MAX_LENGTH[column]) problems.push({ column, message: tooLongMessage(column) });
  else {
    const field = parseNameField(value);
    if (field === undefined) problems.push({ column, message: NAME_REQUIRED });
    else {
      // Checked once whitespace is collapsed: a tab or line break between names is a separator, not part of one.
      const problem = nameProblem(field.text);
      if (problem !== undefined) problems.push({ column, message: problem });
      else return field;
    }
  }
  return undefined;
}

/** An optional free-text cell (`undefined` when empty); records a problem when it is too long or not one line of text. */
function optionalText(value: string, field: LimitedField, column: string, problems: RowProblem[]): string | undefined {
  if (value === '') return undefined;
  const problem = freeTextProblem(value, field);
  if (problem === undefined) return value;
  problems.push({ column, message: problem });
  return undefined;
}

/** A required free-text cell of an address; `undefined` (with a problem) when it is missing, too long or not one line of text. */
function requiredText(value: string, field: LimitedField, column: string, message: string, problems: RowProblem[]): string | undefined {
  if (value === '') {
    problems.push({ column, message });
    return undefined;
  }
  return optionalText(value, field, column, problems);
}

/** A non-empty cell normalised by `normalise`; `undefined` (with a problem) when it is too long or invalid. */
function normalised(
  value: string,
  column: string,
  normalise: (value: string) => string | undefined,
  invalid: string,
  problems: RowProblem[],
): string | undefined {
  if (value.length > MAX_CELL_LENGTH) {
    problems.push({ column, message: TOO_LONG });
    return undefined;
  }
  const result = normalise(value);
  if (result === undefined) problems.push({ column, message: invalid });
  return result;
}

function requiredNormalised(
  value: string,
  column: string,
  required: string,
  normalise: (value: string) => string | undefined,
  invalid: string,
  problems: RowProblem[],
): string | undefined {
  if (value !== '') return normalised(value, column, normalise, invalid, problems);
  problems.push({ column, message: required });
  return undefined;
}

function addressOf(cells: readonly string[], group: AddressGroupPlan, problems: RowProblem[]): Address | undefined {
  const line1 = cellAt(cells, group.line1);
  const line2 = cellAt(cells, group.line2);
  const city = cellAt(cells, group.city);
  const state = cellAt(cells, group.state);
  const zip = cellAt(cells, group.zip);
  // An index with no column filled is ignored; index 1 is always required
  if (group.index !== 1 && line1 === '' && line2 === '' && city === '' && state === '' && zip === '') return undefined;

  const before = problems.length;
  const validLine1 = requiredText(line1, 'addressLine1', group.line1Column, group.requiredMessage, problems);
  optionalText(line2, 'addressLine2', group.line2Column, problems);
  const validCity = requiredText(city, 'city', group.cityColumn, group.requiredMessage, problems);
  const validState = requiredNormalised(state, group.stateColumn, group.requiredMessage, normaliseState, STATE_INVALID, problems);
  const validZip = requiredNormalised(zip, group.zipColumn, group.requiredMessage, normaliseZip, ZIP_INVALID, problems);
  if (problems.length !== before) return undefined;
  return {
    addressLine1: validLine1!,
    addressLine2: line2 === '' ? undefined : line2,
    city: validCity!,
    state: validState!,
    zip: validZip!,
    country: COUNTRY,
  };
}

function indexedValues(
  cells: readonly string[],
  plan: readonly IndexedCellPlan[],
  normalise: (value: string) => string | undefined,
  invalid: string,
  problems: RowProblem[],
  distinct: boolean,
): string[] {
  const values: string[] = [];
  for (const { column, position } of plan) {
    const value = cellAt(cells, position);
    if (value === '') continue;
    const result = normalised(value, column, normalise, invalid, problems);
    if (result !== undefined && !(distinct && values.includes(result))) values.push(result);
  }
  return values;
}

/**
 * Validates and normalises one data row against its file's header. Never throws. A failed row lists every
 * problem of the row, field by field, in a fixed column order; messages never quote the cell (PHI).
 *
 * @param today `YYYY-MM-DD` of the clock: a date of birth after it is refused.
 */
export function validateRow(cells: readonly string[], layout: HeaderLayout, today: string): RowValidation {
  const plan = planFor(layout);
  const problems: RowProblem[] = [];

  const externalIdCell = cellAt(cells, plan.externalId);
  optionalText(externalIdCell, 'externalId', 'externalId', problems);

  const firstName = nameField(cellAt(cells, plan.firstName), 'firstName', problems);
  const lastName = nameField(cellAt(cells, plan.lastName), 'lastName', problems);

  const dob = cellAt(cells, plan.dob);
  if (dob === '') problems.push({ column: 'dob', message: DOB_REQUIRED });
  else {
    const problem = dobProblem(dob, today);
    if (problem !== undefined) problems.push({ column: 'dob', message: problem });
  }

  const genderCell = cellAt(cells, plan.gender);
  const gender = normaliseGender(genderCell);
  if (gender === undefined) problems.push({ column: 'gender', message: genderCell === '' ? GENDER_REQUIRED : GENDER_INVALID });

  const addresses: Address[] = [];
  for (const group of plan.addressGroups) {
    const address = addressOf(cells, group, problems);
    if (address !== undefined) addresses.push(address);
  }

  const phones = indexedValues(cells, plan.phones, normalisePhone, PHONE_INVALID, problems, false);
  const emails = indexedValues(cells, plan.emails, normaliseEmail, EMAIL_INVALID, problems, false);

  const ssnCell = cellAt(cells, plan.ssn);
  const ssn = ssnCell === '' ? undefined : normalised(ssnCell, 'ssn', normaliseSsn, SSN_INVALID, problems);

  const licenceNo = cellAt(cells, plan.licenceNo);
  const licenceStateCell = cellAt(cells, plan.licenceState);
  if (licenceNo !== '') optionalText(licenceNo, 'driversLicenceNo', 'driversLicenceNo', problems);
  else if (licenceStateCell !== '') problems.push({ column: 'driversLicenceNo', message: LICENCE_NO_REQUIRED });
  let licenceState: string | undefined;
  if (licenceStateCell !== '') {
    licenceState = normalised(licenceStateCell, 'driversLicenceState', normaliseState, STATE_INVALID, problems);
  } else if (licenceNo !== '') {
    problems.push({ column: 'driversLicenceState', message: LICENCE_STATE_REQUIRED });
  }

  const cohortIds = indexedValues(cells, plan.cohorts, normaliseUuid, UUID_INVALID, problems, true);

  const facilityCell = cellAt(cells, plan.facilityId);
  const facilityId =
    facilityCell === '' ? undefined : normalised(facilityCell, 'facilityId', normaliseUuid, UUID_INVALID, problems);

  const hieOptOutCell = cellAt(cells, plan.hieOptOut);
  let hieOptOut: boolean | undefined;
  if (hieOptOutCell !== '') {
    hieOptOut = parseHieOptOut(hieOptOutCell);
    if (hieOptOut === undefined) problems.push({ column: 'hieOptOut', message: HIE_OPT_OUT_INVALID });
  }

  if (plan.beyondLimit.length > 0) beyondLimitProblems(cells, plan, problems);

  if (problems.length > 0) return { ok: false, problems };
  const row: ParsedRow = {
    externalId: externalIdCell === '' ? undefined : externalIdCell,
    firstName: firstName!.text,
    lastName: lastName!.text,
    firstNames: firstName!.names,
    lastNames: lastName!.names,
    dob,
    gender: gender!,
    addresses,
    phones,
    emails,
    ssn,
    driversLicence: licenceNo === '' ? undefined : { value: licenceNo, state: licenceState! },
    cohortIds,
    facilityId,
    hieOptOut,
  };
  return { ok: true, row };
}

/** A value in a column beyond MAX_INDEX would never be read: the row fails rather than lose it unseen. */
function beyondLimitProblems(cells: readonly string[], plan: RowPlan, problems: RowProblem[]): void {
  const reported: string[] = [];
  for (const { column, position, group, message } of plan.beyondLimit) {
    if (cellAt(cells, position) === '' || (group !== undefined && reported.includes(group))) continue;
    if (group !== undefined) reported.push(group);
    problems.push({ column, message });
  }
}

/** A failed row's reason for the result CSV: every problem as `column: message`, joined with `; `. */
export function formatReason(problems: readonly RowProblem[]): string {
  let reason = '';
  for (const problem of problems) reason += (reason === '' ? '' : '; ') + `${problem.column}: ${problem.message}`;
  return reason;
}
