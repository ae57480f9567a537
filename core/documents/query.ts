/**
 * Document query (the legacy document flow; `POST/GET /medical/v1/document/query`). A
 * query asks the HIE network for the patient's documents, stores the new ones, sends
 * `medical.document-download`, converts the C-CDA documents into the consolidated store, and sends
 * `medical.document-conversion`. The work runs as one queued job per query, resumable at every step.
 */
import { DEFAULT_MAX_CONVERSION_BYTES, type CoreDeps } from '../deps.js';
import type { Account, DocumentQuery, DocumentRecord, Facility, Patient, ProgressCounts } from '../domain/types.js';
import { getPatient } from '../entities/patients.js';
import { CoreError, isCoreError } from '../errors.js';
import type { HieDocumentRef, HiePatientQuery } from '../ports/hie.port.js';
import type { JobLane } from '../ports/queue.port.js';
import type { StoragePort } from '../ports/storage.port.js';
import { nowIso } from '../time.js';
import { enqueueMessage } from '../webhooks/enqueue.js';
import { documentConversionMessage, documentDownloadMessage, toWebhookDocument, type MessageMetaInput } from '../webhooks/envelope.js';
import { validateMetadata } from '../../contract/metadata.js';
import { convertDocuments, type ReadyConversion } from './convert.js';
import { documentBlobKey, isCcdaMediaType, networkFileName } from './document-reference.js';
import { storeDocuments, type StoreDocumentOptions } from './store-document.js';
import { endHieSourcesOf } from '../network/sources.js';
import { newJob, runningOrStarted } from '../job-catalogue.js';

export interface StartDocumentQueryInput {
  patientId: string;
  facilityId?: string;
  /** Echoed as `meta.data` on the query's webhooks (validated here). */
  metadata?: unknown;
}

const PROCESSING: ProgressCounts = { status: 'processing', total: 0, successful: 0, errors: 0 };

export function isRunning(query: DocumentQuery): boolean {
  return query.download.status === 'processing' || query.convert.status === 'processing';
}

/** An opted-out patient takes no part in exchange through the networks. */
export function assertNotOptedOut(patient: Patient): void {
  if (patient.hieOptOut) {
    throw new CoreError('PATIENT_OPTED_OUT', 'The patient is opted out of HIE data exchange; opt them back in to query documents', {
      details: { patientId: patient.id },
    });
  }
}

/**
 * The facility a query runs under: the one given, which must be one of the patient's; otherwise the
 * patient's only facility (a patient of several must name one, as the public API asks).
 */
async function facilityFor(deps: Pick<CoreDeps, 'storage'>, patient: Patient, facilityId: string | undefined): Promise<Facility> {
  if (facilityId !== undefined) {
    const facility = await deps.storage.facilities.get(patient.accountId, facilityId);
    if (!facility) throw new CoreError('FACILITY_NOT_FOUND', 'No facility with this id in your account');
    if (!patient.facilityIds.includes(facility.id)) {
      throw new CoreError('VALIDATION_FAILED', 'facilityId: the patient does not receive care at this facility', { details: { field: 'facilityId' } });
    }
    return facility;
  }
  const facilities = patient.facilityIds;
  if (facilities.length === 1) {
    const facility = await deps.storage.facilities.get(patient.accountId, facilities[0]!);
    if (facility) return facility;
  }
  throw new CoreError('FACILITY_REQUIRED', `The patient is at ${facilities.length} facilities; pass facilityId to choose one`);
}

/**
 * Starts a document query for the patient, or returns the one still running (the network is asked once
 * at a time per patient; the public API answers the same way). Throws PATIENT_NOT_FOUND,
 * PATIENT_OPTED_OUT (nothing is recorded or queued), METADATA_INVALID, FACILITY_NOT_FOUND, FACILITY_REQUIRED.
 */
export async function startDocumentQuery(deps: CoreDeps, account: Account, input: StartDocumentQueryInput): Promise<DocumentQuery> {
  const metadata = validateMetadata(input.metadata);
  const patient = await getPatient(deps, account.id, input.patientId);
  assertNotOptedOut(patient);
  const facility = await facilityFor(deps, patient, input.facilityId);
  return beginQuery(deps, patient, facility.id, metadata, { lane: 'interactive' });
}

/**
 * For work that starts queries by itself (a bulk import starts a document query for each patient): starts
 * one for the patient at `facilityId` (one of theirs) in the background lane, recorded as the import's, or
 * returns the one running, and returns undefined for an opted-out patient, for whom nothing is recorded or
 * queued.
 */
