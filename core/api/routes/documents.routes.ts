import { z } from 'zod';
import type { DocumentRecord } from '../../domain/types.js';
import { CoreError } from '../../errors.js';
import type { FhirResource } from '../../ports/ccda.port.js';
import { documentDownloadUrl, documentWithFile, renderDocument, startBulkDownloadUrls } from '../../documents/downloads.js';
import { getDocumentQueryStatus, startDocumentQuery } from '../../documents/query.js';
import { documentQueryToWire } from '../../documents/wire.js';
import { dispositionFileName, downloadContentType } from '../../documents/document-reference.js';
import { acceptDocumentUpload, createDocumentUpload } from '../../documents/upload.js';
import { getPatient } from '../../entities/patients.js';
import { defineRoute, json } from '../router.js';
import { metadataBodySchema, uuidSchema } from '../schemas.js';
import { bulkDownloadUrlsResponse, documentListResponse, documentQueryResponse, documentUploadResponse, documentUploadedResponse, latestDocumentQueryResponse, uploadUrlResponse, urlResponse } from '../../../contract/responses.js';

const DOCUMENT = '/medical/v1/document';
const TAG = 'Document';

const patientQuery = z.object({ patientId: z.string().trim().min(1) });
const day = z.string().trim().regex(/^\d{4}-\d{2}-\d{2}/, 'must be a date written YYYY-MM-DD');

const listQuery = patientQuery.extend({
  dateFrom: day.optional(),
  dateTo: day.optional(),
  content: z.string().trim().min(3, 'must be at least 3 characters').max(200).optional(),
  count: z.coerce.number().int().min(1).max(1_000).optional(),
  output: z.enum(['fhir', 'dto']).optional(),
});

/** The public API's document DTO (listDocumentsAsDTO, `output=dto`). */
function documentDto(document: DocumentRecord) {
  return {
    id: document.id,
    fileName: document.fileName,
    description: document.description,
    status: document.status,
    indexed: document.indexed,
    mimeType: document.mimeType,
    size: document.size,
    type: document.type,
  };
}

function textOfDocumentReference(resource: FhirResource): string {
  const type = resource.type as { text?: string; coding?: { display?: string }[] } | undefined;
  const attachment = (resource.content as { attachment?: { title?: string } }[] | undefined)?.[0]?.attachment;
  return [resource.description, type?.text, ...(type?.coding ?? []).map((c) => c.display), attachment?.title].filter(Boolean).join(' ').toLowerCase();
}

