import { nameList } from '../matching/normalise.js';
import type { PatientSearch } from '../ports/storage.port.js';

/**
 * Patient search, as every storage adapter applies it (so memory, SQLite and PostgreSQL find the same
 * patients). Names compare folded as the import's matching folds them (case, accents, punctuation and
 * invisible characters aside), and each word searched must begin one of the patient's names: `gar` finds
 * García, `jose gar` finds José García but not José Pérez. A hyphen also separates words here, so `lopez`
 * finds García-López, as `garcialo` does.
 */

/** The folded words of a name search; `[]` when nothing searchable is left (punctuation alone). */
export function nameSearchTerms(text: string): string[] {
  return nameList(hyphensAsSpaces(text));
}

const HYPHENS = /[-\u2010\u2011\u2012\u2013\u2014\u2212]/g;
const hyphensAsSpaces = (text: string) => text.replace(HYPHENS, ' ');

/** The folded words a name search can begin: each name, and each part of a hyphenated one. */
function searchableNames(firstName: string, lastName: string): string[] {
  const whole = `${firstName} ${lastName}`;
  return [...nameList(whole), ...nameList(hyphensAsSpaces(whole))];
}

/** The fields of a patient a search reads. */
export interface SearchedPatient {
  firstName: string;
  lastName: string;
  dob: string;
  externalId?: string | undefined;
  facilityIds: readonly string[];
}

/** Whether the patient meets every criterion of the search (an empty search is met by everyone). */
export function matchesPatientSearch(search: PatientSearch, patient: SearchedPatient): boolean {
  if (search.dob !== undefined && patient.dob !== search.dob) return false;
  if (search.externalId !== undefined && patient.externalId !== search.externalId) return false;
  if (search.facilityId !== undefined && !patient.facilityIds.includes(search.facilityId)) return false;
  const terms = search.nameTerms;
  if (terms === undefined || terms.length === 0) return true;
  const names = searchableNames(patient.firstName, patient.lastName);
  return terms.every((term) => names.some((name) => name.startsWith(term)));
}
