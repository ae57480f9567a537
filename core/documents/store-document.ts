import type { CoreDeps } from '../deps.js';
import type { DocumentRecord, FhirResourceRecord } from '../domain/types.js';
import { nowIso } from '../time.js';
import { documentReferenceOf } from './document-reference.js';
import { applyIndexChange, dataStamp, documentText, searchDocumentOf, type DocumentTextDeps } from './patient-index.js';

type StoreDeps = Pick<CoreDeps, 'storage' | 'search' | 'clock'> & DocumentTextDeps;

export interface StoreDocumentOptions {
  /** `insert` for a new document (network), `update` for one recorded before its file came (upload). */
  mode: 'insert' | 'update';
  /**
   * The C-CDA document's bytes, whose text finds its DocumentReference in search; absent for other files.
   * A document past the conversion size limit is found by its description and file name only: its text
   * is not read, so memory stays bounded by the limit, not by what was uploaded.
   */
  ccda?: Uint8Array;
  /** The search text of `ccda`, when it was made already (read together with its conversion): not made again. */
  ccdaText?: string;
  /** The customer's own DocumentReference (uploads). */
  given?: Record<string, unknown>;
}

/**
 * Records a document whose file is now stored: the DocumentRecord and its FHIR DocumentReference commit
 * together, then the DocumentReference is indexed with the document's text (C-CDA documents are
 * included in search). From here on it is listed, downloadable and searchable.
 */
export async function storeDocument(deps: StoreDeps, document: DocumentRecord, options: StoreDocumentOptions): Promise<FhirResourceRecord> {
  const { accountId, patientId } = document;
  // Before anything is written: a document recorded is then always indexed with its text.
  const text = options.ccdaText ?? (await documentText(deps, options.ccda));
  const documentsBefore = await deps.storage.documents.listByPatient(accountId, patientId);
  const before = dataStamp(documentsBefore);
  const after = dataStamp([...documentsBefore.filter((d) => d.id !== document.id), document]);
  const resource = documentReferenceOf(document, options.given);
  const record: FhirResourceRecord = {
    accountId,
    patientId,
    resourceType: 'DocumentReference',
    id: document.id,
    resource,
    sourceDocumentIds: [document.id],
    updatedAt: nowIso(deps.clock),
  };
  await deps.storage.transaction(async (tx) => {
    if (options.mode === 'insert') await tx.documents.insert(document);
    else await tx.documents.update(document);
    await tx.fhirResources.putMany([record]);
  });
  const entry = searchDocumentOf(resource, text);
  await applyIndexChange(deps, accountId, patientId, { before, after, upsert: entry ? [entry] : [], resources: [resource], remove: [] });
  return record;
}
