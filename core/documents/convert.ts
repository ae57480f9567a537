import type { CoreDeps } from '../deps.js';
import type { DocumentRecord } from '../domain/types.js';
import { isCoreError } from '../errors.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { repairText } from '../text.js';
import { nowIso } from '../time.js';
import { consolidate } from './consolidate.js';
import { applyIndexChange, dataStamp, searchDocumentOf } from './patient-index.js';

type ConvertDeps = Pick<CoreDeps, 'storage' | 'blob' | 'ccda' | 'search' | 'clock'>;

/** Why a document did not convert, in words fit for a status (never the document's content). */
function conversionProblem(error: unknown): string {
  if (isCoreError(error)) return error.message;
  // A library error may quote the document it choked on: its text is withheld.
  return 'The converter failed on this document';
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
  if (document.conversionStatus !== 'processing') return document;
  const { accountId, patientId } = document;

  const bytes = await deps.blob.get(document.blobKey);
  let resources: FhirResource[] | undefined;
  let problem: string | undefined;
  if (!bytes) {
    problem = 'The document file is no longer stored';
  } else {
    try {
      const bundle = await deps.ccda.convert(new TextDecoder().decode(bytes));
      resources = (bundle.entry ?? []).flatMap((entry) => (entry.resource ? [repairText(entry.resource)] : []));
    } catch (error) {
      // A converter too busy to take the document says nothing about it: the job is retried later.
      if (isCoreError(error) && error.code === 'RATE_LIMITED') throw error;
      problem = conversionProblem(error);
    }
  }

  const documentsBefore = await deps.storage.documents.listByPatient(accountId, patientId);
  const stampOf = (updated: DocumentRecord) => dataStamp(documentsBefore.map((d) => (d.id === updated.id ? updated : d)));
  const before = dataStamp(documentsBefore);

  if (!resources) {
    const failed: DocumentRecord = { ...document, conversionStatus: 'failed', conversionError: problem };
    await deps.storage.documents.update(failed);
    await applyIndexChange(deps, accountId, patientId, { before, after: stampOf(failed), upsert: [], resources: [], remove: [] });
    return failed;
  }

  const existing = await deps.storage.fhirResources.listByPatient(accountId, patientId);
  const result = consolidate({ accountId, patientId, now: nowIso(deps.clock), existing, incoming: { documentId: document.id, resources } });
  const completed: DocumentRecord = { ...document, conversionStatus: 'completed' };
  delete completed.conversionError;
  await deps.storage.transaction(async (tx) => {
    if (result.removed.length > 0) await tx.fhirResources.removeMany(accountId, patientId, result.removed);
    if (result.changed.length > 0) await tx.fhirResources.putMany(result.changed);
    await tx.documents.update(completed);
  });
  await applyIndexChange(deps, accountId, patientId, {
    before,
    after: stampOf(completed),
    // Our documents' DocumentReferences are indexed with the document's text, which only they carry.
    upsert: result.changed
      .filter((record) => !(record.resourceType === 'DocumentReference' && documentsBefore.some((d) => d.id === record.id)))
      .flatMap((record) => searchDocumentOf(record.resource as FhirResource) ?? []),
    resources: result.changed.map((record) => record.resource as FhirResource),
    remove: result.removed.map(({ resourceType, id }) => `${resourceType}/${id}`),
  });
  return completed;
}
