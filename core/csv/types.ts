import type { Address, Gender } from '../domain/types.js';

/** The canonical input columns. Indexed ones carry `-N`, N in 1..10. */
export const SINGLE_COLUMNS = [
  'externalId',
  'firstName',
  'lastName',
  'dob',
  'gender',
  'ssn',
  'driversLicenceNo',
  'driversLicenceState',
  'facilityId',
  'hieOptOut',
] as const;

export const INDEXED_COLUMNS = ['addressLine1', 'addressLine2', 'city', 'state', 'zip', 'phone', 'email', 'cohort'] as const;

export const MAX_INDEX = 10;

export type SingleColumn = (typeof SINGLE_COLUMNS)[number];
export type IndexedColumn = (typeof INDEXED_COLUMNS)[number];

/** Where each canonical column sits in the file's header. */
export interface HeaderLayout {
  /** Header cells exactly as written in the file (BOM removed from the first), in file order. */
  original: string[];
  /** Canonical name per position (`zip-2`, `firstName`...), or `undefined` for an unknown column (kept, ignored). */
  canonical: (string | undefined)[];
  /** Canonical name -> position of its column in the file. */
  positions: Map<string, number>;
  /** Required columns absent from the header (firstName, lastName, dob, gender). */
  missingRequired: string[];
  /** Canonical columns given more than once (the first wins; reported so a person can fix the file). */
  duplicated: string[];
  /**
   * Non-blank columns named more than once, known or not, in order of first appearance: the name (canonical
   * for a known column, else as written, trimmed) and its 0-based positions. A file with any is refused.
   */
  repeated: { name: string; positions: number[] }[];
  /**
   * Indexed columns numbered beyond MAX_INDEX (`zip-11`, `phone-12`): not read, so a value in one fails its
   * row rather than being dropped unseen. `column` is canonical in spelling (`addressLine1-11`).
   */
  beyondLimit: { column: string; position: number; family: IndexedColumn; index: number }[];
  /** Non-blank header cells (trimmed) of the other columns the importer does not know: kept in the result, ignored. */
  ignored: string[];
}

/** One valid row, normalised: what the matching and the patient record are built from. */
export interface ParsedRow {
  externalId?: string;
  /** As written after trimming and collapsing whitespace, e.g. `Anne Marie`. */
  firstName: string;
  lastName: string;
  /** The names of the field as a list: `A,B` and `A B` both give [A, B]. */
  firstNames: string[];
  lastNames: string[];
  dob: string;
  gender: Gender;
  /** Complete address groups in index order; the first is index 1. */
  addresses: Address[];
  phones: string[];
  emails: string[];
  ssn?: string;
  driversLicence?: { value: string; state: string };
  cohortIds: string[];
  facilityId?: string;
  /** `undefined` when the cell was empty: an existing patient keeps its status. */
  hieOptOut?: boolean;
}

export type RowValidation = { ok: true; row: ParsedRow } | { ok: false; problems: RowProblem[] };

/** One problem of one field, for a person fixing a spreadsheet. */
export interface RowProblem {
  /** Canonical column name, e.g. `zip-2`. */
  column: string;
  /** What is wrong and what is expected, e.g. `must be 5 digits`. */
  message: string;
}
