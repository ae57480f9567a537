import { z } from 'zod';
import type { DocumentRecord } from '../../domain/types.js';
import { CoreError } from '../../errors.js';
import { documentDownloadUrl, documentFile, documentWithFile, renderDocument, startBulkDownloadUrls } from '../../documents/downloads.js';
import { getDocumentQueryStatus, startDocumentQuery } from '../../documents/query.js';
import { documentQueryToWire } from '../../documents/wire.js';
import { dispositionFileName, downloadContentType } from '../../documents/document-reference.js';
import { documentsOfReferences, listDocumentReferences } from '../../documents/list.js';
import { acceptDocumentUpload, createDocumentUpload } from '../../documents/upload.js';
import { defineRoute, json } from '../router.js';
import { metadataBodySchema, uuidSchema } from '../schemas.js';

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

export const documentRoutes = [
  defineRoute('startDocumentQuery', {
    query: patientQuery.extend({ facilityId: z.string().trim().min(1).optional() }),
    body: metadataBodySchema,
    async handle({ deps, account, query, body }) {
      const started = await startDocumentQuery(deps, account, { patientId: query.patientId, facilityId: query.facilityId, metadata: body?.metadata });
      return json(200, documentQueryToWire(started));
    },
  }),
  defineRoute('getDocumentQueryStatus', {
    query: patientQuery,
    async handle({ deps, account, query }) {
      const latest = await getDocumentQueryStatus(deps, account.id, query.patientId);
      return json(200, latest ? documentQueryToWire(latest) : {});
    },
  }),
  defineRoute('listDocuments', {
    query: listQuery,
    async handle({ deps, account, query }) {
      const references = await listDocumentReferences(deps, account.id, query.patientId, query);
      if (query.output === 'dto') return json(200, { documents: (await documentsOfReferences(deps, account.id, query.patientId, references)).map(documentDto) });
      return json(200, { documents: references });
    },
  }),
  defineRoute('getDocumentUrl', {
    query: z.object({ fileName: z.string().min(1).max(1_000), conversionType: z.enum(['html', 'pdf']).optional() }),
    async handle({ deps, account, query }) {
      const { url } = await documentDownloadUrl(deps, account.id, query.fileName, query.conversionType);
      return json(200, { url });
    },
  }),
  defineRoute('downloadDocument', {
    async handle({ deps, account, params }) {
      const { document, stream } = await documentFile(deps, account.id, uuidSchema.parse(params.documentId));
      return {
        status: 200,
        headers: { 'content-type': downloadContentType(document.mimeType), 'content-disposition': `attachment; filename="${dispositionFileName(document.fileName)}"` },
        stream,
      };
    },
  }),
  defineRoute('downloadRenderedDocument', {
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
  defineRoute('startBulkGetDocumentUrl', {
    query: patientQuery,
    body: metadataBodySchema,
    async handle({ deps, account, query, body }) {
      return json(200, await startBulkDownloadUrls(deps, account, { patientId: query.patientId, metadata: body?.metadata }));
    },
  }),
  defineRoute('createDocumentReference', {
    query: patientQuery,
    async handle({ deps, account, query, body }) {
      return json(200, await createDocumentUpload(deps, account, { patientId: query.patientId, documentReference: body }));
    },
  }),
  defineRoute('getDocumentUploadUrl', {
    query: patientQuery,
    async handle({ deps, account, query, body }) {
      const { uploadUrl } = await createDocumentUpload(deps, account, { patientId: query.patientId, documentReference: body });
      return json(200, uploadUrl);
    },
  }),
  defineRoute('uploadDocument', {
    async handle({ deps, account, params, request }) {
      const document = await acceptDocumentUpload(deps, account.id, uuidSchema.parse(params.documentId), {
        contentType: request.headers['content-type'],
        body: request.bodyStream ?? (typeof request.body === 'string' ? request.body : ''),
      });
      return json(200, { documentReferenceId: document.id, fileName: document.fileName, size: document.size });
    },
  }),
];
