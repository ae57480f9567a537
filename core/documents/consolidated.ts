/**
 * Consolidated data (`POST/GET /medical/v1/patient/{id}/consolidated/query`,
 * `GET /medical/v1/patient/{id}/consolidated`): the patient's deduplicated FHIR resources, filtered, as a
 * file in the requested format whose URL comes in `medical.consolidated-data` (Consolidated data
 * message), or at once as a Bundle.
 *
 * One query per patient at a time: starting one while another runs returns the
 * running one, as the public API does, so a client that retries its start gets the same requestId.
 */
import type { CoreDeps } from '../deps.js';
import type { Account, ConsolidatedFilters, ConsolidatedQuery, ConversionType, Patient } from '../domain/types.js';
import { getPatient } from '../entities/patients.js';
import { CoreError } from '../errors.js';
import type { FhirBundle, FhirResource } from '../ports/ccda.port.js';
import type { RenderContext } from '../ports/renderer.port.js';
import { issueSignedUrl } from '../signed-urls.js';
import { MINUTE_MS, nowIso } from '../time.js';
import { enqueueMessage } from '../webhooks/enqueue.js';
import { consolidatedDataMessage, toWebhookFilters } from '../webhooks/envelope.js';
import { validateMetadata } from '../../contract/metadata.js';
import { filterResources, resourceTypesOf } from './filters.js';
import { gzip } from './gzip.js';
import { inRenderSlot } from './render-slots.js';
import { patientDisplayName, patientReference, patientResourceOf } from './patient-resource.js';
import { newJob, runningOrStarted } from '../job-catalogue.js';
import { requestTo } from '../../contract/endpoints.js';

/** Consolidated attachment URLs are valid 10 minutes. */
export const CONSOLIDATED_URL_VALIDITY_MS = 10 * MINUTE_MS;

export const CONSOLIDATED_FILES = {
  'data.json': 'application/json',
  'data.json.gz': 'application/gzip',
  'data.html': 'text/html; charset=utf-8',
  'data.pdf': 'application/pdf',
} as const;
export type ConsolidatedFile = keyof typeof CONSOLIDATED_FILES;

const CONVERSION_TYPES: readonly ConversionType[] = ['json', 'html', 'pdf'];
const RESOURCE_NAME = /^[A-Z][A-Za-z]{1,63}$/;

export interface ConsolidatedRequest extends ConsolidatedFilters {
  conversionType?: string;
}

/**
 * The filters as given, checked: `resources` is a comma-separated list of FHIR resource type names
 * (case-sensitive), dates are real `YYYY-MM-DD` days with dateFrom not after dateTo.
 * Throws VALIDATION_FAILED naming the parameter.
 */
export function checkFilters(input: ConsolidatedFilters): ConsolidatedFilters {
  const filters: ConsolidatedFilters = {};
  const types = resourceTypesOf(input.resources);
  if (types) {
    const wrong = [...types].find((name) => !RESOURCE_NAME.test(name));
    if (wrong !== undefined) {
      throw new CoreError('VALIDATION_FAILED', `resources: "${wrong.slice(0, 64)}" is not a FHIR resource type name (e.g. Condition,Observation)`, {
        details: { field: 'resources' },
      });
    }
    filters.resources = [...types].join(',');
  }
  if (input.dateFrom) filters.dateFrom = input.dateFrom;
  if (input.dateTo) filters.dateTo = input.dateTo;
  filterResources([], filters);
  return filters;
}

function checkConversionType(value: string | undefined): ConversionType {
  if (value === undefined || value === '') return 'json';
  const type = value.toLowerCase() as ConversionType;
  if (!CONVERSION_TYPES.includes(type)) {
    throw new CoreError('VALIDATION_FAILED', 'conversionType: must be json, html or pdf', { details: { field: 'conversionType' } });
  }
  return type;
}

/**
 * Starts a consolidated data query, or returns the patient's running one. Throws PATIENT_NOT_FOUND,
 * VALIDATION_FAILED (filters, conversionType), METADATA_INVALID.
 */
export async function startConsolidatedQuery(
  deps: CoreDeps,
  account: Account,
  input: { patientId: string; request: ConsolidatedRequest; metadata?: unknown },
): Promise<ConsolidatedQuery> {
  const metadata = validateMetadata(input.metadata);
  const conversionType = checkConversionType(input.request.conversionType);
  const filters = checkFilters(input.request);
  const patient = await getPatient(deps, account.id, input.patientId);
  const [running] = await deps.storage.consolidatedQueries.listProcessing(account.id, patient.id);
  return runningOrStarted(running, {
    make: (): ConsolidatedQuery => {
      const now = nowIso(deps.clock);
      return {
        id: deps.ids.next(),
        accountId: account.id,
        patientId: patient.id,
        status: 'processing',
        filters,
        conversionType,
        ...(metadata && Object.keys(metadata).length > 0 ? { metadata } : {}),
        createdAt: now,
        updatedAt: now,
      };
    },
    store: (query) => deps.storage.consolidatedQueries.insert(query),
    enqueue: (query) => enqueueConsolidatedJob(deps, query),
  });
}

