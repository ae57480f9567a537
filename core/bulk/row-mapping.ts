import type { Contact, Patient, PersonalIdentifier } from '../domain/types.js';
import type { ParsedRow } from '../csv/types.js';
import { matchKeysFor } from '../matching/block.js';

/* What a valid CSV row makes of a patient: a new one, or the matched one updated. */

function contactsOf(row: ParsedRow): Contact[] {
  const contacts: Contact[] = [];
  const count = Math.max(row.phones.length, row.emails.length);
  for (let i = 0; i < count; i++) {
    const contact: Contact = {};
    if (row.phones[i] !== undefined) contact.phone = row.phones[i];
    if (row.emails[i] !== undefined) contact.email = row.emails[i];
    contacts.push(contact);
  }
  return contacts;
}

function identifiersOf(row: ParsedRow): PersonalIdentifier[] {
  const identifiers: PersonalIdentifier[] = [];
  if (row.ssn) identifiers.push({ type: 'ssn', value: row.ssn });
  if (row.driversLicence) identifiers.push({ type: 'driversLicense', value: row.driversLicence.value, state: row.driversLicence.state });
  return identifiers;
}

/** `matchKeys`: the row's blocking keys when the caller has them already. */
function demographicFields(row: ParsedRow, matchKeys?: string[]) {
  return {
    firstName: row.firstName,
    lastName: row.lastName,
    dob: row.dob,
    genderAtBirth: row.gender,
    address: row.addresses,
    contact: contactsOf(row),
    personalIdentifiers: identifiersOf(row),
    matchKeys: matchKeys ?? matchKeysFor({ lastName: row.lastName, dob: row.dob, genderAtBirth: row.gender }),
  };
}

export function newPatientFromRow(row: ParsedRow, at: { id: string; accountId: string; facilityId: string; now: string; matchKeys?: string[] }): Patient {
  return {
    id: at.id,
    accountId: at.accountId,
    facilityIds: [at.facilityId],
    cohortIds: [...new Set(row.cohortIds)],
    ...(row.externalId ? { externalId: row.externalId } : {}),
    ...demographicFields(row, at.matchKeys),
    // An empty hieOptOut cell opts a new patient in.
    hieOptOut: row.hieOptOut ?? false,
    version: 1,
    createdAt: at.now,
    updatedAt: at.now,
  };
}

/**
 * A matching row replaces the demographics with its own, adds its facility and cohorts, and
 * changes hieOptOut only when the cell says true or false.
 */
export function updatePatientFromRow(existing: Patient, row: ParsedRow, at: { facilityId: string; now: string; matchKeys?: string[] }): Patient {
  const externalId = row.externalId ?? existing.externalId;
  return {
    ...existing,
    ...demographicFields(row, at.matchKeys),
    ...(externalId ? { externalId } : {}),
    facilityIds: existing.facilityIds.includes(at.facilityId) ? existing.facilityIds : [...existing.facilityIds, at.facilityId],
    cohortIds: [...new Set([...existing.cohortIds, ...row.cohortIds])],
    hieOptOut: row.hieOptOut ?? existing.hieOptOut,
    updatedAt: at.now,
  };
}
