import type { Patient } from '../domain/types.js';
import type { FhirResource } from '../ports/ccda.port.js';

const GENDERS: Record<Patient['genderAtBirth'], string> = { M: 'male', F: 'female', O: 'other', U: 'unknown' };

export function patientReference(patientId: string): string {
  return `Patient/${patientId}`;
}

function names(value: string): string[] {
  return value
    .split(/[,\s]+/)
    .map((name) => name.trim())
    .filter(Boolean);
}

/** The patient's name as people write it: given names, then family names ("Jane Ann Doe"). */
export function patientDisplayName(patient: Pick<Patient, 'firstName' | 'lastName'>): string {
  return [...names(patient.firstName), ...names(patient.lastName)].join(' ');
}

/**
 * The FHIR Patient of our patient, made from the demographics we hold when it is read, never stored: the
 * documents' own Patient resources are folded into it (consolidate.ts), and a later demographic update
 * shows at once. Identifiers such as the SSN are left out on purpose: the bundles built from this travel
 * to webhooks and download URLs.
 */
export function patientResourceOf(patient: Patient): FhirResource {
  const resource: FhirResource = {
    resourceType: 'Patient',
    id: patient.id,
    name: [{ use: 'official', family: names(patient.lastName).join(' '), given: names(patient.firstName) }],
    gender: GENDERS[patient.genderAtBirth],
    birthDate: patient.dob,
    address: patient.address.map((address) => ({
      use: 'home',
      line: [address.addressLine1, ...(address.addressLine2 ? [address.addressLine2] : [])],
      city: address.city,
      state: address.state,
      postalCode: address.zip,
      country: address.country,
    })),
  };
  const telecom = patient.contact.flatMap((contact) => [
    ...(contact.phone ? [{ system: 'phone', value: contact.phone }] : []),
    ...(contact.email ? [{ system: 'email', value: contact.email }] : []),
  ]);
  if (telecom.length > 0) resource.telecom = telecom;
  if (patient.externalId) resource.identifier = [{ system: 'urn:carebridge:external-id', value: patient.externalId }];
  return resource;
}