async function enqueueConsolidatedJob(deps: Pick<CoreDeps, 'queue'>, query: ConsolidatedQuery): Promise<void> {
  await deps.queue.enqueue(newJob('documents.consolidated', { accountId: query.accountId, queryId: query.id }, { fairnessKey: query.accountId }));
}

/** The patient's consolidated queries, newest first. */
export async function listConsolidatedQueries(deps: Pick<CoreDeps, 'storage'>, accountId: string, patientId: string): Promise<ConsolidatedQuery[]> {
  await getPatient(deps, accountId, patientId);
  return deps.storage.consolidatedQueries.listByPatient(accountId, patientId);
}

export async function getConsolidatedQuery(deps: Pick<CoreDeps, 'storage'>, accountId: string, patientId: string, queryId: string): Promise<ConsolidatedQuery> {
  const query = await deps.storage.consolidatedQueries.get(accountId, queryId);
  if (!query || query.patientId !== patientId) throw new CoreError('NOT_FOUND', 'No consolidated query with this id for this patient');
  return query;
}

/**
 * The patient's consolidated resources that pass the filters, our Patient first. Nothing at all when no
 * other resource passes (no data means an empty bundle); the Patient is left out when
 * `resources` is given without it.
 */
export async function consolidatedResources(deps: Pick<CoreDeps, 'storage'>, patient: Patient, filters: ConsolidatedFilters): Promise<FhirResource[]> {
  const types = resourceTypesOf(filters.resources);
  const records = await deps.storage.fhirResources.listByPatient(patient.accountId, patient.id, types ? [...types] : undefined);
  const data = filterResources(
    records.map((record) => record.resource as FhirResource),
    filters,
  );
  if (data.length === 0) return [];
  return !types || types.has('Patient') ? [patientResourceOf(patient), ...data] : data;
}

/** What a rendering of the patient's consolidated data says it is, made now. */
export function medicalRecordContext(deps: Pick<CoreDeps, 'clock'>, patient: Patient): RenderContext {
  const patientName = patientDisplayName(patient);
  return { kind: 'medical-record', title: `Medical record of ${patientName}`, patientName, generatedAt: deps.clock.now() };
}

export function bundleOf(resources: readonly FhirResource[], type: 'collection' | 'searchset'): FhirBundle & { total: number } {
  return { resourceType: 'Bundle', type, total: resources.length, entry: resources.map((resource) => ({ resource })) };
}

/** `GET /patient/{id}/consolidated`: the same data as a query's file, at once, as a searchset Bundle. */
export async function getPatientConsolidated(deps: Pick<CoreDeps, 'storage'>, accountId: string, patientId: string, filters: ConsolidatedFilters) {
  const checked = checkFilters(filters);
  const patient = await getPatient(deps, accountId, patientId);
  return bundleOf(await consolidatedResources(deps, patient, checked), 'searchset');
}

export function consolidatedFilePath(query: Pick<ConsolidatedQuery, 'patientId' | 'id'>, file: ConsolidatedFile): string {
  return requestTo('downloadConsolidatedData', { id: query.patientId, requestId: query.id, file }).path;
}

export function consolidatedBlobKey(query: Pick<ConsolidatedQuery, 'accountId' | 'id'>, file: ConsolidatedFile): string {
  return `${query.accountId}/consolidated/${query.id}/${file}`;
}

/**
 * A file of a consolidated query (`GET .../consolidated/{requestId}/{file}`): its bytes as a stream and
 * its media type. Throws NOT_FOUND for a query that is not the patient's, FILE_NOT_FOUND for a name the
 * query does not write or a file not (or no longer) there.
 */
export async function consolidatedQueryFile(
  deps: Pick<CoreDeps, 'storage' | 'blob'>,
  accountId: string,
  patientId: string,
  queryId: string,
  file: string,
): Promise<{ stream: AsyncIterable<Uint8Array>; contentType: string; file: ConsolidatedFile }> {
  if (!(file in CONSOLIDATED_FILES)) throw new CoreError('FILE_NOT_FOUND', 'No such file');
  const name = file as ConsolidatedFile;
  const query = await getConsolidatedQuery(deps, accountId, patientId, queryId);
  const stream = await deps.blob.stream(consolidatedBlobKey(query, name));
  if (!stream) throw new CoreError('FILE_NOT_FOUND', 'No such file for this query');
  return { stream, contentType: CONSOLIDATED_FILES[name], file: name };
}

