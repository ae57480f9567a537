import { z } from 'zod';
import { addPatientToCohorts, changeCohortMembers, cohortsOfPatient } from '../../entities/cohort-members.js';
import { cohortToWire, createCohort, getCohort, patchCohort, removeCohort, updateCohort } from '../../entities/cohorts.js';
import { createFacility, facilityToWire, getFacility, removeFacility, updateFacility } from '../../entities/facilities.js';
import { createOrganization, getOrganization, organizationToWire, updateOrganization } from '../../entities/organization.js';
import {
  createPatient,
  getHieOptOut,
  getPatient,
  getPatientByExternalId,
  getPatientFacilities,
  hieOptOutChangeToWire,
  listPatients,
  matchPatient,
  setPatientFacilities,
  patientToWire,
  removePatient,
  setHieOptOut,
  updatePatient,
} from '../../entities/patients.js';
import type { Patient } from '../../domain/types.js';
import { etagHeader } from '../conditional.js';
import { defineRoute, json, noContent } from '../router.js';
import { cohortCreateSchema, facilityCreateSchema, organizationCreateSchema, patientCreateSchema, queryBoolean } from '../schemas.js';
import {
  cohortListResponse,
  cohortResponse,
  facilityListResponse,
  facilityResponse,
  cohortMembersResponse,
  hieOptOutResponse,
  organizationResponse,
  patientFacilitiesResponse,
  patientPageResponse,
  patientResponse,
} from '../../../contract/responses.js';
import { CoreError } from '../../errors.js';

const V1 = '/medical/v1';
const facilityQuery = z.object({ facilityId: z.string().trim().min(1).optional() });

const MAX_PAGE = 500;

/** Paging of patient lists: ours (`cursor`) and the public API's (`fromItem`), `count` per page. */
const pageQuery = z.object({
  cursor: z.string().trim().min(1).optional(),
  fromItem: z.string().trim().min(1).optional().describe("Start at this patient id, inclusive (the public API's paging)"),
  toItem: z.string().optional().describe('Paging backwards is not served: follow meta.nextPage'),
  filters: z.string().optional().describe('Full-text filters are not served'),
  count: z.coerce.number().int().min(1).max(MAX_PAGE).optional().default(50),
});

function checkPageQuery(query: { toItem?: string | undefined; filters?: string | undefined }): void {
  if (query.toItem !== undefined) {
    throw new CoreError('VALIDATION_FAILED', 'toItem: paging backwards is not supported; page forwards with fromItem, cursor or meta.nextPage', { details: { field: 'toItem' } });
  }
  if (query.filters !== undefined && query.filters.trim() !== '') {
    throw new CoreError('VALIDATION_FAILED', 'filters: full-text filtering of the patient list is not supported; get a patient by externalId or match demographics instead', {
      details: { field: 'filters' },
    });
  }
}

/** `meta.nextPage`: the URL of the page after the one whose last id is `next`, with the same filters. */
function nextPageUrl(publicUrl: string, path: string, next: string | undefined, count: number, filters: Record<string, string | undefined> = {}): string | undefined {
  if (!next) return undefined;
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value !== undefined) query.set(name, value);
  query.set('cursor', next);
  query.set('count', String(count));
  return `${publicUrl}${path}?${query.toString()}`;
}

/**
 * Filters of the patient list, answered by a bounded scan (see `PATIENT_SEARCH_SCAN`): a filtered page may
 * hold fewer patients than `count`, even none, and still have a `meta.nextPage`.
 */
const patientFilterQuery = z.object({
  name: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe('Words of a first or last name, each beginning one of the names of the patient, case and accents aside (`jose gar` finds José García)'),
  dob: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD')
    .optional()
    .describe('Date of birth, YYYY-MM-DD'),
  externalId: z.string().trim().min(1).max(200).optional().describe('The patient ID in your system, exactly'),
});

const cohortMembersBody = z.object({
  patientIds: z.array(z.string().trim().min(1).max(100)).max(10_000).optional(),
  allPatients: z.boolean().optional(),
});


