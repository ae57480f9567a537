import { z } from 'zod';
import {
  CONSOLIDATED_FILES,
  consolidatedBlobKey,
  getConsolidatedQuery,
  getPatientConsolidated,
  listConsolidatedQueries,
  startConsolidatedQuery,
  type ConsolidatedFile,
} from '../../documents/consolidated.js';
import { addPatientResources, countPatientResources, MAX_RESOURCES_PER_CALL, medicalRecordBlobKey, medicalRecordUrl } from '../../documents/patient-data.js';
import { searchPatientData, searchResultStream } from '../../documents/search.js';
import { consolidatedQueryToWire } from '../../documents/wire.js';
import { CoreError } from '../../errors.js';
import { defineRoute, json } from '../router.js';
import { metadataBodySchema, uuidSchema } from '../schemas.js';
import {
  consolidatedCountResponse,
  consolidatedQueriesResponse,
  consolidatedQueryResponse,
  fhirBundleResponse,
  searchResponse,
  transactionResponseBundle,
  urlResponse,
} from '../../../contract/responses.js';

const CONSOLIDATED = '/medical/v1/patient/:id/consolidated';
const TAG = 'Consolidated';

const filtersQuery = z.object({
  resources: z.string().max(2_000).optional(),
  dateFrom: z.string().trim().optional(),
  dateTo: z.string().trim().optional(),
});

