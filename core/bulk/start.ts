import type { CoreDeps } from '../deps.js';
import type { Account, BulkRequest } from '../domain/types.js';
import { resolveFacility } from '../entities/facilities.js';
import { CoreError } from '../errors.js';
import { nextStatus } from './machine.js';
import { issueSignedUrl } from '../signed-urls.js';
import { MINUTE_MS, nowIso } from '../time.js';
import { newJob } from '../job-catalogue.js';
import { BULK_LIST_MAX } from '../../contract/limits.js';
import { requestTo } from '../../contract/endpoints.js';

/** Upload the CSV — the URL is valid 10 minutes and single-use. */
export const UPLOAD_URL_VALIDITY_MS = 10 * MINUTE_MS;

export function uploadPath(requestId: string): string {
  return requestTo('uploadBulkPatientCsv', { requestId }).path;
}

export interface StartBulkInput {
  facilityId?: string;
  dryRun: boolean;
  metadata?: Record<string, string>;
}

export interface StartedBulk {
  request: BulkRequest;
  uploadUrl: string;
}

export async function startBulkCreate(deps: CoreDeps, account: Account, input: StartBulkInput): Promise<StartedBulk> {
  const facility = await resolveFacility(deps, account.id, input.facilityId);
  const id = deps.ids.next();
  const now = nowIso(deps.clock);
  const { url, expiresAt } = issueSignedUrl(deps, { method: 'PUT', path: uploadPath(id), accountId: account.id }, UPLOAD_URL_VALIDITY_MS);
  const request: BulkRequest = {
    id,
    accountId: account.id,
    facilityId: facility.id,
    dryRun: input.dryRun,
    status: 'waiting',
    processed: 0,
    succeeded: 0,
    failed: 0,
    created: 0,
    updated: 0,
    uploadKey: '',
    expiresAt: expiresAt.toISOString(),
    createdAt: now,
    updatedAt: now,
    ...(input.metadata ? { metadata: input.metadata } : {}),
  };
  await deps.storage.bulkRequests.insert(request);
  // The scheduler expires it even if nobody ever looks at it again (not only lazily).
  await deps.queue.enqueue(newJob('bulk.expire', { requestId: id }, { runAt: request.expiresAt }));
  return { request, uploadUrl: url };
}

/**
 * Moves a `waiting` request whose upload window has passed to `expired`. Returns the request as stored
 * afterwards (unchanged when it was not due or not waiting). No webhook is sent for expiry.
 */
export async function expireIfDue(deps: Pick<CoreDeps, 'storage' | 'clock'>, request: BulkRequest): Promise<BulkRequest> {
  if (request.status !== 'waiting' || deps.clock.now().getTime() < Date.parse(request.expiresAt)) return request;
  const expired: BulkRequest = { ...request, status: await nextStatus(request.status, 'expire'), updatedAt: nowIso(deps.clock) };
  const stored = await deps.storage.bulkRequests.updateIfStatus(expired, 'waiting');
  return stored ?? (await deps.storage.bulkRequests.getById(request.id)) ?? request;
}

/**
 * The account's imports, newest first, at most `limit` (at most BULK_LIST_MAX): each as `getBulkRequest`
 * answers it, so one whose upload window passed reads as expired here too.
 */
export async function listBulkRequests(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string, limit: number): Promise<BulkRequest[]> {
  const requests = await deps.storage.bulkRequests.list(accountId, Math.min(limit, BULK_LIST_MAX));
  return Promise.all(requests.map((request) => expireIfDue(deps, request)));
}

export async function getBulkRequest(deps: Pick<CoreDeps, 'storage' | 'clock'>, accountId: string, requestId: string): Promise<BulkRequest> {
  const request = await deps.storage.bulkRequests.get(accountId, requestId);
  if (!request) throw new CoreError('BULK_REQUEST_NOT_FOUND', 'No bulk request with this id in your account');
  return expireIfDue(deps, request);
}
