import type { PatientCreate } from '../api/schemas.js';
import { DOB_IN_FUTURE } from '../csv/dates.js';
import type { CoreDeps } from '../deps.js';
import type { Patient } from '../domain/types.js';
import type { PatientSearch, StoragePort } from '../ports/storage.port.js';
import { CoreError } from '../errors.js';
import { facilityToWire, resolveFacility } from './facilities.js';
import { matchesPatientSearch, nameSearchTerms } from './patient-search.js';
import { matchKeysFor } from '../matching/block.js';
import { decideMatch, demographicsOfPatient } from '../matching/decide.js';
import { nowIso, todayIso } from '../time.js';

type Deps = Pick<CoreDeps, 'storage' | 'ids' | 'clock'>;

/**
 * Tries of one change of a patient before it gives up. A try is refused only when another write of the
 * patient landed after the read it was made from, so every refused try means another writer got through:
 * this many writers of one patient at once all land.
 */
const WRITE_TRIES = 25;

/**
 * What a conditional request (`If-Match`) accepts: any version of the patient (`*`), or one of the versions
 * it lists (the ETags, i.e. `eTag`, it was given).
 */
export type VersionCondition = { any: true } | { versions: readonly string[] };

function accepts(condition: VersionCondition, patient: Patient): boolean {
  return 'any' in condition || condition.versions.includes(String(patient.version));
}

/**
 * Applies `change` to the stored patient and writes the result, as one atomic step as far as every other
 * writer can tell: the write states the version it was made from, and when another write landed first
 * (`'stale'`) the patient is read again and the change made again from it, so neither write is lost.
 * `change` returns undefined when the patient is already as wanted (nothing is written). With a
 * `condition`, a patient whose version it does not accept is a PRECONDITION_FAILED and nothing is written,
 * also when the version it accepted was overtaken between the read and the write.
 */
export async function changePatient(
  deps: Pick<CoreDeps, 'storage'>,
  accountId: string,
  id: string,
  change: (patient: Patient) => Patient | undefined,
  condition?: VersionCondition,
): Promise<Patient> {
  for (let attempt = 0; attempt < WRITE_TRIES; attempt++) {
    const current = await getPatient(deps, accountId, id);
    if (condition && !accepts(condition, current)) {
      throw new CoreError('PRECONDITION_FAILED', 'The patient has changed since the version given in If-Match; get it again and redo the change on its current version');
    }
    const changed = change(current);
    if (!changed) return current;
    const stored = await deps.storage.patients.update(changed);
    if (stored === undefined) throw new CoreError('PATIENT_NOT_FOUND', 'No patient with this id in your account');
    if (stored !== 'stale') return stored;
  }
  throw new CoreError('CONFLICT', 'The patient was changed by other requests too many times while this change was applied; send it again');
}

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

/**
 * Creates the patient, unless one of the account's patients is the same person (the import's matching
 * rule, see `matchPatient`): that one is returned as it is (`created: false`), so a person sent twice, or
 * by two callers at once, is one patient. Several matching is a CONFLICT naming the count.
 */