export const organizationRoutes = [
  defineRoute({
    method: 'POST',
    path: `${V1}/organization`,
    auth: 'apiKey',
    tag: 'Organization',
    summary: 'Create the organization of the account (one per account)',
    body: organizationCreateSchema,
    success: { status: 201, schema: organizationResponse },
    async handle({ deps, account, body }) {
      return json(201, organizationToWire(await createOrganization(deps, account.id, body)));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/organization`,
    auth: 'apiKey',
    tag: 'Organization',
    summary: 'Get the organization of the account (empty body when none was created)',
    success: { status: 200, schema: organizationResponse },
    async handle({ deps, account }) {
      const org = await getOrganization(deps, account.id);
      return org ? json(200, organizationToWire(org)) : noContent();
    },
  }),
  defineRoute({
    method: 'PUT',
    path: `${V1}/organization/:id`,
    auth: 'apiKey',
    tag: 'Organization',
    summary: 'Update the organization',
    body: organizationCreateSchema,
    success: { status: 200, schema: organizationResponse },
    async handle({ deps, account, params, body }) {
      return json(200, organizationToWire(await updateOrganization(deps, account.id, params.id, body)));
    },
  }),
];

export const facilityRoutes = [
  defineRoute({
    method: 'POST',
    path: `${V1}/facility`,
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'Create a facility',
    body: facilityCreateSchema,
    success: { status: 201, schema: facilityResponse },
    async handle({ deps, account, body }) {
      return json(201, facilityToWire(await createFacility(deps, account.id, body)));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/facility`,
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'List the facilities of the account, oldest first',
    success: { status: 200, schema: facilityListResponse },
    async handle({ deps, account }) {
      const facilities = await deps.storage.facilities.list(account.id);
      return json(200, { facilities: facilities.map(facilityToWire) });
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/facility/:id`,
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'Get a facility',
    success: { status: 200, schema: facilityResponse },
    async handle({ deps, account, params }) {
      return json(200, facilityToWire(await getFacility(deps, account.id, params.id)));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: `${V1}/facility/:id`,
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'Update a facility',
    body: facilityCreateSchema,
    success: { status: 200, schema: facilityResponse },
    async handle({ deps, account, params, body }) {
      return json(200, facilityToWire(await updateFacility(deps, account.id, params.id, body)));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: `${V1}/facility/:id`,
    auth: 'apiKey',
    tag: 'Facility',
    summary: 'Remove a facility that has no patients',
    success: { status: 204 },
    async handle({ deps, account, params }) {
      await removeFacility(deps, account.id, params.id);
      return noContent();
    },
  }),
];

export const cohortRoutes = [
  defineRoute({
    method: 'POST',
    path: `${V1}/cohort`,
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Create a cohort',
    body: cohortCreateSchema,
    success: { status: 201, schema: cohortResponse },
    async handle({ deps, account, body }) {
      return json(201, cohortToWire(await createCohort(deps, account.id, body)));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/cohort`,
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'List the cohorts of the account, oldest first',
    success: { status: 200, schema: cohortListResponse },
    async handle({ deps, account }) {
      return json(200, { cohorts: (await deps.storage.cohorts.list(account.id)).map(cohortToWire) });
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/cohort/:id`,
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Get a cohort',
    success: { status: 200, schema: cohortResponse },
    async handle({ deps, account, params }) {
      return json(200, cohortToWire(await getCohort(deps, account.id, params.id)));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: `${V1}/cohort/:id`,
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Update a cohort',
    body: cohortCreateSchema,
    success: { status: 200, schema: cohortResponse },
    async handle({ deps, account, params, body }) {
      return json(200, cohortToWire(await updateCohort(deps, account.id, params.id, body)));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: `${V1}/cohort/:id`,
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Remove a cohort',
    success: { status: 204 },
    async handle({ deps, account, params }) {
      await removeCohort(deps, account.id, params.id);
      return noContent();
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: `${V1}/cohort/:id`,
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Update some fields of a cohort (only those given change)',
    body: z.object({ name: cohortCreateSchema.shape.name.optional(), description: z.string().trim().max(2000).nullable().optional() }),
    success: { status: 200, schema: cohortResponse },
    async handle({ deps, account, params, body }) {
      return json(200, cohortToWire(await patchCohort(deps, account.id, params.id, body)));
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${V1}/cohort/:id/patient`,
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Add patients to the cohort (patientIds, or allPatients: true)',
    body: cohortMembersBody,
    success: { status: 200, schema: cohortMembersResponse },
    async handle({ deps, account, params, body }) {
      return json(200, await changeCohortMembers(deps, account.id, params.id, body, 'add'));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: `${V1}/cohort/:id/patient`,
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'Remove patients from the cohort (patientIds, or allPatients: true)',
    body: cohortMembersBody,
    success: { status: 200, schema: cohortMembersResponse },
    async handle({ deps, account, params, body }) {
      return json(200, await changeCohortMembers(deps, account.id, params.id, body, 'remove'));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/cohort/:id/patient`,
    auth: 'apiKey',
    tag: 'Cohort',
    summary: 'The patients of the cohort, oldest first, paged like the patient list',
    query: pageQuery,
    success: { status: 200, schema: patientPageResponse },
    async handle({ deps, account, params, query, request }) {
      const cohort = await getCohort(deps, account.id, params.id);
      checkPageQuery(query);
      const page = await listPatients(deps, account.id, { cohortId: cohort.id, after: query.cursor, fromItem: query.fromItem, limit: query.count });
      return json(200, patientPageToWire(page.patients, nextPageUrl(deps.config.publicUrl, request.path, page.next, query.count)));
    },
  }),
];

/** A page of `GET /patient`, as the public Metriport API pages: `meta.nextPage` is the URL of the next one. */
export function patientPageToWire(patients: readonly Patient[], nextPage: string | undefined) {
  const meta: { itemsOnPage: number; nextPage?: string } = { itemsOnPage: patients.length };
  if (nextPage !== undefined) meta.nextPage = nextPage;
  return { patients: patients.map(patientToWire), meta };
}

export const patientRoutes = [
  defineRoute({
    method: 'POST',
    path: `${V1}/patient`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Create a patient; when a patient of the account is the same person (the import matching rule), 200 with that patient, unchanged (409 when several are)',
    query: facilityQuery,
    body: patientCreateSchema,
    etag: true,
    success: { status: 201, schema: patientResponse },
    async handle({ deps, account, query, body }) {
      const { patient, created } = await createPatient(deps, account.id, query.facilityId, body);
      return json(created ? 201 : 200, patientToWire(patient), etagHeader(patient.version));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/patient`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'List patients, optionally of one facility and filtered by name, date of birth or externalId, oldest first, paged by cursor',
    query: facilityQuery.merge(pageQuery).merge(patientFilterQuery),
    success: { status: 200, schema: patientPageResponse },
    async handle({ deps, account, query, request }) {
      checkPageQuery(query);
      const filters = { name: query.name, dob: query.dob, externalId: query.externalId };
      const page = await listPatients(deps, account.id, { facilityId: query.facilityId, after: query.cursor, fromItem: query.fromItem, limit: query.count, filters });
      return json(200, patientPageToWire(page.patients, nextPageUrl(deps.config.publicUrl, request.path, page.next, query.count, { facilityId: query.facilityId, ...filters })));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/patient/external-id`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Get the patient with this externalId (409 when several patients share it)',
    query: z.object({ externalId: z.string().trim().min(1).max(200), source: z.string().trim().max(100).optional() }),
    success: { status: 200, schema: patientResponse },
    async handle({ deps, account, query }) {
      return json(200, patientToWire(await getPatientByExternalId(deps, account.id, query.externalId, query.source || undefined)));
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${V1}/patient/match`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Find the patient whose demographics match (404 when none does, 409 when several do)',
    body: patientCreateSchema,
    success: { status: 200, schema: patientResponse },
    async handle({ deps, account, body }) {
      return json(200, patientToWire(await matchPatient(deps, account.id, body)));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/patient/:id/facility`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: "The patient's facilities",
    success: { status: 200, schema: patientFacilitiesResponse },
    async handle({ deps, account, params }) {
      return json(200, await getPatientFacilities(deps, account.id, params.id));
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${V1}/patient/:id/facility`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: "Replace the patient's facilities with these (at least one)",
    body: z.object({ facilityIds: z.array(z.string().trim().min(1).max(100)).min(1).max(100) }),
    success: { status: 200, schema: patientFacilitiesResponse },
    async handle({ deps, account, params, body }) {
      return json(200, await setPatientFacilities(deps, account.id, params.id, body.facilityIds));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/patient/:id/cohort`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'The cohorts the patient is in',
    success: { status: 200, schema: cohortListResponse },
    async handle({ deps, account, params }) {
      return json(200, await cohortsOfPatient(deps, account.id, params.id));
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${V1}/patient/:id/cohort`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Add the patient to these cohorts; answers all the cohorts the patient is in',
    body: z.object({ cohortIds: z.array(z.string().trim().min(1).max(100)).min(1).max(100) }),
    success: { status: 200, schema: cohortListResponse },
    async handle({ deps, account, params, body }) {
      return json(200, await addPatientToCohorts(deps, account.id, params.id, body.cohortIds));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/patient/:id`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Get a patient',
    etag: true,
    success: { status: 200, schema: patientResponse },
    async handle({ deps, account, params }) {
      const patient = await getPatient(deps, account.id, params.id);
      return json(200, patientToWire(patient), etagHeader(patient.version));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: `${V1}/patient/:id`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: "Replace a patient's demographics (with If-Match: only the version it names)",
    query: facilityQuery,
    body: patientCreateSchema,
    ifMatch: true,
    etag: true,
    success: { status: 200, schema: patientResponse },
    async handle({ deps, account, params, query, body, condition }) {
      const patient = await updatePatient(deps, account.id, params.id, query.facilityId, body, condition);
      return json(200, patientToWire(patient), etagHeader(patient.version));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: `${V1}/patient/:id`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Remove a patient (with If-Match: only the version it names)',
    query: facilityQuery,
    ifMatch: true,
    success: { status: 204 },
    async handle({ deps, account, params, condition }) {
      await removePatient(deps, account.id, params.id, condition);
      return noContent();
    },
  }),
  defineRoute({
    method: 'PUT',
    path: `${V1}/patient/:id/hie-opt-out`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Opt a patient out of (true) or back into (false) health information exchanges (with If-Match: only from the version it names)',
    query: z.object({ hieOptOut: queryBoolean }),
    ifMatch: true,
    etag: true,
    success: { status: 200, schema: hieOptOutResponse },
    async handle({ deps, account, params, query, condition }) {
      const patient = await setHieOptOut(deps, account.id, params.id, query.hieOptOut, condition);
      return json(200, hieOptOutChangeToWire(patient), etagHeader(patient.version));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/patient/:id/hie-opt-out`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: "Read a patient's HIE opt-out status",
    success: { status: 200, schema: hieOptOutResponse },
    async handle({ deps, account, params }) {
      return json(200, await getHieOptOut(deps, account.id, params.id));
    },
  }),
];
