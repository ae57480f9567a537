import { z } from 'zod';
import { addPatientToCohorts, changeCohortMembers, cohortsOfPatient } from '../../entities/cohort-members.js';
import { cohortToWire, createCohort, getCohort, listCohorts, patchCohort, removeCohort, updateCohort } from '../../entities/cohorts.js';
import { createFacility, facilityToWire, getFacility, listFacilities, removeFacility, updateFacility } from '../../entities/facilities.js';
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
import { CoreError } from '../../errors.js';

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
  defineRoute('createOrganization', {
    body: organizationCreateSchema,
    async handle({ deps, account, body }) {
      return json(201, organizationToWire(await createOrganization(deps, account.id, body)));
    },
  }),
  defineRoute('getOrganization', {
    async handle({ deps, account }) {
      const org = await getOrganization(deps, account.id);
      return org ? json(200, organizationToWire(org)) : noContent();
    },
  }),
  defineRoute('updateOrganization', {
    body: organizationCreateSchema,
    async handle({ deps, account, params, body }) {
      return json(200, organizationToWire(await updateOrganization(deps, account.id, params.id, body)));
    },
  }),
];

export const facilityRoutes = [
  defineRoute('createFacility', {
    body: facilityCreateSchema,
    async handle({ deps, account, body }) {
      return json(201, facilityToWire(await createFacility(deps, account.id, body)));
    },
  }),
  defineRoute('listFacilities', {
    async handle({ deps, account }) {
      const facilities = await listFacilities(deps, account.id);
      return json(200, { facilities: facilities.map(facilityToWire) });
    },
  }),
  defineRoute('getFacility', {
    async handle({ deps, account, params }) {
      return json(200, facilityToWire(await getFacility(deps, account.id, params.id)));
    },
  }),
  defineRoute('updateFacility', {
    body: facilityCreateSchema,
    async handle({ deps, account, params, body }) {
      return json(200, facilityToWire(await updateFacility(deps, account.id, params.id, body)));
    },
  }),
  defineRoute('removeFacility', {
    async handle({ deps, account, params }) {
      await removeFacility(deps, account.id, params.id);
      return noContent();
    },
  }),
];

