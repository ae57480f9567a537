import type { CohortCreate } from '../api/schemas.js';
import type { CoreDeps } from '../deps.js';
import type { Cohort } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { nowIso } from '../time.js';

type Deps = Pick<CoreDeps, 'storage' | 'ids' | 'clock'>;

export async function createCohort(deps: Deps, accountId: string, input: CohortCreate): Promise<Cohort> {
  const now = nowIso(deps.clock);
  const cohort: Cohort = {
    id: deps.ids.next(),
    accountId,
    name: input.name,
    ...(input.description ? { description: input.description } : {}),
    createdAt: now,
    updatedAt: now,
  };
  await deps.storage.cohorts.insert(cohort);
  return cohort;
}

/** The account's cohorts, oldest first; empty when it has none. Throws nothing. */
export async function listCohorts(deps: Pick<CoreDeps, 'storage'>, accountId: string): Promise<Cohort[]> {
  return deps.storage.cohorts.list(accountId);
}

export async function getCohort(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string): Promise<Cohort> {
  const cohort = await deps.storage.cohorts.get(accountId, id);
  if (!cohort) throw new CoreError('COHORT_NOT_FOUND', 'No cohort with this id in your account');
  return cohort;
}

export async function updateCohort(deps: Deps, accountId: string, id: string, input: CohortCreate): Promise<Cohort> {
  const existing = await getCohort(deps, accountId, id);
  const updated: Cohort = { ...existing, name: input.name, updatedAt: nowIso(deps.clock) };
  if (input.description) updated.description = input.description;
  else delete updated.description;
  await deps.storage.cohorts.update(updated);
  return updated;
}

/** A partial update: only the fields given change (`description: null` or "" clears it). */
export async function patchCohort(deps: Deps, accountId: string, id: string, input: { name?: string | undefined; description?: string | null | undefined }): Promise<Cohort> {
  const existing = await getCohort(deps, accountId, id);
  const updated: Cohort = { ...existing, name: input.name ?? existing.name, updatedAt: nowIso(deps.clock) };
  if (input.description !== undefined) {
    if (input.description) updated.description = input.description;
    else delete updated.description;
  }
  await deps.storage.cohorts.update(updated);
  return updated;
}

export async function removeCohort(deps: Pick<CoreDeps, 'storage'>, accountId: string, id: string): Promise<void> {
  if (!(await deps.storage.cohorts.remove(accountId, id))) {
    throw new CoreError('COHORT_NOT_FOUND', 'No cohort with this id in your account');
  }
}

export function cohortToWire(cohort: Cohort) {
  return { id: cohort.id, eTag: cohort.updatedAt, name: cohort.name, description: cohort.description ?? null };
}
