/**
 * Download URLs of stored documents (`GET /medical/v1/document/download-url?fileName=`,
 * `POST /medical/v1/document/download-url/bulk?patientId=`). URLs are pre-signed to the account, so the
 * file can be fetched without an API key until they expire.
 */
import type { CoreDeps } from '../deps.js';
import type { Account, DocumentRecord } from '../domain/types.js';
import type { RenderContext } from '../ports/renderer.port.js';
import { getPatient } from '../entities/patients.js';
import { CoreError } from '../errors.js';
import { issueSignedUrl } from '../signed-urls.js';
import { MINUTE_MS } from '../time.js';
import { enqueueMessage } from '../webhooks/enqueue.js';
import { documentBulkDownloadUrlsMessage, toWebhookBulkDocument } from '../webhooks/envelope.js';
import { validateMetadata } from '../../contract/metadata.js';
import { adoptDocumentResources } from './consolidate.js';
import { bundleOf } from './consolidated.js';
import { isCcdaMediaType } from './document-reference.js';
import { inRenderSlot } from './render-slots.js';
import { hasFile } from './patient-index.js';
import { patientDisplayName, patientResourceOf } from './patient-resource.js';
import { newJob, type JobPayload } from '../job-catalogue.js';
import { requestTo } from '../../contract/endpoints.js';

/** A single download URL is short-lived: long enough to start a download, not to be shared around. */
export const DOWNLOAD_URL_VALIDITY_MS = 10 * MINUTE_MS;
/** Bulk download URLs are valid 600 seconds. */
export const BULK_DOWNLOAD_URL_VALIDITY_MS = 600_000;

/** Formats a C-CDA document can be rendered to on download, as the public API's `conversionType`. */
export type DownloadFormat = 'html' | 'pdf';

export function documentFilePath(documentId: string, format?: DownloadFormat): string {
  return format ? requestTo('downloadRenderedDocument', { documentId, format }).path : requestTo('downloadDocument', { documentId }).path;
}

/**
 * A pre-signed URL to the raw file of the document named `fileName`, or to its rendering as HTML or PDF
 * (C-CDA documents only). Throws DOCUMENT_NOT_FOUND (also for another account's file), FILE_NOT_FOUND
 * while an upload has not arrived, VALIDATION_FAILED for a rendering of a file that is not C-CDA.
 */
export async function documentDownloadUrl(
  deps: Pick<CoreDeps, 'storage' | 'urlSigner' | 'clock' | 'config'>,
  accountId: string,
  fileName: string,
  format?: DownloadFormat,
): Promise<{ url: string; expiresAt: Date }> {
  const document = await deps.storage.documents.getByFileName(accountId, fileName);
  if (!document) throw new CoreError('DOCUMENT_NOT_FOUND', 'No document with this fileName in your account');
  if (!hasFile(document)) throw new CoreError('FILE_NOT_FOUND', 'The file of this document has not been uploaded yet');
  if (format && !isCcdaMediaType(document.mimeType)) {
    throw new CoreError('VALIDATION_FAILED', `conversionType: only C-CDA documents can be rendered as ${format}`, { details: { field: 'conversionType' } });
  }
  return issueSignedUrl(deps, { method: 'GET', path: documentFilePath(document.id, format), accountId }, DOWNLOAD_URL_VALIDITY_MS);
}

/** The document behind a signed file URL, with its file present; FILE_NOT_FOUND otherwise. */
export async function documentWithFile(deps: Pick<CoreDeps, 'storage'>, accountId: string, documentId: string): Promise<DocumentRecord> {
  const document = await deps.storage.documents.get(accountId, documentId);
  if (!document || !hasFile(document)) throw new CoreError('FILE_NOT_FOUND', 'No file for this document');
  return document;
}

/** The file of a document behind its signed URL, as a stream, with the document; FILE_NOT_FOUND when there is none. */
export async function documentFile(
  deps: Pick<CoreDeps, 'storage' | 'blob'>,
  accountId: string,
  documentId: string,
): Promise<{ document: DocumentRecord; stream: AsyncIterable<Uint8Array> }> {
  const document = await documentWithFile(deps, accountId, documentId);
  const stream = await deps.blob.stream(document.blobKey);
  if (!stream) throw new CoreError('FILE_NOT_FOUND', 'No file for this document');
  return { document, stream };
}

