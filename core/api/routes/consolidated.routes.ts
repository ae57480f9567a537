import { z } from 'zod';
import { consolidatedQueryFile, getConsolidatedQuery, getPatientConsolidated, listConsolidatedQueries, startConsolidatedQuery } from '../../documents/consolidated.js';
import { MAX_RESOURCES_PER_CALL } from '../../../contract/limits.js';
import { addPatientResources, countPatientResources, medicalRecordFile, medicalRecordUrl } from '../../documents/patient-data.js';
import { searchPatientData, searchResultStream } from '../../documents/search.js';
import { consolidatedQueryToWire } from '../../documents/wire.js';
import { CoreError } from '../../errors.js';
import { defineRoute, json } from '../router.js';
import { metadataBodySchema, uuidSchema } from '../schemas.js';

const filtersQuery = z.object({
  resources: z.string().max(2_000).optional(),
  dateFrom: z.string().trim().optional(),
  dateTo: z.string().trim().optional(),
});

export const consolidatedRoutes = [
  defineRoute('startConsolidatedQuery', {
    query: filtersQuery.extend({ conversionType: z.string().trim().optional() }),
    body: metadataBodySchema,
    async handle({ deps, account, params, query, body }) {
      const started = await startConsolidatedQuery(deps, account, { patientId: params.id, request: query, metadata: body?.metadata });
      return json(200, consolidatedQueryToWire(started));
    },
  }),
  defineRoute('getConsolidatedQueryStatus', {
    async handle({ deps, account, params }) {
      const queries = await listConsolidatedQueries(deps, account.id, params.id);
      const running = queries.filter((query) => query.status === 'processing');
      return json(200, {
        status: running.length > 0 ? 'processing' : (queries[0]?.status ?? 'completed'),
        queries: running.length > 0 ? running.map(consolidatedQueryToWire) : null,
        ...(running.length === 0 ? { message: 'No consolidated data query is running for this patient' } : {}),
      });
    },
  }),
  defineRoute('getConsolidatedQuery', {
    async handle({ deps, account, params }) {
      return json(200, consolidatedQueryToWire(await getConsolidatedQuery(deps, account.id, params.id, params.requestId)));
    },
  }),
  defineRoute('downloadConsolidatedData', {
    async handle({ deps, account, params }) {
      const { stream, contentType, file } = await consolidatedQueryFile(deps, account.id, params.id, params.requestId, params.file);
      return { status: 200, headers: { 'content-type': contentType, 'content-disposition': `attachment; filename="${file}"` }, stream };
    },
  }),
  defineRoute('getPatientConsolidated', {
    query: filtersQuery,
    async handle({ deps, account, params, query }) {
      return json(200, await getPatientConsolidated(deps, account.id, params.id, query));
    },
  }),
  defineRoute('addPatientResources', {
    body: z.looseObject({
      resourceType: z.literal('Bundle'),
      type: z.string().optional(),
      entry: z.array(z.looseObject({ resource: z.looseObject({ resourceType: z.string() }) })).min(1).max(MAX_RESOURCES_PER_CALL),
    }),
    async handle({ deps, account, params, body }) {
      return json(200, await addPatientResources(deps, account, params.id, body), { 'x-metriport-request-id': deps.ids.next() });
    },
  }),
  defineRoute('countPatientResources', {
    query: filtersQuery,
    async handle({ deps, account, params, query }) {
      return json(200, await countPatientResources(deps, account.id, params.id, query));
    },
  }),
  defineRoute('getMedicalRecordUrl', {
    query: z.object({ conversionType: z.string().trim().max(10).optional().describe('html or pdf') }),
    async handle({ deps, account, params, query }) {
      return json(200, await medicalRecordUrl(deps, account.id, params.id, query.conversionType));
    },
  }),
  defineRoute('downloadMedicalRecord', {
    async handle({ deps, account, params }) {
      const { stream, contentType } = await medicalRecordFile(deps, account.id, uuidSchema.parse(params.recordId), params.file);
      return { status: 200, headers: { 'content-type': contentType }, stream };
    },
  }),
  defineRoute('searchPatientData', {
    query: z.object({ query: z.string().max(1_000).optional() }),
    async handle({ deps, account, params, query }) {
      return json(200, await searchPatientData(deps, account.id, params.id, query.query));
    },
  }),
  defineRoute('downloadSearchResult', {
    async handle({ deps, account, params }) {
      const stream = await searchResultStream(deps, account.id, uuidSchema.parse(params.searchId));
      return { status: 200, headers: { 'content-type': 'application/fhir+json' }, stream };
    },
  }),
];
