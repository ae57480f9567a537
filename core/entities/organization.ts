import type { OrganizationCreate } from '../api/schemas.js';
import type { CoreDeps } from '../deps.js';
import type { Organization } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { nowIso } from '../time.js';
import { oidFromUuid } from './oid.js';

type Deps = Pick<CoreDeps, 'storage' | 'ids' | 'clock'>;

/** An account has one organization (the public Metriport API's rule). */
export async function createOrganization(deps: Deps, accountId: string, input: OrganizationCreate): Promise<Organization> {
  if (await deps.storage.organizations.getByAccount(accountId)) {
    throw new CoreError('ORGANIZATION_EXISTS', 'Your account already has an organization; update it instead');
  }
  const id = deps.ids.next();
  const now = nowIso(deps.clock);
  const org: Organization = { id, accountId, oid: oidFromUuid(id), ...input, createdAt: now, updatedAt: now };
  await deps.storage.organizations.insert(org);
  return org;
}

export async function getOrganization(deps: Deps, accountId: string): Promise<Organization | undefined> {
  return deps.storage.organizations.getByAccount(accountId);
}

export async function updateOrganization(deps: Deps, accountId: string, id: string, input: OrganizationCreate): Promise<Organization> {
  const existing = await deps.storage.organizations.getByAccount(accountId);
  if (!existing || existing.id !== id) throw new CoreError('ORGANIZATION_NOT_FOUND', 'No organization with this id in your account');
  const updated: Organization = { ...existing, ...input, updatedAt: nowIso(deps.clock) };
  await deps.storage.organizations.update(updated);
  return updated;
}

export function organizationToWire(org: Organization) {
  return { id: org.id, eTag: org.updatedAt, oid: org.oid, name: org.name, type: org.type, location: org.location };
}
