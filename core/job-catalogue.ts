import { z } from 'zod';
import { NETWORK_SOURCES } from './domain/types.js';
import type { ClaimedJob, JobLane, JsonValue, NewJob } from './ports/queue.port.js';

/*
 * Every kind of background job, once: its type string, the shape of its payload and its deduplication key.
 * Enqueueing goes through `newJob`, which types the payload by the job type and derives the key; the handlers
 * are a record with one entry per type (`JobHandlers`), so a type without a handler does not compile, and each
 * handler gets its payload parsed and typed. Payloads stay as they were stored before this catalogue, so jobs
 * queued by an older version still run.
 */

const id = z.string().min(1);

const JOBS = {
  /** Validate and apply an import's rows, resuming after its last committed batch. */
  'bulk.process': { payload: z.object({ requestId: id }), key: (p: { requestId: string }) => p.requestId },
  /** End an import whose upload URL expired before a file came. */
  'bulk.expire': { payload: z.object({ requestId: id }), key: (p: { requestId: string }) => p.requestId },
  /** Start the document queries of one page of a completed import's patients, from row `fromRow`. */
  'bulk.document-queries': {
    payload: z.object({ requestId: id, fromRow: z.number().int().min(0) }),
    key: (p: { requestId: string; fromRow: number }) => `${p.requestId}:${p.fromRow}`,
  },
  /** Download a document query's documents from the network, then convert them. */
  'documents.query': { payload: z.object({ accountId: id, queryId: id }), key: (p: { queryId: string }) => p.queryId },
  /** Convert one uploaded document. */
  'documents.convert': { payload: z.object({ accountId: id, documentId: id }), key: (p: { documentId: string }) => p.documentId },
  /** Send the download URLs of a patient's documents (the message id is chosen when the request is made). */
  'documents.bulk-urls': {
    payload: z.object({ accountId: id, patientId: id, requestId: id, messageId: id, metadata: z.record(z.string(), z.string()).optional() }),
    key: (p: { requestId: string }) => p.requestId,
  },
  /** Build the file of a consolidated data query and send its message. */
  'documents.consolidated': { payload: z.object({ accountId: id, queryId: id }), key: (p: { queryId: string }) => p.queryId },
  /** Delete a blob whose URL has expired (search results, rendered records, consolidated files). */
  'documents.delete-blob': { payload: z.object({ key: id }), key: (p: { key: string }) => p.key },
  /** Run one source of a network query. */
  'network.source': {
    payload: z.object({ accountId: id, queryId: id, source: z.enum(NETWORK_SOURCES) }),
    key: (p: { queryId: string; source: string }) => `${p.queryId}:${p.source}`,
  },
} as const;

export type JobType = keyof typeof JOBS;

export const JOB_TYPES = Object.keys(JOBS) as JobType[];

export type JobPayload<T extends JobType> = z.output<(typeof JOBS)[T]['payload']>;

/** How a job is queued beside its payload; see `NewJob`. The key is the catalogue's, never the caller's. */
export interface JobOptions {
  runAt?: string;
  lane?: JobLane;
  fairnessKey?: string;
  maxAttempts?: number;
}

/**
 * The job to enqueue for `type` with `payload`. Its deduplication key is `<type>:<the catalogue's key of the
 * payload>`, so two requests for the same work (the same query, document, request page) queue it once.
 */
export function newJob<T extends JobType>(type: T, payload: JobPayload<T>, options: JobOptions = {}): NewJob {
  const keyOf = JOBS[type].key as (payload: JobPayload<T>) => string;
  return { type, payload: payload as JsonValue, key: `${type}:${keyOf(payload)}`, ...options };
}

/** A handler of one job type: the payload arrives parsed. Idempotent, as the queue delivers at least once. */
export type TypedJobHandler<T extends JobType> = (payload: JobPayload<T>, job: ClaimedJob) => Promise<void>;

export type JobHandlers = { [T in JobType]: TypedJobHandler<T> };

export type JobHandler = (payload: JsonValue, job: ClaimedJob) => Promise<void>;

/**
 * The handlers as the queue runner calls them (by type string, with the stored payload), each parsing its
 * payload first. A payload that does not parse throws, like any failure: the queue retries it and at last
 * dead-letters it, and nothing runs on a payload of the wrong shape.
 */
export function runnableHandlers(handlers: JobHandlers): Record<JobType, JobHandler> {
  const entries = JOB_TYPES.map((type): [JobType, JobHandler] => {
    const handle = handlers[type] as TypedJobHandler<typeof type>;
    const schema = JOBS[type].payload;
    return [
      type,
      async (payload, job) => {
        const parsed = schema.safeParse(payload);
        if (!parsed.success) throw new Error(`job ${type} has a malformed payload: ${parsed.error.issues.map((issue) => issue.path.join('.') || '(root)').join(', ')}`);
        await handle(parsed.data as never, job);
      },
    ];
  });
  return Object.fromEntries(entries) as Record<JobType, JobHandler>;
}

/** Whether a job that failed with `error` on this attempt ends its work as failed. */
export type GivesUp = (job: Pick<ClaimedJob, 'attempt' | 'maxAttempts'>, error: unknown) => boolean;

/**
 * Runs a job's work; when it fails on the attempt that `givesUp`, first ends the work visibly (`end`: a
 * query or import marked failed with its messages) rather than leaving it `processing` forever. The error
 * is thrown on in every case, for the queue to retry or dead-letter the job.
 */
export async function endingOnLastAttempt(job: Pick<ClaimedJob, 'attempt' | 'maxAttempts'>, givesUp: GivesUp, run: () => Promise<void>, end: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (givesUp(job, error)) await end();
    throw error;
  }
}

/**
 * One query per patient at a time (document, consolidated, network): the running one is returned and queued
 * again, in case its first enqueue was lost (the job key makes that a no-op otherwise, or moves it to the
 * lane now asked for); else a new one is made, stored, then queued.
 */
export async function runningOrStarted<Q>(running: Q | undefined, start: { make: () => Q; store: (query: Q) => Promise<void>; enqueue: (query: Q) => Promise<void> }): Promise<Q> {
  if (running) {
    await start.enqueue(running);
    return running;
  }
  const query = start.make();
  await start.store(query);
  await start.enqueue(query);
  return query;
}