export async function startDocumentQueryUnlessOptedOut(
  deps: CoreDeps,
  patient: Patient,
  options: { facilityId: string; metadata?: Record<string, string>; bulkRequestId?: string },
): Promise<DocumentQuery | undefined> {
  if (patient.hieOptOut) return undefined;
  return beginQuery(deps, patient, options.facilityId, validateMetadata(options.metadata), {
    lane: 'background',
    ...(options.bulkRequestId ? { bulkRequestId: options.bulkRequestId } : {}),
  });
}

/**
 * For a network query's hie source: the patient's running document query, or a new one at `facilityId`
 * (one of theirs) in the interactive lane, echoing `metadata`. The caller has checked the opt-out.
 */
export async function documentQueryForNetwork(deps: CoreDeps, patient: Patient, facilityId: string, metadata: Record<string, string> | undefined): Promise<DocumentQuery> {
  return beginQuery(deps, patient, facilityId, metadata, { lane: 'interactive' });
}

interface QueryOrigin {
  /** `interactive` when a person asked for the query; `background` when an import did. */
  lane: JobLane;
  bulkRequestId?: string;
}

async function beginQuery(
  deps: CoreDeps,
  patient: Patient,
  facilityId: string,
  metadata: Record<string, string> | undefined,
  origin: QueryOrigin,
): Promise<DocumentQuery> {
  const latest = await deps.storage.documentQueries.latestForPatient(patient.accountId, patient.id);
  // A person asking for a query still queued in the background lane moves it to the interactive one.
  return runningOrStarted(latest && isRunning(latest) ? latest : undefined, {
    make: (): DocumentQuery => {
      const now = nowIso(deps.clock);
      return {
        id: deps.ids.next(),
        accountId: patient.accountId,
        patientId: patient.id,
        facilityId,
        download: { ...PROCESSING },
        convert: { ...PROCESSING },
        ...(metadata && Object.keys(metadata).length > 0 ? { metadata } : {}),
        ...(origin.bulkRequestId ? { bulkRequestId: origin.bulkRequestId } : {}),
        createdAt: now,
        updatedAt: now,
      };
    },
    store: (query) => deps.storage.documentQueries.insert(query),
    enqueue: (query) => enqueueQueryJob(deps, query, origin.lane),
  });
}

async function enqueueQueryJob(deps: Pick<CoreDeps, 'queue'>, query: DocumentQuery, lane: JobLane): Promise<void> {
  await deps.queue.enqueue(newJob('documents.query', { accountId: query.accountId, queryId: query.id }, { lane, fairnessKey: query.accountId }));
}

/** The patient's latest document query, or undefined when none was ever started. */
export async function getDocumentQueryStatus(deps: Pick<CoreDeps, 'storage'>, accountId: string, patientId: string): Promise<DocumentQuery | undefined> {
  await getPatient(deps, accountId, patientId);
  return deps.storage.documentQueries.latestForPatient(accountId, patientId);
}

export function toHieQuery(patient: Patient): HiePatientQuery {
  return {
    patientId: patient.id,
    firstName: patient.firstName,
    lastName: patient.lastName,
    dob: patient.dob,
    genderAtBirth: patient.genderAtBirth,
    zips: [...new Set(patient.address.map((address) => address.zip))],
  };
}

function metaOf(deps: Pick<CoreDeps, 'ids' | 'clock'>, query: DocumentQuery): MessageMetaInput {
  return { messageId: deps.ids.next(), requestId: query.id, when: deps.clock.now(), ...(query.metadata ? { data: query.metadata } : {}) };
}

function patientEntryBase(query: DocumentQuery, patient: Patient | undefined) {
  return { patientId: query.patientId, ...(patient?.externalId ? { externalId: patient.externalId } : {}) };
}

/** The query's own documents among the patient's. */
function ofQuery(patientDocuments: readonly DocumentRecord[], query: Pick<DocumentQuery, 'id'>): DocumentRecord[] {
  return patientDocuments.filter((document) => document.queryId === query.id);
}

async function documentsOfQuery(storage: StoragePort, query: DocumentQuery): Promise<DocumentRecord[]> {
  return ofQuery(await storage.documents.listByPatient(query.accountId, query.patientId), query);
}

/**
 * Runs a document query to its end. Resumable: the download step records each document as it lands and
 * recognises documents already held (by their network identity), so a retried job fetches only what is
 * missing; each step's end commits together with its webhook, so no message is sent twice. The opt-out
 * is checked again before the network is asked anything, and before each document is fetched: a patient
 * who opted out after the start gets no network call.
 */
