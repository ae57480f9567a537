/** Job types of the document half of the core (handlers in jobs.ts). */
export const DOCUMENT_JOB = {
  /** Download a document query's documents from the network, then convert them. `{ accountId, queryId }` */
  query: 'documents.query',
  /** Convert one uploaded document. `{ accountId, documentId }` */
  convert: 'documents.convert',
  /** Send the download URLs of a patient's documents. `{ accountId, patientId, requestId, messageId, metadata? }` */
  bulkUrls: 'documents.bulk-urls',
  /** Build the file of a consolidated data query and send its message. `{ accountId, queryId }` */
  consolidated: 'documents.consolidated',
  /** Delete a blob whose URL has expired (search results). `{ key }` */
  deleteBlob: 'documents.delete-blob',
} as const;
