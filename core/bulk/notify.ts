import type { CoreDeps } from '../deps.js';
import type { BulkRequest } from '../domain/types.js';
import type { StoragePort } from '../ports/storage.port.js';
import { enqueueMessage } from '../webhooks/enqueue.js';
import { bulkPatientCreateMessage } from '../webhooks/envelope.js';

export interface BulkStatusNotice {
  status: 'processing' | 'completed' | 'failed';
  reason?: string;
  result?: string;
  created?: number;
  updated?: number;
}

/**
 * Stores the `medical.bulk-patient-create` message in the outbox, inside the caller's transaction, so the
 * status change and its webhook commit together (two messages per request).
 */
export async function notifyBulkStatus(
  tx: StoragePort,
  deps: Pick<CoreDeps, 'ids' | 'clock'>,
  request: BulkRequest,
  notice: BulkStatusNotice,
): Promise<void> {
  const message = bulkPatientCreateMessage(
    { messageId: deps.ids.next(), requestId: request.id, when: deps.clock.now(), ...(request.metadata ? { data: request.metadata } : {}) },
    { requestId: request.id, ...notice },
  );
  await enqueueMessage(tx, request.accountId, message);
}