export const documentRoutes = [
  defineRoute({
    method: 'POST',
    path: `${DOCUMENT}/query`,
    auth: 'apiKey',
    tag: TAG,
    summary: "Start a document query for the patient at the HIE networks (returns the running one if there is one); the outcome comes by webhook",
    query: patientQuery.extend({ facilityId: z.string().trim().min(1).optional() }),
    body: metadataBodySchema,
    success: { status: 200, schema: documentQueryResponse },
    async handle({ deps, account, query, body }) {
      const started = await startDocumentQuery(deps, account, { patientId: query.patientId, facilityId: query.facilityId, metadata: body?.metadata });
      return json(200, documentQueryToWire(started));
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${DOCUMENT}/query`,
    auth: 'apiKey',
    tag: TAG,
    summary: "Progress of the patient's latest document query (an empty object when there was none)",
    query: patientQuery,
    success: { status: 200, schema: latestDocumentQueryResponse },
    async handle({ deps, account, query }) {
      const latest = await getDocumentQueryStatus(deps, account.id, query.patientId);
      return json(200, latest ? documentQueryToWire(latest) : {});
    },
  }),
  defineRoute({
    method: 'GET',
    path: DOCUMENT,
    auth: 'apiKey',
    tag: TAG,
    summary: "The patient's documents as FHIR DocumentReferences (`output=dto` for the short form), oldest first",
    query: listQuery,
    success: { status: 200, schema: documentListResponse },
    async handle({ deps, account, query }) {
      await getPatient(deps, account.id, query.patientId);
      const [from, to] = [query.dateFrom?.slice(0, 10), query.dateTo?.slice(0, 10)];
      const needle = query.content?.toLowerCase();
      const references = (await deps.storage.fhirResources.listByPatient(account.id, query.patientId, ['DocumentReference']))
        .map((record) => record.resource as FhirResource)
        .filter((resource) => {
          const date = typeof resource.date === 'string' ? resource.date.slice(0, 10) : undefined;
          if (from && (!date || date < from)) return false;
          if (to && (!date || date > to)) return false;
          return !needle || textOfDocumentReference(resource).includes(needle);
        })
        .slice(0, query.count);
      if (query.output === 'dto') {
        const documents = await deps.storage.documents.listByPatient(account.id, query.patientId);
        const byId = new Map(documents.map((document) => [document.id, document]));
        return json(200, { documents: references.flatMap((resource) => (byId.has(resource.id!) ? [documentDto(byId.get(resource.id!)!)] : [])) });
      }
      return json(200, { documents: references });
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${DOCUMENT}/download-url`,
    auth: 'apiKey',
    tag: TAG,
    summary: 'A short-lived pre-signed URL to the file (or, for a C-CDA, its HTML or PDF rendering)',
    query: z.object({ fileName: z.string().min(1).max(1_000), conversionType: z.enum(['html', 'pdf']).optional() }),
    success: { status: 200, schema: urlResponse },
    async handle({ deps, account, query }) {
      const { url } = await documentDownloadUrl(deps, account.id, query.fileName, query.conversionType);
      return json(200, { url });
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${DOCUMENT}/file/:documentId`,
    auth: 'signed',
    tag: TAG,
    summary: 'Download a document file (pre-signed URL from download-url or the bulk URL webhook)',
    success: { status: 200, mediaType: 'application/octet-stream' },
    async handle({ deps, account, params }) {
      const document = await documentWithFile(deps, account.id, uuidSchema.parse(params.documentId));
      const stream = await deps.blob.stream(document.blobKey);
      if (!stream) throw new CoreError('FILE_NOT_FOUND', 'No file for this document');
      return {
        status: 200,
        headers: { 'content-type': downloadContentType(document.mimeType), 'content-disposition': `attachment; filename="${dispositionFileName(document.fileName)}"` },
        stream,
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${DOCUMENT}/file/:documentId/:format`,
    auth: 'signed',
    tag: TAG,
    summary: 'Download a C-CDA document rendered as HTML or PDF (pre-signed URL from download-url)',
    success: { status: 200, mediaType: 'text/html' },
    async handle({ deps, account, params }) {
      const format = z.enum(['html', 'pdf']).parse(params.format);
      const document = await documentWithFile(deps, account.id, uuidSchema.parse(params.documentId));
      const bytes = await renderDocument(deps, document, format);
      return {
        status: 200,
        headers: { 'content-type': format === 'pdf' ? 'application/pdf' : 'text/html; charset=utf-8' },
        stream: (async function* () {
          yield bytes;
        })(),
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${DOCUMENT}/download-url/bulk`,
    auth: 'apiKey',
    tag: TAG,
    summary: "Send the download URLs of all the patient's documents by webhook (medical.document-bulk-download-urls; URLs valid 600 s)",
    query: patientQuery,
    body: metadataBodySchema,
    success: { status: 200, schema: bulkDownloadUrlsResponse },
    async handle({ deps, account, query, body }) {
      return json(200, await startBulkDownloadUrls(deps, account, { patientId: query.patientId, metadata: body?.metadata }));
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${DOCUMENT}/upload`,
    auth: 'apiKey',
    tag: TAG,
    summary: 'Describe a document you hold with a FHIR DocumentReference; returns its id and the pre-signed URL to PUT the file to (10 minutes, single use)',
    query: patientQuery,
    success: { status: 200, schema: documentUploadResponse },
    async handle({ deps, account, query, body }) {
      return json(200, await createDocumentUpload(deps, account, { patientId: query.patientId, documentReference: body }));
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${DOCUMENT}/upload-url`,
    auth: 'apiKey',
    tag: TAG,
    deprecated: true,
    summary: 'As POST /document/upload, answering only the pre-signed upload URL (a JSON string); use /document/upload for the DocumentReference id too',
    query: patientQuery,
    success: { status: 200, schema: uploadUrlResponse },
    async handle({ deps, account, query, body }) {
      const { uploadUrl } = await createDocumentUpload(deps, account, { patientId: query.patientId, documentReference: body });
      return json(200, uploadUrl);
    },
  }),
  defineRoute({
    method: 'PUT',
    path: `${DOCUMENT}/upload/:documentId`,
    auth: 'signed',
    tag: TAG,
    summary: 'Upload the file of a document to its pre-signed URL; a C-CDA is converted like a document from a network',
    rawBody: 'application/xml',
    success: { status: 200, schema: documentUploadedResponse },
    async handle({ deps, account, params, request }) {
      const document = await acceptDocumentUpload(deps, account.id, uuidSchema.parse(params.documentId), {
        contentType: request.headers['content-type'],
        body: request.bodyStream ?? (typeof request.body === 'string' ? request.body : ''),
      });
      return json(200, { documentReferenceId: document.id, fileName: document.fileName, size: document.size });
    },
  }),
];