export async function createPatient(deps: Deps, accountId: string, facilityId: string | undefined, input: PatientCreate): Promise<{ patient: Patient; created: boolean }> {
  assertDobNotFuture(deps, input.dob);
  const facility = await resolveFacility(deps, accountId, facilityId);
  const fields = demographics(input);
  return deps.storage.transaction(async (tx) => {
    // Held from the look-up to the insert: another request or an import's batch creating the same person
    // waits, and then finds this one.
    await tx.patients.lockAccount(accountId);
    const existing = await sameSingle(tx, accountId, input, fields.matchKeys);
    if (existing) return { patient: existing, created: false };
    const now = nowIso(deps.clock);
    const patient: Patient = {
      id: deps.ids.next(),
      accountId,
      facilityIds: [facility.id],
      cohortIds: [],
      ...(input.externalId ? { externalId: input.externalId } : {}),
      ...fields,
      hieOptOut: false,
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    await tx.patients.insert(patient);
    return { patient, created: true };
  });
}

/**
 * The one patient of the account whose demographics match, undefined when none does; CONFLICT when
 * several do (one is never picked silently).
 */
async function sameSingle(storage: Pick<StoragePort, 'patients'>, accountId: string, input: PatientCreate, matchKeys: readonly string[]): Promise<Patient | undefined> {
  const candidates = await storage.patients.findByMatchKeys(accountId, matchKeys);
  if (candidates.length === 0) return undefined;
  const decision = decideMatch(
    { firstName: input.firstName, lastName: input.lastName, dob: input.dob, genderAtBirth: input.genderAtBirth, zips: input.address.map((a) => a.zip) },
    candidates.map(demographicsOfPatient),
  );
  if (decision.kind === 'created') return undefined;
  if (decision.kind === 'ambiguous') {
    throw new CoreError('CONFLICT', `${decision.count} patients match these demographics; add details (another address, the externalId) to tell them apart`, {
      details: { count: decision.count },
    });
  }
  return candidates.find((candidate) => candidate.id === decision.patientId)!;
}

export async function getPatient(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string): Promise<Patient> {
  const patient = await deps.storage.patients.get(accountId, id);
  if (!patient) throw new CoreError('PATIENT_NOT_FOUND', 'No patient with this id in your account');
  return patient;
}

/**
 * The one patient of the account with this externalId. Throws PATIENT_NOT_FOUND when none has it (or when
 * `source` is given: carebridge keeps only the customer's own externalId, no EHR mappings), and CONFLICT
 * when several patients share it: one is never picked silently.
 */
export async function getPatientByExternalId(deps: Pick<CoreDeps, 'storage'>, accountId: string, externalId: string, source?: string): Promise<Patient> {
  const found = source ? [] : await deps.storage.patients.findByExternalId(accountId, externalId);
  if (found.length === 0) throw new CoreError('PATIENT_NOT_FOUND', 'No patient with this externalId in your account');
  if (found.length > 1) {
    throw new CoreError('CONFLICT', `${found.length} patients have this externalId; get them by id instead`, { details: { count: found.length } });
  }
  return found[0]!;
}

/**
 * The patient whose demographics match (the bulk import's rule: same dob and gender at birth, a shared
 * first name, last name and zip). Throws PATIENT_NOT_FOUND when none does, CONFLICT naming the count when
 * several do (never one picked silently).
 */
export async function matchPatient(deps: Pick<CoreDeps, 'storage'>, accountId: string, input: PatientCreate): Promise<Patient> {
  const found = await sameSingle(deps.storage, accountId, input, matchKeysFor(input));
  if (!found) throw new CoreError('PATIENT_NOT_FOUND', 'No patient in your account matches these demographics');
  return found;
}

/** The patient's facilities, in the patient's order. */
export async function getPatientFacilities(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string) {
  const patient = await getPatient(deps, accountId, id);
  const facilities = await Promise.all(patient.facilityIds.map((facilityId) => deps.storage.facilities.get(accountId, facilityId)));
  return { facilities: facilities.flatMap((facility) => (facility ? [facilityToWire(facility)] : [])) };
}

/**
 * Replaces the patient's facilities with the given ones (at least one; repeats count once). Throws
 * FACILITY_NOT_FOUND naming the first id that is not one of the account's; nothing changes then.
 */
export async function setPatientFacilities(deps: Deps, accountId: string, id: string, facilityIds: readonly string[]) {
  await getPatient(deps, accountId, id);
  const wanted = [...new Set(facilityIds)];
  for (const facilityId of wanted) {
    if (!(await deps.storage.facilities.get(accountId, facilityId))) {
      throw new CoreError('FACILITY_NOT_FOUND', 'No facility with this id in your account', { details: { facilityId } });
    }
  }
  await changePatient(deps, accountId, id, (patient) => ({ ...patient, facilityIds: wanted, updatedAt: nowIso(deps.clock) }));
  return getPatientFacilities(deps, accountId, id);
}

/**
 * Replaces the patient's demographics (and externalId, when given); a `facilityId` is added to its
 * facilities. Everything else (opt-out, cohorts) stays as stored when the change lands, whatever was
 * written since this request read the patient. With `condition` (If-Match), only from the version it names.
 */
export async function updatePatient(
  deps: Deps,
  accountId: string,
  id: string,
  facilityId: string | undefined,
  input: PatientCreate,
  condition?: VersionCondition,
): Promise<Patient> {
  assertDobNotFuture(deps, input.dob);
  await getPatient(deps, accountId, id);
  const facility = facilityId === undefined ? undefined : await resolveFacility(deps, accountId, facilityId);
  const fields = demographics(input);
  return deps.storage.transaction(async (tx) => {
    // Held from the look-up to the write: no create or import of the account can make the new demographics
    // someone else's in between.
    await tx.patients.lockAccount(accountId);
    await refuseIfAnotherPatient(tx, accountId, id, input, fields.matchKeys);
    return changePatient(
      { storage: tx },
      accountId,
      id,
      (existing) => {
        const facilityIds = facility && !existing.facilityIds.includes(facility.id) ? [...existing.facilityIds, facility.id] : existing.facilityIds;
        const updated: Patient = { ...existing, ...fields, facilityIds, updatedAt: nowIso(deps.clock) };
        if (input.externalId) updated.externalId = input.externalId;
        return updated;
      },
      condition,
    );
  });
}

/**
 * A change of demographics must not make a patient the same person as another of the account: from then
 * on every import row and create of that person would find two patients (ambiguous) or the wrong one. Such
 * a change is a CONFLICT naming the other patient; the caller updates that one, or removes one of the two.
 */
async function refuseIfAnotherPatient(storage: Pick<StoragePort, 'patients'>, accountId: string, id: string, input: PatientCreate, matchKeys: readonly string[]): Promise<void> {
  const others = (await storage.patients.findByMatchKeys(accountId, matchKeys)).filter((candidate) => candidate.id !== id);
  if (others.length === 0) return;
  const decision = decideMatch(
    { firstName: input.firstName, lastName: input.lastName, dob: input.dob, genderAtBirth: input.genderAtBirth, zips: input.address.map((a) => a.zip) },
    others.map(demographicsOfPatient),
  );
  if (decision.kind === 'updated') {
    throw new CoreError('CONFLICT', `These demographics are those of another patient of your account (${decision.patientId}); update that patient instead, or remove one of the two`, {
      details: { patientId: decision.patientId },
    });
  }
  if (decision.kind === 'ambiguous') {
    throw new CoreError('CONFLICT', `These demographics match ${decision.count} other patients of your account; add details (another address, the externalId) to tell them apart`, {
      details: { count: decision.count },
    });
  }
}

/**
 * Removes the patient. With `condition` (If-Match), only the version it names: the check and the removal
 * hold the account's patients, so no write lands between them.
 */
export async function removePatient(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string, condition?: VersionCondition): Promise<void> {
  const removed = condition
    ? await deps.storage.transaction(async (tx) => {
        await tx.patients.lockAccount(accountId);
        const current = await tx.patients.get(accountId, id);
        if (current && !accepts(condition, current)) {
          throw new CoreError('PRECONDITION_FAILED', 'The patient has changed since the version given in If-Match; get it again and decide on its current version');
        }
        return current !== undefined && (await tx.patients.remove(accountId, id));
      })
    : await deps.storage.patients.remove(accountId, id);
  if (!removed) throw new CoreError('PATIENT_NOT_FOUND', 'No patient with this id in your account');
}

/**
 * Patients examined by one call of a filtered list, at most: what one request may cost whatever the
 * account's size. A page of a search may so hold fewer patients than asked, or none, and still have a next.
 */
export const PATIENT_SEARCH_SCAN = 10_000;

/** The filters of the patient list: a name (words, each beginning one of the patient's names), a date of birth, an externalId. */
export interface PatientListFilters {
  name?: string | undefined;
  dob?: string | undefined;
  externalId?: string | undefined;
}

export async function listPatients(
  deps: Pick<CoreDeps, 'storage'>,
  accountId: string,
  options: { facilityId?: string; cohortId?: string; after?: string; fromItem?: string; limit: number; filters?: PatientListFilters },
): Promise<{ patients: Patient[]; next?: string }> {
  if (options.facilityId && !(await deps.storage.facilities.get(accountId, options.facilityId))) {
    throw new CoreError('FACILITY_NOT_FOUND', 'No facility with this id in your account');
  }
  const search = patientSearchOf(options.filters, options.facilityId);
  // `fromItem` (the public API's paging) starts at that id, inclusive; ids are ordered, so that is the
  // patient itself when it is on the list, then every patient after it.
  let first: Patient[] = [];
  if (options.fromItem !== undefined) {
    const from = await deps.storage.patients.get(accountId, options.fromItem);
    const listed = search ? from !== undefined && matchesPatientSearch(search, from) : from && (!options.facilityId || from.facilityIds.includes(options.facilityId));
    if (from && listed && (!options.cohortId || from.cohortIds.includes(options.cohortId))) first = [from];
  }
  const after = options.fromItem ?? options.after;
  if (search) {
    if (first.length === options.limit) return { patients: first, next: first[0]!.id };
    const page = await deps.storage.patients.search(accountId, search, { after, limit: options.limit - first.length, scan: PATIENT_SEARCH_SCAN });
    return page.next !== undefined ? { patients: [...first, ...page.patients], next: page.next } : { patients: [...first, ...page.patients] };
  }
  // One extra tells whether another page exists without a count query.
  const rest = await deps.storage.patients.list(accountId, { facilityId: options.facilityId, cohortId: options.cohortId, after, limit: options.limit + 1 - first.length });
  const page = [...first, ...rest];
  const patients = page.slice(0, options.limit);
  return page.length > options.limit ? { patients, next: patients[patients.length - 1]!.id } : { patients };
}

/** The storage search for these filters, or `undefined` when none is given (the plain list then). */
function patientSearchOf(filters: PatientListFilters | undefined, facilityId: string | undefined): PatientSearch | undefined {
  if (!filters || (filters.name === undefined && filters.dob === undefined && filters.externalId === undefined)) return undefined;
  const search: PatientSearch = {};
  if (filters.name !== undefined) {
    const nameTerms = nameSearchTerms(filters.name);
    if (nameTerms.length === 0) throw new CoreError('VALIDATION_FAILED', 'name: give at least one letter or digit of a first or last name', { details: { field: 'name' } });
    search.nameTerms = nameTerms;
  }
  if (filters.dob !== undefined) search.dob = filters.dob;
  if (filters.externalId !== undefined) search.externalId = filters.externalId;
  if (facilityId !== undefined) search.facilityId = facilityId;
  return search;
}

/**
 * HIE Opt-Out: returns the patient as stored afterwards. Idempotent: setting the current value again
 * succeeds and changes nothing. Lands whatever else is written to the patient at the same time. With
 * `condition` (If-Match), only from the version it names.
 */
export async function setHieOptOut(deps: Deps, accountId: string, id: string, hieOptOut: boolean, condition?: VersionCondition): Promise<Patient> {
  return changePatient(deps, accountId, id, (current) => (current.hieOptOut === hieOptOut ? undefined : { ...current, hieOptOut, updatedAt: nowIso(deps.clock) }), condition);
}

/** The answer of `PUT /patient/:id/hie-opt-out`. */
export function hieOptOutChangeToWire(patient: Patient) {
  return {
    id: patient.id,
    hieOptOut: patient.hieOptOut,
    message: patient.hieOptOut
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
    eTag: String(patient.version),
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
