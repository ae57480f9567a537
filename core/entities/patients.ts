import type { PatientCreate } from '../api/schemas.js';
import { DOB_IN_FUTURE } from '../csv/dates.js';
import type { CoreDeps } from '../deps.js';
import type { Patient } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { resolveFacility } from './facilities.js';
import { matchKeysFor } from '../matching/block.js';
import { nowIso, todayIso } from '../time.js';

type Deps = Pick<CoreDeps, 'storage' | 'ids' | 'clock'>;

function assertDobNotFuture(deps: Pick<CoreDeps, 'clock'>, dob: string): void {
  if (dob > todayIso(deps.clock)) throw new CoreError('VALIDATION_FAILED', `dob: ${DOB_IN_FUTURE}`, { details: { field: 'dob' } });
}

function demographics(input: PatientCreate) {
  return {
    firstName: input.firstName,
    lastName: input.lastName,
    dob: input.dob,
    genderAtBirth: input.genderAtBirth,
    address: input.address,
    contact: input.contact,
    personalIdentifiers: input.personalIdentifiers,
    matchKeys: matchKeysFor(input),
  };
}

export async function createPatient(deps: Deps, accountId: string, facilityId: string | undefined, input: PatientCreate): Promise<Patient> {
  assertDobNotFuture(deps, input.dob);
  const facility = await resolveFacility(deps, accountId, facilityId);
  const now = nowIso(deps.clock);
  const patient: Patient = {
    id: deps.ids.next(),
    accountId,
    facilityIds: [facility.id],
    cohortIds: [],
    ...(input.externalId ? { externalId: input.externalId } : {}),
    ...demographics(input),
    hieOptOut: false,
    createdAt: now,
    updatedAt: now,
  };
  await deps.storage.patients.insert(patient);
  return patient;
}

export async function getPatient(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string): Promise<Patient> {
  const patient = await deps.storage.patients.get(accountId, id);
  if (!patient) throw new CoreError('PATIENT_NOT_FOUND', 'No patient with this id in your account');
  return patient;
}

export async function updatePatient(deps: Deps, accountId: string, id: string, facilityId: string | undefined, input: PatientCreate): Promise<Patient> {
  assertDobNotFuture(deps, input.dob);
  const existing = await getPatient(deps, accountId, id);
  let facilityIds = existing.facilityIds;
  if (facilityId !== undefined) {
    const facility = await resolveFacility(deps, accountId, facilityId);
    if (!facilityIds.includes(facility.id)) facilityIds = [...facilityIds, facility.id];
  }
  const updated: Patient = { ...existing, ...demographics(input), facilityIds, updatedAt: nowIso(deps.clock) };
  if (input.externalId) updated.externalId = input.externalId;
  await deps.storage.patients.update(updated);
  return updated;
}

export async function removePatient(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string): Promise<void> {
  if (!(await deps.storage.patients.remove(accountId, id))) {
    throw new CoreError('PATIENT_NOT_FOUND', 'No patient with this id in your account');
  }
}

export async function listPatients(
  deps: Pick<CoreDeps, 'storage'>,
  accountId: string,
  options: { facilityId?: string; after?: string; limit: number },
): Promise<{ patients: Patient[]; next?: string }> {
  if (options.facilityId && !(await deps.storage.facilities.get(accountId, options.facilityId))) {
    throw new CoreError('FACILITY_NOT_FOUND', 'No facility with this id in your account');
  }
  // One extra tells whether another page exists without a count query.
  const page = await deps.storage.patients.list(accountId, { ...options, limit: options.limit + 1 });
  const patients = page.slice(0, options.limit);
  return page.length > options.limit ? { patients, next: patients[patients.length - 1]!.id } : { patients };
}

/** HIE Opt-Out. Idempotent: setting the current value again succeeds and changes nothing else. */
export async function setHieOptOut(deps: Deps, accountId: string, id: string, hieOptOut: boolean) {
  const patient = await getPatient(deps, accountId, id);
  if (patient.hieOptOut !== hieOptOut) {
    await deps.storage.patients.update({ ...patient, hieOptOut, updatedAt: nowIso(deps.clock) });
  }
  return {
    id: patient.id,
    hieOptOut,
    message: hieOptOut
      ? 'The patient is opted out of data sharing and pulling through health information exchanges'
      : 'The patient is opted in to data sharing and pulling through health information exchanges',
  };
}

export async function getHieOptOut(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string) {
  const patient = await getPatient(deps, accountId, id);
  return { id: patient.id, hieOptOut: patient.hieOptOut };
}

export function patientToWire(patient: Patient) {
  return {
    id: patient.id,
    eTag: patient.updatedAt,
    facilityIds: patient.facilityIds,
    externalId: patient.externalId ?? null,
    dateCreated: patient.createdAt,
    firstName: patient.firstName,
    lastName: patient.lastName,
    dob: patient.dob,
    genderAtBirth: patient.genderAtBirth,
    personalIdentifiers: patient.personalIdentifiers,
    address: patient.address,
    contact: patient.contact,
    cohortIds: patient.cohortIds,
    hieOptOut: patient.hieOptOut,
  };
}