export async function runDocumentQuery(deps: CoreDeps, accountId: string, queryId: string): Promise<void> {
  let query = await deps.storage.documentQueries.get(accountId, queryId);
  if (!query || !isRunning(query)) return;
  let downloaded: Downloaded | undefined;
  if (query.download.status === 'processing') {
    downloaded = await downloadStep(deps, query);
    if (!downloaded) return;
    query = downloaded.query;
  }
  if (query.convert.status === 'processing') await conversionStep(deps, query, downloaded);
}

/**
 * What the download step hands the conversion step of the same job, so that step reads none of it again:
 * the query as the step ended it, the conversions made as documents landed, the patient as last read (its
 * external id goes in the conversion's message, as in the download's), and the patient's documents as the
 * step's commit left them.
 */
interface Downloaded {
  query: DocumentQuery;
  ready: ReadonlyMap<string, ReadyConversion>;
  patient: Patient;
  patientDocuments: readonly DocumentRecord[];
}

/**
 * Documents fetched before those fetched are recorded: their readings (search text and conversion) run on
 * the converter's threads meanwhile, and they are recorded together, in one transaction; few enough that
 * the bytes held while they wait stay small.
 */
export const READ_AHEAD = 4;

/**
 * Conversions made as documents land wait in memory for the query's conversion step, up to this much source
 * text per query; documents past it are converted by that step from storage, so a patient with hundreds of
 * documents never has all their resources held at once.
 */
const READY_BYTES_PER_QUERY = 8 * 1024 * 1024;

/** A fetched document on its way to being recorded, with its reading if one was started. */
interface Landing {
  ref: HieDocumentRef;
  fileName: string;
  bytes: Uint8Array;
  reading: Promise<{ text: string; conversion: ReadyConversion } | undefined>;
}

/**
 * The search text and conversion of a fetched C-CDA document, made together where the converter runs;
 * undefined when the converter cannot do both at once or is too busy (the document then goes the way of
 * any stored one: its text made as it is recorded, its conversion by the conversion step).
 */
async function readLanded(deps: Pick<CoreDeps, 'ccda'>, bytes: Uint8Array): Promise<{ text: string; conversion: ReadyConversion } | undefined> {
  if (!deps.ccda.read) return undefined;
  try {
    const { searchText, conversion } = await deps.ccda.read(new TextDecoder().decode(bytes));
    if (!conversion.ok) return { text: searchText, conversion: { problem: conversion.message } };
    return { text: searchText, conversion: 'bundle' in conversion ? { bundle: conversion.bundle } : { bundleJson: conversion.bundleJson } };
  } catch (error) {
    if (isCoreError(error) && error.code === 'RATE_LIMITED') return undefined;
    throw error;
  }
}