export interface BulkUrlRequest {
  requestId: string;
  status: 'processing';
}

/**
 * Starts sending the download URLs of all the patient's documents in one `medical.document-bulk-download-urls`
 * message. Asynchronous as in the public API; the message id is chosen now so a retried job never sends two.
 */
export async function startBulkDownloadUrls(deps: CoreDeps, account: Account, input: { patientId: string; metadata?: unknown }): Promise<BulkUrlRequest> {
  const metadata = validateMetadata(input.metadata);
  const patient = await getPatient(deps, account.id, input.patientId);
  const requestId = deps.ids.next();
  await deps.queue.enqueue(
    newJob('documents.bulk-urls', { accountId: account.id, patientId: patient.id, requestId, messageId: deps.ids.next(), ...(metadata ? { metadata } : {}) }, { fairnessKey: account.id }),
  );
  return { requestId, status: 'processing' };
}

export type BulkUrlJob = JobPayload<'documents.bulk-urls'>;

/** The job of startBulkDownloadUrls: one URL per document with a file, valid 600 s from now. */
export async function sendBulkDownloadUrls(deps: CoreDeps, job: BulkUrlJob): Promise<void> {
  if (await deps.storage.outbox.get(job.accountId, job.messageId)) return;
  const patient = await deps.storage.patients.get(job.accountId, job.patientId);
  const documents = patient ? (await deps.storage.documents.listByPatient(job.accountId, job.patientId)).filter(hasFile) : [];
  const message = documentBulkDownloadUrlsMessage(
    { messageId: job.messageId, requestId: job.requestId, when: deps.clock.now(), ...(job.metadata ? { data: job.metadata } : {}) },
    [
      {
        patientId: job.patientId,
        ...(patient?.externalId ? { externalId: patient.externalId } : {}),
        status: patient ? 'completed' : 'failed',
        documents: documents.map((document) =>
          toWebhookBulkDocument(
            document,
            issueSignedUrl(deps, { method: 'GET', path: documentFilePath(document.id), accountId: job.accountId }, BULK_DOWNLOAD_URL_VALIDITY_MS).url,
          ),
        ),
      },
    ],
  );
  await enqueueMessage(deps.storage, job.accountId, message);
}

/**
 * A stored C-CDA document rendered for people (the public API's `conversionType` on download-url): the
 * document converted on the fly, its resources adopted by our patient, rendered by the renderer port
 * under the document's own title (its description: the C-CDA title, else its type) as one document.
 * Throws FILE_NOT_FOUND, CCDA_INVALID when the document cannot be converted, BUSY when as many renders run
 * and wait as the host allows (the conversion counts as part of the render).
 */
export function renderDocument(
  deps: Pick<CoreDeps, 'storage' | 'blob' | 'ccda' | 'renderer' | 'renders' | 'clock'>,
  document: DocumentRecord,
  format: DownloadFormat,
): Promise<Uint8Array> {
  return inRenderSlot(deps, () => convertAndRender(deps, document, format));
}

async function convertAndRender(deps: Pick<CoreDeps, 'storage' | 'blob' | 'ccda' | 'renderer' | 'clock'>, document: DocumentRecord, format: DownloadFormat): Promise<Uint8Array> {
  const bytes = await deps.blob.get(document.blobKey);
  if (!bytes) throw new CoreError('FILE_NOT_FOUND', 'No file for this document');
  const converted = await deps.ccda.convert(new TextDecoder().decode(bytes));
  const patient = await deps.storage.patients.get(document.accountId, document.patientId);
  const resources = adoptDocumentResources(
    (converted.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : [])),
    document.patientId,
  );
  const context: RenderContext = {
    kind: 'document',
    title: document.description.trim() || document.type.text?.trim() || document.type.coding?.find((coding) => coding.display)?.display || 'Document',
    patientName: patient ? patientDisplayName(patient) : '',
    generatedAt: deps.clock.now(),
  };
  return deps.renderer.render(bundleOf(patient ? [patientResourceOf(patient), ...resources] : resources, 'collection'), format, context);
}
