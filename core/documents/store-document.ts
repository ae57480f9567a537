import type { CoreDeps } from '../deps.js';
import type { DocumentRecord, FhirResourceRecord } from '../domain/types.js';
import { CoreError } from '../errors.js';
import type { FhirResource } from '../ports/ccda.port.js';
import type { StoragePort } from '../ports/storage.port.js';
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
  const [record] = (await storeDocuments(deps, [{ document, options }])).records;
  return record!;
}

/**
 * `storeDocument` for several documents of ONE patient, with the same outcome as storing them one after
 * the other in the given order: one transaction records them all, and the index gets one change.
 * `alongside` is more of the caller's writes, made in the same transaction after the documents (with none
 * to store, in a transaction of its own); its answer is returned with the records. `patientDocuments` is
 * the patient's documents as the caller last read them, when it holds them (a document query's download
 * step does), so they are not read again; without it they are read here.
 */
export async function storeDocuments<A = undefined>(
  deps: StoreDeps,
  items: readonly { document: DocumentRecord; options: StoreDocumentOptions }[],
  alongside?: (tx: StoragePort) => Promise<A>,
  patientDocuments?: readonly DocumentRecord[],
): Promise<{ records: FhirResourceRecord[]; alongside: A | undefined }> {
  if (items.length === 0) return { records: [], alongside: alongside ? await deps.storage.transaction(alongside) : undefined };
  const { accountId, patientId } = items[0]!.document;
  if (items.some(({ document }) => document.accountId !== accountId || document.patientId !== patientId)) {
    throw new CoreError('INTERNAL', 'storeDocuments takes the documents of one patient');
  }
  // Before anything is written: a document recorded is then always indexed with its text.
  const texts = await Promise.all(items.map(({ options }) => (options.ccdaText !== undefined ? options.ccdaText : documentText(deps, options.ccda))));
  // They only make the index's stamps. A list older than the stored state (another write landed since) costs
  // a rebuild, never a wrong index: a stamp is a digest of the documents, so one made from it differs from
  // the stored state's, and the next search rebuilds the patient's index.
  const documentsBefore = patientDocuments ?? (await deps.storage.documents.listByPatient(accountId, patientId));
  const stored = new Set(items.map(({ document }) => document.id));
  const before = dataStamp(documentsBefore);
  const after = dataStamp([...documentsBefore.filter((d) => !stored.has(d.id)), ...items.map(({ document }) => document)]);
  const updatedAt = nowIso(deps.clock);
  const records = items.map(({ document, options }): FhirResourceRecord => ({
    accountId,
    patientId,
    resourceType: 'DocumentReference',
    id: document.id,
    resource: documentReferenceOf(document, options.given),
    sourceDocumentIds: [document.id],
    updatedAt,
  }));
  const answer = await deps.storage.transaction(async (tx) => {
    // In the given order, a statement for each run of documents stored the same way.
    for (const run of runsOf(items, ({ options }) => options.mode)) {
      const documents = run.map(({ document }) => document);
      if (run[0]!.options.mode === 'insert') await tx.documents.insertMany(documents);
      else await tx.documents.updateMany(documents);
    }
    await tx.fhirResources.putMany(records);
    return alongside?.(tx);
  });
  await applyIndexChange(deps, accountId, patientId, {
    before,
    after,
    upsert: () => records.flatMap((record, i) => searchDocumentOf(record.resource as FhirResource, texts[i]) ?? []),
    resources: () => records.map((record) => record.resource as FhirResource),
    remove: [],
  });
  return { records, alongside: answer };
}

/** The items cut into runs of consecutive items with the same `kind`, in order. */
function runsOf<T>(items: readonly T[], kind: (item: T) => string): T[][] {
  const runs: T[][] = [];
  for (const item of items) {
    const last = runs[runs.length - 1];
    if (last && kind(last[0]!) === kind(item)) last.push(item);
    else runs.push([item]);
  }
  return runs;
}
