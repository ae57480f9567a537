import { pauseOf, pauseReason } from '../../bulk/pause.js';
import { bulkDocumentQueryProgress } from '../../bulk/document-queries.js';
import { bulkResultFile, resultDownloadUrl } from '../../bulk/result.js';
import { BULK_LIST_MAX } from '../../../contract/limits.js';
import { getBulkRequest, listBulkRequests, startBulkCreate } from '../../bulk/start.js';
import { acceptUpload } from '../../bulk/upload.js';
import type { CoreDeps } from '../../deps.js';
import type { BulkQueriesProgress, BulkRequest } from '../../domain/types.js';
import { z } from 'zod';
import { defineRoute, json } from '../router.js';
import { bulkStartQuerySchema } from '../schemas.js';

export function bulkStatusToWire(deps: Pick<CoreDeps, 'urlSigner' | 'clock' | 'config' | 'pauses'>, request: BulkRequest, documentQueries?: BulkQueriesProgress) {
  const pause = pauseOf(deps, request);
  return {
    requestId: request.id,
    facilityId: request.facilityId,
    status: request.status,
    dryRun: request.dryRun,
    reason: request.reason,
    total: request.total ?? null,
    processed: request.processed,
    succeeded: request.succeeded,
    failed: request.failed,
    created: request.created,
    updated: request.updated,
    ignoredColumns: request.ignoredColumns,
    // A fresh URL on every read: the one in the webhook lives only 600 s.
    ...(request.status === 'completed' && request.resultKey ? { result: resultDownloadUrl(deps, request) } : {}),
    ...(pause ? { paused: { ...pause, reason: pauseReason(pause) } } : {}),
    // What the import set off: the document query of each patient, counted as they are started and end.
    ...(documentQueries ? { documentQueries } : {}),
    createdAt: request.createdAt,
  };
}

/** The answer to a start; exported so the client is typed by it. */
export function bulkStartToWire(request: BulkRequest, uploadUrl: string) {
  return {
    requestId: request.id,
    facilityId: request.facilityId,
    status: request.status,
    uploadUrl,
    params: { dryRun: request.dryRun },
    createdAt: request.createdAt,
  };
}

export const bulkRoutes = [
  defineRoute('startBulkPatientCreate', {
    query: bulkStartQuerySchema,
    async handle({ deps, account, query }) {
      const { request, uploadUrl } = await startBulkCreate(deps, account, { facilityId: query.facilityId, dryRun: query.dryRun });
      return json(200, bulkStartToWire(request, uploadUrl));
    },
  }),
  defineRoute('listBulkPatientCreates', {
    query: z.object({ limit: z.coerce.number().int().min(1).max(BULK_LIST_MAX).optional().describe(`At most ${BULK_LIST_MAX}; default 20`) }),
    async handle({ deps, account, query }) {
      const requests = await listBulkRequests(deps, account.id, query.limit ?? 20);
      return json(200, { requests: requests.map((request) => bulkStatusToWire(deps, request)) });
    },
  }),
  defineRoute('getBulkPatientCreate', {
    async handle({ deps, account, params }) {
      const request = await getBulkRequest(deps, account.id, params.requestId);
      return json(200, bulkStatusToWire(deps, request, await bulkDocumentQueryProgress(deps, request)));
    },
  }),
  defineRoute('uploadBulkPatientCsv', {
    async handle({ deps, account, params, request }) {
      const stored = await acceptUpload(deps, account, params.requestId, {
        contentType: request.headers['content-type'],
        body: request.bodyStream ?? (typeof request.body === 'string' ? request.body : ''),
      });
      return json(200, bulkStatusToWire(deps, stored));
    },
  }),
  defineRoute('downloadBulkPatientCreateResult', {
    async handle({ deps, account, params }) {
      const { request, stream } = await bulkResultFile(deps, account.id, params.requestId);
      return {
        status: 200,
        headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="bulk-${request.id}-result.csv"` },
        stream,
      };
    },
  }),
];
