import { z } from 'zod';
import { cohortToWire, createCohort, getCohort, removeCohort, updateCohort } from '../../entities/cohorts.js';
import { createFacility, facilityToWire, getFacility, removeFacility, updateFacility } from '../../entities/facilities.js';
import { createOrganization, getOrganization, organizationToWire, updateOrganization } from '../../entities/organization.js';
import {
  createPatient,
  getHieOptOut,
  getPatient,
  listPatients,
  patientToWire,
  removePatient,
  setHieOptOut,
  updatePatient,
} from '../../entities/patients.js';
import type { Patient } from '../../domain/types.js';
import { defineRoute, json, noContent } from '../router.js';
import { cohortCreateSchema, facilityCreateSchema, organizationCreateSchema, patientCreateSchema, queryBoolean } from '../schemas.js';
import { cohortListResponse, cohortResponse, facilityListResponse, facilityResponse, hieOptOutResponse, organizationResponse, patientPageResponse, patientResponse } from '../responses.js';

const V1 = '/medical/v1';
const facilityQuery = z.object({ facilityId: z.string().trim().min(1).optional() });

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
      return json(200, organizationToWire(await updateOrganization(deps, account.id, params.id!, body)));
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
      return json(200, facilityToWire(await getFacility(deps, account.id, params.id!)));
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
      return json(200, facilityToWire(await updateFacility(deps, account.id, params.id!, body)));
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
      await removeFacility(deps, account.id, params.id!);
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
      return json(200, cohortToWire(await getCohort(deps, account.id, params.id!)));
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
      return json(200, cohortToWire(await updateCohort(deps, account.id, params.id!, body)));
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
      await removeCohort(deps, account.id, params.id!);
      return noContent();
    },
  }),
];

const MAX_PAGE = 500;

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
    summary: 'Create a patient',
    query: facilityQuery,
    body: patientCreateSchema,
    success: { status: 201, schema: patientResponse },
    async handle({ deps, account, query, body }) {
      return json(201, patientToWire(await createPatient(deps, account.id, query.facilityId, body)));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/patient`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'List patients, optionally of one facility, oldest first, paged by cursor',
    query: facilityQuery.extend({
      cursor: z.string().trim().min(1).optional(),
      count: z.coerce.number().int().min(1).max(MAX_PAGE).optional().default(50),
    }),
success: { status: 200, schema: patientPageResponse },
    async handle({ deps, account, query, request }) {
      const page = await listPatients(deps, account.id, { facilityId: query.facilityId, after: query.cursor, limit: query.count });
      let nextPage: string | undefined;
      if (page.next) {
        const next = new URLSearchParams({ ...(query.facilityId ? { facilityId: query.facilityId } : {}), cursor: page.next, count: String(query.count) });
        nextPage = `${deps.config.publicUrl}${request.path}?${next.toString()}`;
      }
      return json(200, patientPageToWire(page.patients, nextPage));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${V1}/patient/:id`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Get a patient',
success: { status: 200, schema: patientResponse },
    async handle({ deps, account, params }) {
      return json(200, patientToWire(await getPatient(deps, account.id, params.id!)));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: `${V1}/patient/:id`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: "Replace a patient's demographics",
    query: facilityQuery,
    body: patientCreateSchema,
success: { status: 200, schema: patientResponse },
    async handle({ deps, account, params, query, body }) {
      return json(200, patientToWire(await updatePatient(deps, account.id, params.id!, query.facilityId, body)));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: `${V1}/patient/:id`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Remove a patient',
    query: facilityQuery,
    success: { status: 204 },
    async handle({ deps, account, params }) {
      await removePatient(deps, account.id, params.id!);
      return noContent();
    },
  }),
  defineRoute({
    method: 'PUT',
    path: `${V1}/patient/:id/hie-opt-out`,
    auth: 'apiKey',
    tag: 'Patient',
    summary: 'Opt a patient out of (true) or back into (false) health information exchanges',
    query: z.object({ hieOptOut: queryBoolean }),
success: { status: 200, schema: hieOptOutResponse },
    async handle({ deps, account, params, query }) {
      return json(200, await setHieOptOut(deps, account.id, params.id!, query.hieOptOut));
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
      return json(200, await getHieOptOut(deps, account.id, params.id!));
    },
  }),
];
