import type { FacilityCreate } from '../api/schemas.js';
import type { CoreDeps } from '../deps.js';
import type { Facility } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { nowIso } from '../time.js';
import { oidFromUuid } from './oid.js';

type Deps = Pick<CoreDeps, 'storage' | 'ids' | 'clock'>;

export async function createFacility(deps: Deps, accountId: string, input: FacilityCreate): Promise<Facility> {
  const id = deps.ids.next();
  const now = nowIso(deps.clock);
  const facility: Facility = {
    id,
    accountId,
    oid: oidFromUuid(id),
    name: input.name,
    npi: input.npi,
    ...(input.tin ? { tin: input.tin } : {}),
    active: input.active,
    address: input.address,
    createdAt: now,
    updatedAt: now,
  };
  await deps.storage.facilities.insert(facility);
  return facility;
}

/** The account's facilities, oldest first; empty when it has none. Throws nothing. */
export async function listFacilities(deps: Pick<CoreDeps, 'storage'>, accountId: string): Promise<Facility[]> {
  return deps.storage.facilities.list(accountId);
}

export async function getFacility(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string): Promise<Facility> {
  const facility = await deps.storage.facilities.get(accountId, id);
  if (!facility) throw new CoreError('FACILITY_NOT_FOUND', 'No facility with this id in your account');
  return facility;
}

export async function updateFacility(deps: Deps, accountId: string, id: string, input: FacilityCreate): Promise<Facility> {
  const existing = await getFacility(deps, accountId, id);
  const updated: Facility = { ...existing, ...input, tin: input.tin, updatedAt: nowIso(deps.clock) };
  if (!updated.tin) delete updated.tin;
  await deps.storage.facilities.update(updated);
  return updated;
}

/** A facility that still has patients cannot be removed (the public Metriport API's rule). */
export async function removeFacility(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string): Promise<void> {
  await getFacility(deps, accountId, id);
  const patients = await deps.storage.patients.list(accountId, { facilityId: id, limit: 1 });
  if (patients.length > 0) throw new CoreError('FACILITY_IN_USE', 'The facility still has patients; move or remove them first');
  await deps.storage.facilities.remove(accountId, id);
}

export function facilityToWire(facility: Facility) {
  return {
    id: facility.id,
    eTag: facility.updatedAt,
    oid: facility.oid,
    name: facility.name,
    npi: facility.npi,
    tin: facility.tin ?? null,
    active: facility.active,
    address: facility.address,
  };
}

/**
 * The facility a request (or a patient) belongs to (Start Bulk Patient Create — Errors):
 * a given id must be one of the account's facilities (else FACILITY_NOT_FOUND, 404, whether it is missing
 * or another account's); with none given, the account's only facility is used, and an account with
 * several (or none) must name one (FACILITY_REQUIRED, 400).
 */
export async function resolveFacility(deps: Pick<CoreDeps, 'storage'>, accountId: string, facilityId: string | undefined): Promise<Facility> {
  if (facilityId !== undefined) {
    const facility = await deps.storage.facilities.get(accountId, facilityId);
    if (!facility) throw new CoreError('FACILITY_NOT_FOUND', 'No facility with this id in your account');
    return facility;
  }
  const facilities = await deps.storage.facilities.list(accountId);
  if (facilities.length === 1) return facilities[0]!;
  if (facilities.length === 0) {
    throw new CoreError('FACILITY_REQUIRED', 'Your account has no facility yet; create one first');
  }
  throw new CoreError('FACILITY_REQUIRED', `Your account has ${facilities.length} facilities; pass facilityId to choose one`);
}
