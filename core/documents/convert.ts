import { DEFAULT_MAX_CONVERSION_BYTES, type CoreConfig, type CoreDeps } from '../deps.js';
import type { DocumentRecord } from '../domain/types.js';
import { CoreError, isCoreError } from '../errors.js';
import type { FhirBundle, FhirResource, FoldDocument, FoldOutcome } from '../ports/ccda.port.js';
import type { StoragePort } from '../ports/storage.port.js';
import { nowIso } from '../time.js';
import { foldDocuments } from './fold.js';
import { applyIndexChange, dataStamp, searchDocumentOf } from './patient-index.js';

type ConvertDeps = Pick<CoreDeps, 'storage' | 'blob' | 'ccda' | 'search' | 'clock'> & { config?: Pick<CoreConfig, 'maxConversionBytes'> };

/** Why a document did not convert, in words fit for a status (never the document's content). */
function conversionProblem(error: unknown): string {
  if (isCoreError(error)) return error.message;
  // A library error may quote the document it choked on: its text is withheld.
  return 'The converter failed on this document';
}

const sizeText = (bytes: number) => (bytes >= 1024 * 1024 ? `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB` : `${Math.ceil(bytes / 1024)} KB`);

/** One document's conversion: its bundle (or the JSON text of it), or why there is none. */
type Converted = { document: DocumentRecord } & ReadyConversion;

/**
 * A document's conversion made already, as it landed (with its search text, see the port's `read`): the
 * converter's bundle (or the JSON text of it), or why there is none, in the words a failed conversion is
 * recorded with.
 */
export type ReadyConversion = { bundle: FhirBundle } | { bundleJson: string } | { problem: string };

async function convertFile(deps: Pick<ConvertDeps, 'blob' | 'ccda' | 'config'>, document: DocumentRecord, ready: ReadyConversion | undefined): Promise<Converted> {
  if (ready) return { document, ...ready };
  const limit = deps.config?.maxConversionBytes ?? DEFAULT_MAX_CONVERSION_BYTES;
  // Checked before the file is read: its size is known from when it was stored.
  if (document.size > limit) {
    return { document, problem: `The document is ${sizeText(document.size)}; documents over ${sizeText(limit)} are stored but not converted` };
  }
  const bytes = await deps.blob.get(document.blobKey);
  if (!bytes) return { document, problem: 'The document file is no longer stored' };
  if (bytes.byteLength > limit) {
    return { document, problem: `The document is ${sizeText(bytes.byteLength)}; documents over ${sizeText(limit)} are stored but not converted` };
  }
  try {
    return { document, bundle: await deps.ccda.convert(new TextDecoder().decode(bytes)) };
  } catch (error) {
    // A converter too busy to take the document says nothing about it: the job is retried later.
    if (isCoreError(error) && error.code === 'RATE_LIMITED') throw error;
    return { document, problem: conversionProblem(error) };
  }
}

/**
 * Converts one stored C-CDA document whose conversion is `processing` to FHIR, folds the resources into
 * the patient's consolidated store (consolidate.ts), keeps the search index current, and marks the
 * document `completed`. A document the converter cannot read is marked `failed` with the reason, and that
 * is all: it never fails the query it belongs to. Storage errors, and a converter refusing work with
 * RATE_LIMITED, are thrown, for the job to be retried. Idempotent: a document whose conversion is not
 * `processing` is returned unchanged, and running it again after a crash folds the same resources again,
 * which changes nothing.
 */
export async function convertDocument(deps: ConvertDeps, document: DocumentRecord): Promise<DocumentRecord> {
  const [converted] = await convertDocuments(deps, [document]);
  return converted!;
}

/**
 * `convertDocument` for several documents of ONE patient at once (a document query's), with the same
 * outcome as converting them one after the other in the given order, for a fraction of the storage work:
 * the files are converted side by side (the converter may use several threads), the patient's documents
 * and resources are read once, the resources of every document are folded in order (`foldDocuments`, on
 * the converter's thread when it offers `fold`), and one
 * transaction writes the net change with every document's new status; the search index gets one change.
 * Returns the documents as they are afterwards, in the given order. `ready` holds conversions made
 * already, by document id (those made as the documents landed); the others are converted here.
 * `alongside` is more of the caller's writes, made in the same transaction with the documents as they are
 * afterwards (a query's progress and its webhook commit with its conversions); with nothing to convert,
 * in a transaction of its own. `patientDocuments` is the patient's documents as the caller last read them,
 * when it holds them, so they are not read again (see `storeDocuments`); without it they are read here.
 */
