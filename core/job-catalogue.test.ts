import { describe, expect, test } from 'vitest';
import { JOB_TYPES, newJob, runnableHandlers, type JobHandlers } from './job-catalogue.js';

const job = { id: 'j', type: 'documents.query', payload: null, attempt: 1, maxAttempts: 3, lane: 'interactive' as const, leaseUntil: '' };

function recordingHandlers(calls: unknown[]): JobHandlers {
  const record = async (payload: unknown) => {
    calls.push(payload);
  };
  return Object.fromEntries(JOB_TYPES.map((type) => [type, record])) as unknown as JobHandlers;
}

describe('the job catalogue', () => {
  test('keys are the ones queued jobs were stored with, so a job queued before an upgrade is still deduplicated', () => {
    expect(newJob('bulk.process', { requestId: 'r1' }).key).toBe('bulk.process:r1');
    expect(newJob('bulk.expire', { requestId: 'r1' }).key).toBe('bulk.expire:r1');
    expect(newJob('bulk.document-queries', { requestId: 'r1', fromRow: 500 }).key).toBe('bulk.document-queries:r1:500');
    expect(newJob('documents.query', { accountId: 'a', queryId: 'q' }).key).toBe('documents.query:q');
    expect(newJob('documents.convert', { accountId: 'a', documentId: 'd' }).key).toBe('documents.convert:d');
    expect(newJob('documents.bulk-urls', { accountId: 'a', patientId: 'p', requestId: 'r', messageId: 'm' }).key).toBe('documents.bulk-urls:r');
    expect(newJob('documents.consolidated', { accountId: 'a', queryId: 'q' }).key).toBe('documents.consolidated:q');
    expect(newJob('documents.delete-blob', { key: 'k/1' }).key).toBe('documents.delete-blob:k/1');
    expect(newJob('network.source', { accountId: 'a', queryId: 'q', source: 'lab' }).key).toBe('network.source:q:lab');
  });

  test('a job carries its options and its payload as given', () => {
    expect(newJob('documents.query', { accountId: 'a', queryId: 'q' }, { lane: 'background', fairnessKey: 'a' })).toEqual({
      type: 'documents.query',
      payload: { accountId: 'a', queryId: 'q' },
      key: 'documents.query:q',
      lane: 'background',
      fairnessKey: 'a',
    });
  });

  test('a handler gets its payload parsed; a malformed payload is refused before the handler runs, naming the field only', async () => {
    const calls: unknown[] = [];
    const handlers = runnableHandlers(recordingHandlers(calls));
    await handlers['documents.query']({ accountId: 'a', queryId: 'q' }, job);
    expect(calls).toEqual([{ accountId: 'a', queryId: 'q' }]);
    await expect(handlers['documents.query']({ accountId: 'a' }, job)).rejects.toThrow(/documents\.query has a malformed payload: queryId/);
    await expect(handlers['network.source']({ accountId: 'a', queryId: 'q', source: 'fax' }, job)).rejects.toThrow(/source/);
    await expect(handlers['bulk.document-queries']({ requestId: 'r', fromRow: -1 }, job)).rejects.toThrow(/fromRow/);
    await expect(handlers['documents.delete-blob'](null, job)).rejects.toThrow(/malformed/);
    expect(calls).toHaveLength(1);
  });

  test('every job type has a runnable handler', () => {
    expect(Object.keys(runnableHandlers(recordingHandlers([]))).sort()).toEqual([...JOB_TYPES].sort());
  });
});
