/**
 * FHIR data that does not arrive as a C-CDA document (a customer's own resources, the answers of the
 * pharmacy and laboratory networks) is kept the way documents are: the resources are stored as one FHIR
 * Bundle file, a document of the patient (listed, downloadable, the provenance of every resource folded
 * from it), and folded into the consolidated store with the same deduplication as converted documents.
 *
 * The document and the resources it brings commit in one transaction, with the document already
 * `completed`: the search index's stamp (the patient's documents and their conversion status) moves with
 * every change to the resources, as every writer of the consolidated store must ensure.
 */
import type { CoreDeps } from '../deps.js';
import type { CodeableConcept, DocumentRecord, FhirResourceRecord, OrganizationIdentifier } from '../domain/types.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { nowIso } from '../time.js';
import { consolidate } from './consolidate.js';
import { resourceKey } from './dedupe.js';
import { documentBlobKey, documentReferenceOf } from './document-reference.js';
import { applyIndexChange, dataStamp, searchDocumentOf } from './patient-index.js';

/** The media type of the Bundle files these documents hold. */
export const FHIR_JSON = 'application/fhir+json';

export interface FhirBundleDocumentInput {
  accountId: string;
  patientId: string;
  source: DocumentRecord['source'];
  /**
   * Unique in the account. A document with this file name already stored is the same data: nothing is
   * stored again (how a retried job, or a network answering the same again, changes nothing).
   */
  fileName: string;
  description: string;
  type: CodeableConcept;
  organizationIdentifiers: OrganizationIdentifier[];
  /** Already checked resources, each with a resourceType and an id unique in the list. */
  resources: readonly FhirResource[];
}

export interface FoldedBundle {
  document: DocumentRecord;
  /** False when a document with this file name was stored already (nothing was written). */
  stored: boolean;
  /** `Type/id` of each resource given -> `Type/id` where it is kept now (itself, or what it merged into). */
  locations: Map<string, string>;
}

/**
 * Stores the resources as a Bundle document of the patient and folds them into the consolidated store.
 * Idempotent by file name. Storage errors are thrown (callers that are jobs get retried).
 */
export async function storeFhirBundleDocument(deps: Pick<CoreDeps, 'storage' | 'blob' | 'search' | 'clock' | 'ids'>, input: FhirBundleDocumentInput): Promise<FoldedBundle> {
  const { accountId, patientId } = input;
  const held = await deps.storage.documents.getByFileName(accountId, input.fileName);
  if (held) {
    return { document: held, stored: false, locations: new Map(input.resources.map((resource) => [resourceKey(resource), resourceKey(resource)])) };
  }

  const id = deps.ids.next();
  const now = nowIso(deps.clock);
  const bundle = { resourceType: 'Bundle', type: 'collection', total: input.resources.length, entry: input.resources.map((resource) => ({ resource })) };
  const blobKey = documentBlobKey(accountId, id);
  const { size } = await deps.blob.put(blobKey, new TextEncoder().encode(JSON.stringify(bundle)), { contentType: FHIR_JSON });
  const document: DocumentRecord = {
    id,
    accountId,
    patientId,
    source: input.source,
    fileName: input.fileName,
    description: input.description,
    status: 'current',
    indexed: now,
    mimeType: FHIR_JSON,
    size,
    type: input.type,
    organizationIdentifiers: input.organizationIdentifiers,
    blobKey,
    conversionStatus: 'completed',
    createdAt: now,
  };

  const documentsBefore = await deps.storage.documents.listByPatient(accountId, patientId);
  const stored = await deps.storage.fhirResources.listByPatient(accountId, patientId);
  const folded = consolidate({ accountId, patientId, now, existing: stored, incoming: { documentId: id, resources: input.resources } });
  const reference = documentReferenceOf(document);
  const referenceRecord: FhirResourceRecord = {
    accountId,
    patientId,
    resourceType: 'DocumentReference',
    id,
    resource: reference,
    sourceDocumentIds: [id],
    updatedAt: now,
  };

  await deps.storage.transaction(async (tx) => {
    await tx.documents.insert(document);
    if (folded.removed.length > 0) await tx.fhirResources.removeMany(accountId, patientId, folded.removed);
    await tx.fhirResources.putMany([...folded.changed, referenceRecord]);
  });
  const written = [...folded.changed.map((record) => record.resource as FhirResource), reference];
  await applyIndexChange(deps, accountId, patientId, {
    before: dataStamp(documentsBefore),
    after: dataStamp([...documentsBefore, document]),
    upsert: () => written.flatMap((resource) => searchDocumentOf(resource) ?? []),
    resources: () => written,
    remove: folded.removed.map(({ resourceType, id: removedId }) => `${resourceType}/${removedId}`),
  });

  const locations = new Map<string, string>();
  for (const resource of input.resources) {
    const key = resourceKey(resource);
    let target = key;
    // A chain of merges ends at the survivor.
    for (let hops = 0; folded.replaced.has(target) && hops < 16; hops++) target = folded.replaced.get(target)!;
    locations.set(key, target);
  }
  return { document, stored: true, locations };
}