export async function convertDocuments(
  deps: ConvertDeps,
  documents: readonly DocumentRecord[],
  ready: ReadonlyMap<string, ReadyConversion> = new Map(),
  alongside?: (tx: StoragePort, documents: DocumentRecord[]) => Promise<void>,
  patientDocuments?: readonly DocumentRecord[],
): Promise<DocumentRecord[]> {
  const pending = documents.filter((document) => document.conversionStatus === 'processing');
  if (pending.length === 0) {
    if (alongside) await deps.storage.transaction((tx) => alongside(tx, [...documents]));
    return [...documents];
  }
  const { accountId, patientId } = pending[0]!;
  if (pending.some((document) => document.accountId !== accountId || document.patientId !== patientId)) {
    throw new CoreError('INTERNAL', 'convertDocuments takes the documents of one patient');
  }

  const settled = await Promise.allSettled(pending.map((document) => convertFile(deps, document, ready.get(document.id))));
  const refused = settled.find((outcome) => outcome.status === 'rejected');
  if (refused) throw (refused as PromiseRejectedResult).reason;
  const conversions = settled.map((outcome) => (outcome as PromiseFulfilledResult<Converted>).value);

  // For the index's stamps only: an older list costs a rebuild at the next search, never a wrong index.
  const documentsBefore = patientDocuments ?? (await deps.storage.documents.listByPatient(accountId, patientId));
  const updated = new Map<string, DocumentRecord>();
  const folded: FoldDocument[] = [];
  for (const conversion of conversions) {
    if ('problem' in conversion) {
      updated.set(conversion.document.id, { ...conversion.document, conversionStatus: 'failed', conversionError: conversion.problem });
      continue;
    }
    const { document, ...bundle } = conversion;
    folded.push({ documentId: document.id, ...bundle });
    const completed: DocumentRecord = { ...document, conversionStatus: 'completed' };
    delete completed.conversionError;
    updated.set(completed.id, completed);
  }
  const fold = async (): Promise<FoldOutcome> => {
    const stored = await deps.storage.fhirResources.listByPatientJson(accountId, patientId);
    const request = { accountId, patientId, now: nowIso(deps.clock), stored, documents: folded };
    // Where the converter runs when it can (the records cross as JSON text both ways), else here.
    return deps.ccda.fold ? deps.ccda.fold(request) : foldDocuments(request);
  };
  const { changed, removed } = folded.length === 0 ? { changed: [], removed: [] } : await fold();

  const after = documents.map((document) => updated.get(document.id) ?? document);
  await deps.storage.transaction(async (tx) => {
    if (removed.length > 0) await tx.fhirResources.removeMany(accountId, patientId, removed);
    if (changed.length > 0) await tx.fhirResources.putManyJson(changed);
    await tx.documents.updateMany([...updated.values()]);
    await alongside?.(tx, after);
  });
  // Parsed only for an index or snapshot kept current: in an import's journey nobody has searched yet.
  let parsed: FhirResource[] | undefined;
  const resources = () => (parsed ??= changed.map((record) => JSON.parse(record.resourceJson) as FhirResource));
  await applyIndexChange(deps, accountId, patientId, {
    before: dataStamp(documentsBefore),
    after: dataStamp(documentsBefore.map((document) => updated.get(document.id) ?? document)),
    // Our documents' DocumentReferences are indexed with the document's text, which only they carry.
    upsert: () =>
      resources()
        .filter((resource) => !(resource.resourceType === 'DocumentReference' && documentsBefore.some((d) => d.id === resource.id)))
        .flatMap((resource) => searchDocumentOf(resource) ?? []),
    resources,
    remove: removed.map(({ resourceType, id }) => `${resourceType}/${id}`),
  });
  return after;
}