/**
 * The job of a consolidated query: writes the file(s), then completes the query and stores its message
 * in one transaction. Idempotent: a query no longer `processing` is left alone, and files are rewritten
 * whole. The message's bundle holds one DocumentReference whose attachments are the data (json with a
 * gzip copy, html or pdf), or no entry when the patient has no data passing the filters.
 */
export async function runConsolidatedQuery(deps: CoreDeps, accountId: string, queryId: string): Promise<void> {
  const query = await deps.storage.consolidatedQueries.get(accountId, queryId);
  if (!query || query.status !== 'processing') return;
  const patient = await deps.storage.patients.get(accountId, query.patientId);
  if (!patient) {
    await failConsolidatedQuery(deps, query);
    return;
  }
  const data = await consolidatedResources(deps, patient, query.filters);
  const attachments: { contentType: string; url: string; title: string }[] = [];
  if (data.length > 0) {
    const bundle = bundleOf(data, 'collection');
    const files: [ConsolidatedFile, Uint8Array][] = [];
    if (query.conversionType === 'json') {
      const json = new TextEncoder().encode(JSON.stringify(bundle));
      files.push(['data.json', json], ['data.json.gz', await gzip(deps.renderer, json)]);
    } else {
      const format = query.conversionType;
      const context = medicalRecordContext(deps, patient);
      files.push([`data.${format}`, await inRenderSlot(deps, () => deps.renderer.render(bundle, format, context), 'job')]);
    }
    for (const [file, bytes] of files) {
      const key = consolidatedBlobKey(query, file);
      await deps.blob.put(key, bytes, { contentType: CONSOLIDATED_FILES[file] });
      const { url, expiresAt } = issueSignedUrl(deps, { method: 'GET', path: consolidatedFilePath(query, file), accountId }, CONSOLIDATED_URL_VALIDITY_MS);
      attachments.push({ contentType: CONSOLIDATED_FILES[file].split(';')[0]!, url, title: file });
      // Nobody can fetch the file once its URL has expired: it is deleted a while after.
      // Housekeeping: nobody waits for it.
      await deps.queue.enqueue(newJob('documents.delete-blob', { key }, { runAt: new Date(expiresAt.getTime() + CONSOLIDATED_URL_VALIDITY_MS).toISOString(), lane: 'background' }));
    }
  }
  await finishConsolidatedQuery(deps, query, patient, 'completed', attachments);
}

/** Ends a query that cannot complete (patient removed, last attempt failed) with a `failed` message. */
export async function failConsolidatedQuery(deps: CoreDeps, query: ConsolidatedQuery): Promise<void> {
  const current = await deps.storage.consolidatedQueries.get(query.accountId, query.id);
  if (!current || current.status !== 'processing') return;
  const patient = await deps.storage.patients.get(query.accountId, query.patientId);
  await finishConsolidatedQuery(deps, current, patient, 'failed', []);
}

async function finishConsolidatedQuery(
  deps: CoreDeps,
  query: ConsolidatedQuery,
  patient: Patient | undefined,
  status: 'completed' | 'failed',
  attachments: { contentType: string; url: string; title: string }[],
): Promise<void> {
  const now = deps.clock.now();
  const entry =
    attachments.length === 0
      ? []
      : [
          {
            resource: {
              resourceType: 'DocumentReference',
              id: query.id,
              status: 'current',
              type: { text: 'Consolidated data' },
              date: now.toISOString(),
              subject: { reference: patientReference(query.patientId) },
              content: attachments.map((attachment) => ({ attachment })),
            },
          },
        ];
  const message = consolidatedDataMessage(
    { messageId: deps.ids.next(), requestId: query.id, when: now, ...(query.metadata ? { data: query.metadata } : {}) },
    [
      {
        patientId: query.patientId,
        ...(patient?.externalId ? { externalId: patient.externalId } : {}),
        status,
        filters: toWebhookFilters(query.filters),
        bundle: { resourceType: 'Bundle', type: 'collection', total: entry.length, entry },
      },
    ],
  );
  await deps.storage.transaction(async (tx) => {
    // Ended already by another worker that took the job over: one message only.
    if ((await tx.consolidatedQueries.get(query.accountId, query.id))?.status !== 'processing') return;
    await tx.consolidatedQueries.update({ ...query, status, updatedAt: now.toISOString() });
    await enqueueMessage(tx, query.accountId, message);
  });
}
