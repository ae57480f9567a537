import type { CoreDeps } from '../deps.js';
import type { Patient } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { nowIso } from '../time.js';
import { cohortToWire, getCohort } from './cohorts.js';
import { changePatient, getPatient } from './patients.js';

type Deps = Pick<CoreDeps, 'storage' | 'clock'>;

/** Patients read and written at once when a change covers the whole account. */
const PAGE = 500;

/** Tries of one page (see WRITE_TRIES in patients.ts: each refused try means another writer landed). */
const PAGE_TRIES = 25;

export interface CohortMembersInput {
  patientIds?: readonly string[];
  /** Every patient of the account; must be said explicitly, never implied by an empty list. */
  allPatients?: boolean;
}

async function* patientsOf(deps: Pick<CoreDeps, 'storage'>, accountId: string, input: CohortMembersInput): AsyncGenerator<Patient[]> {
  if (input.allPatients) {
    let after: string | undefined;
    for (;;) {
      const page = await deps.storage.patients.list(accountId, { after, limit: PAGE });
      if (page.length > 0) yield page;
      if (page.length < PAGE) return;
      after = page[page.length - 1]!.id;
    }
  }
  // Every id is checked before anything changes: one unknown id changes nothing.
  const ids = [...new Set(input.patientIds ?? [])];
  const patients: Patient[] = [];
  for (const id of ids) patients.push(await getPatient(deps, accountId, id));
  for (let i = 0; i < patients.length; i += PAGE) yield patients.slice(i, i + PAGE);
}

function checkInput(input: CohortMembersInput): void {
  if (input.allPatients && input.patientIds && input.patientIds.length > 0) {
    throw new CoreError('VALIDATION_FAILED', 'patientIds: give patientIds or allPatients, not both', { details: { field: 'patientIds' } });
  }
  if (!input.allPatients && (!input.patientIds || input.patientIds.length === 0)) {
    throw new CoreError('VALIDATION_FAILED', 'patientIds: give at least one patient id, or allPatients: true', { details: { field: 'patientIds' } });
  }
}

/**
 * Adds patients to (`add`) or removes them from the cohort. Idempotent: a patient already in (or out of)
 * it is left as it is. Throws COHORT_NOT_FOUND, PATIENT_NOT_FOUND (nothing changes), VALIDATION_FAILED.
 */
export async function changeCohortMembers(deps: Deps, accountId: string, cohortId: string, input: CohortMembersInput, change: 'add' | 'remove') {
  const cohort = await getCohort(deps, accountId, cohortId);
  checkInput(input);
  const changeOf = (patient: Patient, now: string): Patient | undefined => {
    const member = patient.cohortIds.includes(cohort.id);
    if (change === 'add' ? member : !member) return undefined;
    const cohortIds = change === 'add' ? [...patient.cohortIds, cohort.id] : patient.cohortIds.filter((id) => id !== cohort.id);
    return { ...patient, cohortIds, updatedAt: now };
  };
  let changed = 0;
  for await (const page of patientsOf(deps, accountId, input)) changed += await changePage(deps, accountId, page, changeOf);
  const verb = change === 'add' ? 'added to' : 'removed from';
  return { cohort: cohortToWire(cohort), message: `${changed} patient${changed === 1 ? '' : 's'} ${verb} the cohort` };
}

/**
 * Writes the change of each patient of the page that needs one, all at once. The patients were read
 * before: those written by someone else since are refused as stale, read again and changed again (the
 * others are written with them), so no concurrent write of theirs is undone. Returns how many changed.
 */
async function changePage(deps: Deps, accountId: string, page: readonly Patient[], changeOf: (patient: Patient, now: string) => Patient | undefined): Promise<number> {
  let current = page;
  for (let attempt = 0; attempt < PAGE_TRIES; attempt++) {
    const now = nowIso(deps.clock);
    const updates = current.flatMap((patient) => changeOf(patient, now) ?? []);
    if (updates.length === 0) return 0;
    const stale = await deps.storage.patients.updateMany(updates);
    if (stale.length === 0) return updates.length;
    current = await Promise.all(updates.map((patient) => getPatient(deps, accountId, patient.id)));
  }
  throw new CoreError('CONFLICT', 'Patients of this change were changed by other requests too many times meanwhile; send it again');
}

/** The cohorts the patient is in, in the patient's order. */
export async function cohortsOfPatient(deps: Pick<CoreDeps, 'storage'>, accountId: string, patientId: string) {
  const patient = await getPatient(deps, accountId, patientId);
  const cohorts = await Promise.all(patient.cohortIds.map((id) => deps.storage.cohorts.get(accountId, id)));
  return { cohorts: cohorts.flatMap((cohort) => (cohort ? [cohortToWire(cohort)] : [])) };
}

/** Adds the patient to each cohort (kept where it is already). Throws PATIENT_NOT_FOUND, COHORT_NOT_FOUND (nothing changes). */
export async function addPatientToCohorts(deps: Deps, accountId: string, patientId: string, cohortIds: readonly string[]) {
  await getPatient(deps, accountId, patientId);
  for (const id of cohortIds) await getCohort(deps, accountId, id);
  await changePatient(deps, accountId, patientId, (patient) => {
    const wanted = [...new Set([...patient.cohortIds, ...cohortIds])];
    return wanted.length === patient.cohortIds.length ? undefined : { ...patient, cohortIds: wanted, updatedAt: nowIso(deps.clock) };
  });
  return cohortsOfPatient(deps, accountId, patientId);
}
