import type { Gender } from '../domain/types.js';
import { nameList } from './normalise.js';

/**
 * Blocking keys of a person: one per folded last name, `${dob}|${gender}|${foldedLastName}`.
 * Two people `isSamePerson` considers the same always share a key (same dob, same gender, a shared
 * folded last name), so looking candidates up by key never misses a match and never scans the account.
 */
export function matchKeysFor(d: { lastName: string; dob: string; genderAtBirth: Gender }): string[] {
  return matchKeysOfFolded(d.dob, d.genderAtBirth, nameList(d.lastName));
}

/** `matchKeysFor` from the folded last names (`nameList` of the last name field). */
export function matchKeysOfFolded(dob: string, genderAtBirth: Gender, foldedLastNames: readonly string[]): string[] {
  const prefix = `${dob}|${genderAtBirth}|`;
  return foldedLastNames.map((lastName) => prefix + lastName);
}