async function downloadStep(deps: CoreDeps, query: DocumentQuery): Promise<Downloaded | undefined> {
  const currentPatient = () => deps.storage.patients.get(query.accountId, query.patientId);
  let patient = await currentPatient();
  // A patient removed, or opted out since the start: the network is not asked anything.
  if (!patient || patient.hieOptOut) {
    await failDocumentQuery(deps, query.accountId, query.id, { patient });
    return undefined;
  }

  const refs = await deps.hie.findDocuments(toHieQuery(patient));
  // The patient's documents, read once and kept up to date with what this step records: they tell which of
  // the network's documents are held already, and are the state each recording moves the index's stamp
  // from. A document's network file name is the patient's own (it starts with the patient's id), so this is
  // the account-wide look-up by file name the step would otherwise make per document. Documents recorded
  // meanwhile by another worker of the same job (one whose lease was lost) are not seen here; the step's
  // commit reads the query's documents again, in its transaction, so its counts and message stay right.
  let patientDocuments: readonly DocumentRecord[] = refs.length > 0 ? await deps.storage.documents.listByPatient(query.accountId, query.patientId) : [];
  const held = new Set(patientDocuments.map((document) => document.fileName));
  const limit = deps.config?.maxConversionBytes ?? DEFAULT_MAX_CONVERSION_BYTES;
  const ready = new Map<string, ReadyConversion>();
  let readyBytes = 0;
  const landing: Landing[] = [];
  // Recorded together in the order fetched, once their readings are done (each text goes in with its record);
  // the last of them with the end of the step (`alongside`).
  const recordLanded = async <A>(alongside?: (tx: StoragePort) => Promise<A>): Promise<A | undefined> => {
    const batch = landing.splice(0);
    const reads = await Promise.all(batch.map(({ reading }) => reading));
    const recorded = await recordFetchedDocuments(deps, query, batch.map((landed, i) => ({ ...landed, text: reads[i]?.text })), patientDocuments, alongside);
    patientDocuments = [...patientDocuments, ...recorded.documents];
    recorded.documents.forEach(({ id, fileName }, i) => {
      held.add(fileName);
      const read = reads[i];
      if (read) ready.set(id, read.conversion);
    });
    return recorded.alongside;
  };
  let errors = 0;
  try {
    for (const [i, ref] of refs.entries()) {
      const fileName = networkFileName(patient.id, ref.networkDocumentId, ref.fileName);
      // Held already: fetched by this query before a retry, or by an earlier query (not sent again).
      if (held.has(fileName)) continue;
      patient = await currentPatient();
      if (!patient || patient.hieOptOut) {
        await recordLanded();
        await failDocumentQuery(deps, query.accountId, query.id, { patient });
        return undefined;
      }
      const fetched = await fetchDocument(deps, ref);
      if (!fetched) {
        errors++;
        continue;
      }
      const readable = isCcdaMediaType(ref.mimeType) && fetched.byteLength <= limit && readyBytes + fetched.byteLength <= READY_BYTES_PER_QUERY;
      if (readable) readyBytes += fetched.byteLength;
      const reading = readable ? readLanded(deps, fetched) : Promise.resolve(undefined);
      // Awaited in its turn; this keeps a failure of one not yet awaited from counting as unhandled meanwhile.
      reading.catch(() => undefined);
      landing.push({ ref, fileName, bytes: fetched, reading });
      // The last batch waits for the end of the step, to commit with it.
      if (landing.length >= READ_AHEAD && i < refs.length - 1) await recordLanded();
    }
  } catch (error) {
    // What landed before the failure is recorded, as if fetched one at a time: a retry does not fetch it again.
    await recordLanded();
    throw error;
  }

  // The patient as last read, for the message (a `const`: the closure below is typed by it).
  const downloaded = patient;
  // The step ends in the commit of its last documents: its progress and its message with them.
  const ended = await recordLanded(async (tx): Promise<{ query: DocumentQuery; patientDocuments: DocumentRecord[] } | undefined> => {
    // A second worker that took the job over (lost lease) may have ended the step already: one message.
    if ((await tx.documentQueries.get(query.accountId, query.id))?.download.status !== 'processing') return undefined;
    const all = await tx.documents.listByPatient(query.accountId, query.patientId);
    const documents = ofQuery(all, query);
    const download: ProgressCounts = {
      // Nothing could be fetched of what the network offered: the download failed.
      status: errors > 0 && documents.length === 0 ? 'failed' : 'completed',
      total: documents.length + errors,
      successful: documents.length,
      errors,
    };
    const updated: DocumentQuery = {
      ...query,
      download,
      convert: { ...query.convert, total: documents.filter((d) => isCcdaMediaType(d.mimeType)).length },
      updatedAt: nowIso(deps.clock),
    };
    await tx.documentQueries.update(updated);
    await enqueueMessage(
      tx,
      query.accountId,
      documentDownloadMessage(metaOf(deps, query), [
        { ...patientEntryBase(query, downloaded), type: 'document-download', status: download.status === 'failed' ? 'failed' : 'completed', documents: documents.map(toWebhookDocument) },
      ]),
    );
    return { query: updated, patientDocuments: all };
  });
  return ended ? { ...ended, ready, patient: downloaded } : undefined;
}

/** The bytes of one document, or undefined when the network no longer has it (counted as an error). */
async function fetchDocument(deps: Pick<CoreDeps, 'hie'>, ref: HieDocumentRef): Promise<Uint8Array | undefined> {
  try {
    return await deps.hie.retrieve(ref);
  } catch (error) {
    if (isCoreError(error) && error.code === 'DOCUMENT_NOT_FOUND') return undefined;
    throw error;
  }
}

/**
 * Stores fetched documents of the query (each with its search text when it was read already), the patient's
 * documents before them being `patientDocuments`; returns the documents recorded.
 */
