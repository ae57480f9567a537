import type { Gender, Patient } from '../domain/types.js';
import type { ParsedRow } from '../csv/types.js';
import { foldNames, nameList } from './normalise.js';

/** What two people are compared on. */
export interface Demographics {
  /** Name fields as given: several names separated by commas or spaces. */
  firstName: string;
  lastName: string;
  /** YYYY-MM-DD */
  dob: string;
  genderAtBirth: Gender;
  /** Zip codes of the person's addresses. */
  zips: readonly string[];
}

/** The demographics of a stored patient, with its id, as `decideMatch` takes them. */
export interface MatchCandidate extends Demographics {
  id: string;
}

export type MatchDecision =
  | { kind: 'created' }
  | { kind: 'updated'; patientId: string }
  /** Two or more patients match: the row fails rather than silently picking one. */
  | { kind: 'ambiguous'; count: number };

/** Demographics folded once, so comparing a row with many candidates folds the row only once. */
export interface PreparedDemographics {
  firstNames: string[];
  lastNames: string[];
  dob: string;
  genderAtBirth: Gender;
  zips: string[];
}

const ZIP_DIGITS = /\D/g;

/** `12345-6789`, ` 12345 ` and `12345` all compare as `12345`. */
function zipKey(zip: string): string {
  // A row's zips are 5 digits already (validation normalised them).
  if (zip.length === 5 && isDigits(zip)) return zip;
  return zip.replace(ZIP_DIGITS, '').slice(0, 5);
}

function isDigits(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function zipKeys(zips: readonly string[]): string[] {
  const keys: string[] = [];
  for (const zip of zips) {
    const key = zipKey(zip);
    if (key !== '' && !keys.includes(key)) keys.push(key);
  }
  return keys;
}

type Prepared = PreparedDemographics;

/** Folds demographics for `decidePrepared`. */
export function prepareDemographics(d: Demographics): PreparedDemographics {
  return prepare(d);
}

/**
 * `prepareDemographics(demographicsOfRow(row))` from the row's lists of names (the same names its fields
 * split into), the folded last names given when the caller has them (its blocking keys were made from them).
 */
export function prepareRowDemographics(row: ParsedRow, foldedLastNames: string[] = foldNames(row.lastNames)): PreparedDemographics {
  const zips: string[] = [];
  for (const address of row.addresses) zips.push(address.zip);
  return { firstNames: foldNames(row.firstNames), lastNames: foldedLastNames, dob: row.dob, genderAtBirth: row.gender, zips: zipKeys(zips) };
}

function prepare(d: Demographics): Prepared {
  const zips = zipKeys(d.zips);
  return {
    firstNames: nameList(d.firstName),
    lastNames: nameList(d.lastName),
    dob: d.dob,
    genderAtBirth: d.genderAtBirth,
    zips,
  };
}

function shareOne(a: readonly string[], b: readonly string[]): boolean {
  for (const x of a) if (b.includes(x)) return true;
  return false;
}

function samePrepared(a: Prepared, b: Prepared): boolean {
  return (
    a.dob === b.dob &&
    a.genderAtBirth === b.genderAtBirth &&
    shareOne(a.zips, b.zips) &&
    shareOne(a.lastNames, b.lastNames) &&
    shareOne(a.firstNames, b.firstNames)
  );
}

/**
 * Whether two sets of demographics are the same person: same dob, same gender at birth, first-name
 * lists sharing a name, last-name lists sharing a name and at least one shared zip. Symmetric.
 */
export function isSamePerson(a: Demographics, b: Demographics): boolean {
  return samePrepared(prepare(a), prepare(b));
}

/**
 * Create-or-update decision for one row against the candidates found by its blocking keys.
 * Candidates given twice (same id) count once.
 */
export function decideMatch(row: Demographics, candidates: readonly MatchCandidate[]): MatchDecision {
  return decidePrepared(
    prepare(row),
    candidates.map((candidate) => ({ id: candidate.id, demographics: prepare(candidate) })),
  );
}

/** `decideMatch` on demographics folded beforehand (a candidate compared with many rows is folded once). */
export function decidePrepared(row: PreparedDemographics, candidates: readonly { id: string; demographics: PreparedDemographics }[]): MatchDecision {
  const matchedIds: string[] = [];
  for (const candidate of candidates) {
    if (matchedIds.includes(candidate.id)) continue;
    if (samePrepared(row, candidate.demographics)) matchedIds.push(candidate.id);
  }
  if (matchedIds.length === 0) return { kind: 'created' };
  if (matchedIds.length === 1) return { kind: 'updated', patientId: matchedIds[0]! };
  return { kind: 'ambiguous', count: matchedIds.length };
}

export function demographicsOfPatient(p: Patient): MatchCandidate {
  return {
    id: p.id,
    firstName: p.firstName,
    lastName: p.lastName,
    dob: p.dob,
    genderAtBirth: p.genderAtBirth,
    zips: p.address.map((a) => a.zip),
  };
}

export function demographicsOfRow(row: ParsedRow): Demographics {
  return {
    firstName: row.firstName,
    lastName: row.lastName,
    dob: row.dob,
    genderAtBirth: row.gender,
    zips: row.addresses.map((a) => a.zip),
  };
}
