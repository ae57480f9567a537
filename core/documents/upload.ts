/**
 * A document the customer already holds (`POST /medical/v1/document/upload?patientId=`, the
 * public API's createDocumentReference): the customer describes it with a FHIR DocumentReference, gets a
 * pre-signed URL, and PUTs the file there. The file then goes through the same conversion, consolidation
 * and search as a document from a network.
 */
import { DEFAULT_MAX_CONVERSION_BYTES, type CoreDeps } from '../deps.js';
import type { Account, CodeableConcept, DocumentRecord } from '../domain/types.js';
import { getPatient } from '../entities/patients.js';
import { CoreError } from '../errors.js';
import { issueSignedUrl } from '../signed-urls.js';
import { MINUTE_MS, nowIso } from '../time.js';
import { documentBlobKey, isCcdaMediaType, mediaTypeOf, uploadFileName } from './document-reference.js';
import { storeDocument } from './store-document.js';
import { newJob } from '../job-catalogue.js';
import { requestTo } from '../../contract/endpoints.js';

/** As the bulk CSV upload URL: valid 10 minutes, used once. */
export const DOCUMENT_UPLOAD_URL_VALIDITY_MS = 10 * MINUTE_MS;
/** Content types that say nothing about the file; the declared one is kept instead. */
const UNINFORMATIVE_TYPES = new Set(['application/octet-stream', 'binary/octet-stream']);

export function documentUploadPath(documentId: string): string {
  return requestTo('uploadDocument', { documentId }).path;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** The parts of a customer's CodeableConcept our webhooks carry (strings only). */
function codeableConcept(value: unknown): CodeableConcept {
  if (!isObject(value)) return {};
  const coding = Array.isArray(value.coding)
    ? value.coding.filter(isObject).map((c) => ({
        ...(text(c.system) ? { system: text(c.system) } : {}),
        ...(text(c.code) ? { code: text(c.code) } : {}),
        ...(text(c.display) ? { display: text(c.display) } : {}),
      }))
    : [];
  return { ...(coding.length > 0 ? { coding } : {}), ...(text(value.text) ? { text: text(value.text) } : {}) };
}

function firstAttachment(given: Record<string, unknown>): Record<string, unknown> {
  const content = Array.isArray(given.content) ? given.content[0] : undefined;
  return isObject(content) && isObject(content.attachment) ? content.attachment : {};
}

export interface CreatedUpload {
  documentReferenceId: string;
  uploadUrl: string;
}

/**
 * Records the document the customer will upload and returns where to PUT it. The DocumentReference is
 * kept as given, except what we own (id, subject, content, status, contained authors). Throws
 * PATIENT_NOT_FOUND, VALIDATION_FAILED when the body is not a DocumentReference.
 */
export async function createDocumentUpload(deps: CoreDeps, account: Account, input: { patientId: string; documentReference: unknown }): Promise<CreatedUpload> {
  const given = input.documentReference;
  if (!isObject(given)) throw new CoreError('VALIDATION_FAILED', 'The body must be a FHIR DocumentReference (a JSON object)');
  if (given.resourceType !== undefined && given.resourceType !== 'DocumentReference') {
    throw new CoreError('VALIDATION_FAILED', 'resourceType: must be DocumentReference', { details: { field: 'resourceType' } });
  }
  const patient = await getPatient(deps, account.id, input.patientId);
  const attachment = firstAttachment(given);
  const id = deps.ids.next();
  const now = nowIso(deps.clock);
  const givenType = text(attachment.contentType);
  const declaredType = mediaTypeOf(givenType);
  if (givenType !== undefined && declaredType === undefined) {
    throw new CoreError('VALIDATION_FAILED', 'content.0.attachment.contentType: must be a media type such as application/xml or application/pdf', {
      details: { field: 'content.0.attachment.contentType' },
    });
  }
  const document: DocumentRecord = {
    id,
    accountId: account.id,
    patientId: patient.id,
    source: 'upload',
    fileName: uploadFileName(patient.id, id, text(attachment.title)),
    description: text(given.description) ?? text(attachment.title) ?? 'Uploaded document',
    status: 'current',
    indexed: now,
    mimeType: declaredType ?? 'application/octet-stream',
    size: 0,
    type: codeableConcept(given.type),
    organizationIdentifiers: [],
    blobKey: documentBlobKey(account.id, id),
    conversionStatus: 'waiting-upload',
    createdAt: now,
  };
  // The customer's DocumentReference is kept beside the file until the file comes.
  await deps.blob.put(givenKey(document), JSON.stringify(given), { contentType: 'application/fhir+json' });
  await deps.storage.documents.insert(document);
  const { url } = issueSignedUrl(deps, { method: 'PUT', path: documentUploadPath(id), accountId: account.id }, DOCUMENT_UPLOAD_URL_VALIDITY_MS);
  return { documentReferenceId: id, uploadUrl: url };
}

function givenKey(document: Pick<DocumentRecord, 'blobKey'>): string {
  return `${document.blobKey}.reference.json`;
}

export interface DocumentUploadInput {
  contentType: string | undefined;
  body: AsyncIterable<Uint8Array> | Uint8Array | string;
}

/**
 * Stores the file PUT to an upload URL (the caller has verified the URL for this account), records the
 * document as listed and searchable, and queues the conversion of a C-CDA file. Single use: a document
 * whose file is already there answers UPLOAD_URL_USED. An empty file is refused (VALIDATION_FAILED).
 */
export async function acceptDocumentUpload(deps: CoreDeps, accountId: string, documentId: string, input: DocumentUploadInput): Promise<DocumentRecord> {
  const waiting = await deps.storage.documents.get(accountId, documentId);
  if (!waiting) throw new CoreError('DOCUMENT_NOT_FOUND', 'No document with this id in your account');
  if (waiting.conversionStatus !== 'waiting-upload') throw new CoreError('UPLOAD_URL_USED', 'The file of this document was already uploaded');

  const sent = mediaTypeOf(input.contentType);
  const mimeType = sent && !UNINFORMATIVE_TYPES.has(sent) ? sent : waiting.mimeType;
  const { size } = await deps.blob.put(waiting.blobKey, input.body, { contentType: mimeType });
  if (size === 0) {
    await deps.blob.delete(waiting.blobKey);
    throw new CoreError('VALIDATION_FAILED', 'The file is empty');
  }
  const givenBytes = await deps.blob.get(givenKey(waiting));
  const given = givenBytes ? (JSON.parse(new TextDecoder().decode(givenBytes)) as Record<string, unknown>) : undefined;
  const document: DocumentRecord = {
    ...waiting,
    mimeType,
    size,
    indexed: nowIso(deps.clock),
    conversionStatus: isCcdaMediaType(mimeType) ? 'processing' : 'not-applicable',
  };
  // Read back only within the size limit: a larger file is stored, not converted nor read for its text.
  const limit = deps.config.maxConversionBytes ?? DEFAULT_MAX_CONVERSION_BYTES;
  const xml = document.conversionStatus === 'processing' && size <= limit ? await deps.blob.get(waiting.blobKey) : undefined;
  await storeDocument(deps, document, { mode: 'update', ...(xml ? { ccda: xml } : {}), ...(given ? { given } : {}) });
  if (document.conversionStatus === 'processing') {
    await deps.queue.enqueue(newJob('documents.convert', { accountId, documentId }, { fairnessKey: accountId }));
  }
  return document;
}