async function recordFetchedDocuments<A>(
  deps: CoreDeps,
  query: DocumentQuery,
  fetched: readonly { ref: HieDocumentRef; fileName: string; bytes: Uint8Array; text: string | undefined }[],
  patientDocuments: readonly DocumentRecord[],
  alongside?: (tx: StoragePort) => Promise<A>,
): Promise<{ documents: DocumentRecord[]; alongside: A | undefined }> {
  const items: { document: DocumentRecord; options: StoreDocumentOptions }[] = [];
  for (const { ref, fileName, bytes, text } of fetched) {
    const id = deps.ids.next();
    const blobKey = documentBlobKey(query.accountId, id);
    const { size } = await deps.blob.put(blobKey, bytes, { contentType: ref.mimeType });
    const now = nowIso(deps.clock);
    const ccda = isCcdaMediaType(ref.mimeType);
    items.push({
      document: {
        id,
        accountId: query.accountId,
        patientId: query.patientId,
        queryId: query.id,
        source: 'hie',
        fileName,
        description: ref.description,
        status: 'current',
        indexed: now,
        mimeType: ref.mimeType,
        size,
        type: ref.type,
        organizationIdentifiers: ref.organizationIdentifiers,
        blobKey,
        conversionStatus: ccda ? 'processing' : 'not-applicable',
        createdAt: now,
      },
      options: { mode: 'insert', ccda: ccda ? bytes : undefined, ccdaText: text },
    });
  }
  const stored = await storeDocuments(deps, items, alongside, patientDocuments);
  return { documents: items.map(({ document }) => document), alongside: stored.alongside };
}

/**
 * Converts the query's documents and ends the step in the same commit: its progress, and its message. Run
 * after the download step of the same job, it takes what that step read (`downloaded`); resumed on its own
 * (a retried job), it reads the patient and their documents.
 */
async function conversionStep(deps: CoreDeps, query: DocumentQuery, downloaded: Downloaded | undefined): Promise<void> {
  const patient = downloaded ? downloaded.patient : await deps.storage.patients.get(query.accountId, query.patientId);
  const patientDocuments = downloaded?.patientDocuments ?? (await deps.storage.documents.listByPatient(query.accountId, query.patientId));
  await convertDocuments(deps, ofQuery(patientDocuments, query), downloaded?.ready, async (tx, converted) => {
    const documents = converted.filter((d) => isCcdaMediaType(d.mimeType));
    const successful = documents.filter((d) => d.conversionStatus === 'completed').length;
    const errors = documents.filter((d) => d.conversionStatus === 'failed').length;
    const updated: DocumentQuery = {
      ...query,
      convert: { status: 'completed', total: documents.length, successful, errors },
      updatedAt: nowIso(deps.clock),
    };
    if ((await tx.documentQueries.get(query.accountId, query.id))?.convert.status !== 'processing') return;
    await tx.documentQueries.update(updated);
    // A network query whose hie source runs as this query ends that source with it.
    await endHieSourcesOf(deps, tx, updated, patient);
    await enqueueMessage(
      tx,
      query.accountId,
      // A document that fails to convert shows as `failed` here; the query itself completes.
      documentConversionMessage(metaOf(deps, query), [
        { ...patientEntryBase(query, patient), type: 'document-conversion', status: errors > 0 ? 'failed' : 'completed' },
      ]),
    );
  }, patientDocuments);
}

/**
 * Ends a query that cannot go on (patient opted out or removed, or the last attempt failed): the steps
 * still running become `failed` and each sends its message with status `failed`, so a customer waiting
 * for the pair of messages is never left waiting. Documents already fetched by the query stay listed.
 * The query is read here, as it is now. `known.patient` is the query's patient as the caller just read it
 * (undefined: removed), for the messages' external id; without `known` it is read here.
 */
export async function failDocumentQuery(deps: CoreDeps, accountId: string, queryId: string, known?: { patient: Patient | undefined }): Promise<void> {
  const current = await deps.storage.documentQueries.get(accountId, queryId);
  if (!current || !isRunning(current)) return;
  const patient = known ? known.patient : await deps.storage.patients.get(accountId, current.patientId);
  const documents = await documentsOfQuery(deps.storage, current);
  const failedStep = (step: ProgressCounts): ProgressCounts => (step.status === 'processing' ? { ...step, status: 'failed' } : step);
  const updated: DocumentQuery = { ...current, download: failedStep(current.download), convert: failedStep(current.convert), updatedAt: nowIso(deps.clock) };
  await deps.storage.transaction(async (tx) => {
    const stored = await tx.documentQueries.get(current.accountId, current.id);
    if (!stored || stored.download.status !== current.download.status || stored.convert.status !== current.convert.status) return;
    await tx.documentQueries.update(updated);
    await endHieSourcesOf(deps, tx, updated, patient);
    const base = patientEntryBase(current, patient);
    if (current.download.status === 'processing') {
      await enqueueMessage(
        tx,
        current.accountId,
        documentDownloadMessage(metaOf(deps, current), [{ ...base, type: 'document-download', status: 'failed', documents: documents.map(toWebhookDocument) }]),
      );
    }
    await enqueueMessage(tx, current.accountId, documentConversionMessage(metaOf(deps, current), [{ ...base, type: 'document-conversion', status: 'failed' }]));
  });
}
