import type { Gender } from '../domain/types.js';
import { nameList } from './normalise.js';

/**
 * Blocking keys of a person: one per folded last name, `${dob}|${gender}|${foldedLastName}`.
 * Two people `isSamePerson` considers the same always share a key (same dob, same gender, a shared
 * folded last name), so looking candidates up by key never misses a match and never scans the account.
 */
export function matchKeysFor(d: { lastName: string; dob: string; genderAtBirth: Gender }): string[] {
  const prefix = `${d.dob}|${d.genderAtBirth}|`;
  return nameList(d.lastName).map((lastName) => prefix + lastName);
}