export const cohortRoutes = [
  defineRoute('createCohort', {
    body: cohortCreateSchema,
    async handle({ deps, account, body }) {
      return json(201, cohortToWire(await createCohort(deps, account.id, body)));
    },
  }),
  defineRoute('listCohorts', {
    async handle({ deps, account }) {
      return json(200, { cohorts: (await listCohorts(deps, account.id)).map(cohortToWire) });
    },
  }),
  defineRoute('getCohort', {
    async handle({ deps, account, params }) {
      return json(200, cohortToWire(await getCohort(deps, account.id, params.id)));
    },
  }),
  defineRoute('updateCohort', {
    body: cohortCreateSchema,
    async handle({ deps, account, params, body }) {
      return json(200, cohortToWire(await updateCohort(deps, account.id, params.id, body)));
    },
  }),
  defineRoute('removeCohort', {
    async handle({ deps, account, params }) {
      await removeCohort(deps, account.id, params.id);
      return noContent();
    },
  }),
  defineRoute('patchCohort', {
    body: z.object({ name: cohortCreateSchema.shape.name.optional(), description: z.string().trim().max(2000).nullable().optional() }),
    async handle({ deps, account, params, body }) {
      return json(200, cohortToWire(await patchCohort(deps, account.id, params.id, body)));
    },
  }),
  defineRoute('addPatientsToCohort', {
    body: cohortMembersBody,
    async handle({ deps, account, params, body }) {
      return json(200, await changeCohortMembers(deps, account.id, params.id, body, 'add'));
    },
  }),
  defineRoute('removePatientsFromCohort', {
    body: cohortMembersBody,
    async handle({ deps, account, params, body }) {
      return json(200, await changeCohortMembers(deps, account.id, params.id, body, 'remove'));
    },
  }),
  defineRoute('listCohortPatients', {
    query: pageQuery,
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
  defineRoute('createPatient', {
    query: facilityQuery,
    body: patientCreateSchema,
    async handle({ deps, account, query, body }) {
      const { patient, created } = await createPatient(deps, account.id, query.facilityId, body);
      return json(created ? 201 : 200, patientToWire(patient), etagHeader(patient.version));
    },
  }),
  defineRoute('listPatients', {
    query: facilityQuery.merge(pageQuery).merge(patientFilterQuery),
    async handle({ deps, account, query, request }) {
      checkPageQuery(query);
      const filters = { name: query.name, dob: query.dob, externalId: query.externalId };
      const page = await listPatients(deps, account.id, { facilityId: query.facilityId, after: query.cursor, fromItem: query.fromItem, limit: query.count, filters });
      return json(200, patientPageToWire(page.patients, nextPageUrl(deps.config.publicUrl, request.path, page.next, query.count, { facilityId: query.facilityId, ...filters })));
    },
  }),
  defineRoute('getPatientByExternalId', {
    query: z.object({ externalId: z.string().trim().min(1).max(200), source: z.string().trim().max(100).optional() }),
    async handle({ deps, account, query }) {
      return json(200, patientToWire(await getPatientByExternalId(deps, account.id, query.externalId, query.source || undefined)));
    },
  }),
  defineRoute('matchPatient', {
    body: patientCreateSchema,
    async handle({ deps, account, body }) {
      return json(200, patientToWire(await matchPatient(deps, account.id, body)));
    },
  }),
  defineRoute('getPatientFacilities', {
    async handle({ deps, account, params }) {
      return json(200, await getPatientFacilities(deps, account.id, params.id));
    },
  }),
  defineRoute('setPatientFacilities', {
    body: z.object({ facilityIds: z.array(z.string().trim().min(1).max(100)).min(1).max(100) }),
    async handle({ deps, account, params, body }) {
      return json(200, await setPatientFacilities(deps, account.id, params.id, body.facilityIds));
    },
  }),
  defineRoute('getPatientCohorts', {
    async handle({ deps, account, params }) {
      return json(200, await cohortsOfPatient(deps, account.id, params.id));
    },
  }),
  defineRoute('addPatientToCohorts', {
    body: z.object({ cohortIds: z.array(z.string().trim().min(1).max(100)).min(1).max(100) }),
    async handle({ deps, account, params, body }) {
      return json(200, await addPatientToCohorts(deps, account.id, params.id, body.cohortIds));
    },
  }),
  defineRoute('getPatient', {
    async handle({ deps, account, params }) {
      const patient = await getPatient(deps, account.id, params.id);
      return json(200, patientToWire(patient), etagHeader(patient.version));
    },
  }),
  defineRoute('updatePatient', {
    query: facilityQuery,
    body: patientCreateSchema,
    async handle({ deps, account, params, query, body, condition }) {
      const patient = await updatePatient(deps, account.id, params.id, query.facilityId, body, condition);
      return json(200, patientToWire(patient), etagHeader(patient.version));
    },
  }),
  defineRoute('removePatient', {
    query: facilityQuery,
    async handle({ deps, account, params, condition }) {
      await removePatient(deps, account.id, params.id, condition);
      return noContent();
    },
  }),
  defineRoute('updatePatientHieOptOut', {
    query: z.object({ hieOptOut: queryBoolean }),
    async handle({ deps, account, params, query, condition }) {
      const patient = await setHieOptOut(deps, account.id, params.id, query.hieOptOut, condition);
      return json(200, hieOptOutChangeToWire(patient), etagHeader(patient.version));
    },
  }),
  defineRoute('getPatientHieOptOut', {
    async handle({ deps, account, params }) {
      return json(200, await getHieOptOut(deps, account.id, params.id));
    },
  }),
];