export const consolidatedRoutes = [
  defineRoute({
    method: 'POST',
    path: `${CONSOLIDATED}/query`,
    auth: 'apiKey',
    tag: TAG,
    summary:
      "Start a consolidated data query (one per patient at a time: while one runs, it is returned); the data comes by webhook (medical.consolidated-data) as json (with a gzip copy), html or pdf",
    query: filtersQuery.extend({ conversionType: z.string().trim().optional() }),
    body: metadataBodySchema,
    success: { status: 200, schema: consolidatedQueryResponse },
    async handle({ deps, account, params, query, body }) {
      const started = await startConsolidatedQuery(deps, account, { patientId: params.id, request: query, metadata: body?.metadata });
      return json(200, consolidatedQueryToWire(started));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${CONSOLIDATED}/query`,
    auth: 'apiKey',
    tag: TAG,
    summary: "The patient's consolidated data queries still running (`queries`, null when none) and the latest status",
    success: { status: 200, schema: consolidatedQueriesResponse },
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
  defineRoute({
    method: 'GET',
    path: `${CONSOLIDATED}/query/:requestId`,
    auth: 'apiKey',
    tag: TAG,
    summary: 'One consolidated data query',
    success: { status: 200, schema: consolidatedQueryResponse },
    async handle({ deps, account, params }) {
      return json(200, consolidatedQueryToWire(await getConsolidatedQuery(deps, account.id, params.id, params.requestId)));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${CONSOLIDATED}/query/:requestId/:file`,
    auth: 'signed',
    tag: TAG,
    summary: 'Download the data of a consolidated query (pre-signed URL from the medical.consolidated-data webhook, valid 10 minutes): data.json (a FHIR Bundle), data.json.gz, data.html or data.pdf',
    success: { status: 200, schema: fhirBundleResponse, otherMediaTypes: ['application/gzip', 'text/html', 'application/pdf'] },
    async handle({ deps, account, params }) {
      const file = params.file as ConsolidatedFile;
      if (!(file in CONSOLIDATED_FILES)) throw new CoreError('FILE_NOT_FOUND', 'No such file');
      const query = await getConsolidatedQuery(deps, account.id, params.id, params.requestId);
      const stream = await deps.blob.stream(consolidatedBlobKey(query, file));
      if (!stream) throw new CoreError('FILE_NOT_FOUND', 'No such file for this query');
      return { status: 200, headers: { 'content-type': CONSOLIDATED_FILES[file], 'content-disposition': `attachment; filename="${file}"` }, stream };
    },
  }),
  defineRoute({
    method: 'GET',
    path: CONSOLIDATED,
    auth: 'apiKey',
    tag: TAG,
    summary: "The patient's consolidated data at once, as a FHIR searchset Bundle (filters as for the query)",
    query: filtersQuery,
    success: { status: 200, schema: fhirBundleResponse },
    async handle({ deps, account, params, query }) {
      return json(200, await getPatientConsolidated(deps, account.id, params.id, query));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: CONSOLIDATED,
    auth: 'apiKey',
    tag: TAG,
    summary: `Add your own FHIR resources (a Bundle of at most ${MAX_RESOURCES_PER_CALL}) to the patient's consolidated data, deduplicated with what documents brought; answers a transaction-response Bundle`,
    body: z.looseObject({
      resourceType: z.literal('Bundle'),
      type: z.string().optional(),
      entry: z.array(z.looseObject({ resource: z.looseObject({ resourceType: z.string() }) })).min(1).max(MAX_RESOURCES_PER_CALL),
    }),
    success: { status: 200, schema: transactionResponseBundle },
    async handle({ deps, account, params, body }) {
      return json(200, await addPatientResources(deps, account, params.id, body), { 'x-metriport-request-id': deps.ids.next() });
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${CONSOLIDATED}/count`,
    auth: 'apiKey',
    tag: TAG,
    summary: "How many resources the patient's consolidated data holds per resource type (filters as for the query)",
    query: filtersQuery,
    success: { status: 200, schema: consolidatedCountResponse },
    async handle({ deps, account, params, query }) {
      return json(200, await countPatientResources(deps, account.id, params.id, query));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/medical/v1/patient/:id/medical-record',
    auth: 'apiKey',
    tag: TAG,
    summary: "A URL (valid 10 minutes) to the patient's medical record summary, rendered now from the consolidated data as HTML or PDF",
    query: z.object({ conversionType: z.string().trim().max(10).optional().describe('html or pdf') }),
    success: { status: 200, schema: urlResponse },
    async handle({ deps, account, params, query }) {
      return json(200, await medicalRecordUrl(deps, account.id, params.id, query.conversionType));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/medical/v1/patient/:id/medical-record/:recordId/:file',
    auth: 'signed',
    tag: TAG,
    summary: 'Download a medical record summary (pre-signed URL from medical-record, valid 10 minutes)',
    success: { status: 200, mediaType: 'text/html' },
    async handle({ deps, account, params }) {
      const format = params.file === 'summary.pdf' ? 'pdf' : params.file === 'summary.html' ? 'html' : undefined;
      if (!format) throw new CoreError('FILE_NOT_FOUND', 'No such file');
      const stream = await deps.blob.stream(medicalRecordBlobKey(account.id, uuidSchema.parse(params.recordId), format));
      if (!stream) throw new CoreError('FILE_NOT_FOUND', 'This summary is no longer kept; ask for a new one');
      return { status: 200, headers: { 'content-type': format === 'pdf' ? 'application/pdf' : 'text/html; charset=utf-8' }, stream };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${CONSOLIDATED}/search`,
    auth: 'apiKey',
    tag: TAG,
    deprecated: true,
    summary:
      "Search the patient's consolidated data and C-CDA documents (all terms, typo-tolerant); returns a URL to a FHIR searchset bundle valid 60 s, absent when nothing matched",
    query: z.object({ query: z.string().max(1_000).optional() }),
    success: { status: 200, schema: searchResponse },
    async handle({ deps, account, params, query }) {
      return json(200, await searchPatientData(deps, account.id, params.id, query.query));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${CONSOLIDATED}/search/:searchId`,
    auth: 'signed',
    tag: TAG,
    deprecated: true,
    summary: 'Download a search result bundle (pre-signed URL from the search, valid 60 s)',
    success: { status: 200, schema: fhirBundleResponse, mediaType: 'application/fhir+json' },
    async handle({ deps, account, params }) {
      const stream = await searchResultStream(deps, account.id, uuidSchema.parse(params.searchId));
      return { status: 200, headers: { 'content-type': 'application/fhir+json' }, stream };
    },
  }),
];
