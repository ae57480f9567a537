import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { CoreError } from '../../core/errors.js';
import type { CcdaConverterPort, CcdaReading, FhirBundle, FoldOutcome, FoldRequest } from '../../core/ports/ccda.port.js';
import type { CcdaTaskResult, ReadTaskConversion } from './ccda.task.js';

export interface PooledCcdaConverterOptions {
  /**
   * Threads converting at once. Default one per core but the one the event loop runs on, at least 1: the
   * main thread has work of its own per document (storage, deduplication, indexing), and each thread holds
   * its own copy of the converter (~65 MB).
   */
  maxThreads?: number;
  /**
   * Conversions that may wait for a free thread (at least 1); one more is refused with RATE_LIMITED. Default 64. The
   * document queries convert one document at a time per job, so they hold at most the queue runner's
   * concurrency; what fills the queue is requests rendering documents on the fly, which nothing else bounds.
   */
  maxQueue?: number;
  /** Ms a thread beyond the first may stay idle before it stops. Default 60 s: a thread takes about a second to load the converter. */
  idleTimeoutMs?: number;
  /** The thread entry; tests swap it for misbehaving ones. Default ccda.worker.mjs beside this file. */
  workerFile?: URL;
  /** Told after each conversion which thread ran it (diagnostics and tests). */
  onConverted?: (facts: { threadId: number }) => void;
}

const DEFAULT_MAX_QUEUE = 64;
const INTERNAL_MESSAGE = 'The C-CDA converter failed';
const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

/**
 * C-CDA to FHIR with the same converter as MedplumCcdaConverter, run in a pool of worker threads: the
 * conversion is CPU-bound, so on the main thread it would use one core and stall every request meanwhile.
 * The pool starts on the first conversion (a host that never converts starts no thread). `close()` stops
 * the threads; conversions in flight then fail with INTERNAL.
 */
export class PooledCcdaConverter implements CcdaConverterPort {
  readonly maxThreads: number;
  private readonly maxQueue: number;
  private readonly idleTimeoutMs: number;
  private readonly workerFile: URL;
  private readonly onConverted: ((facts: { threadId: number }) => void) | undefined;
  private pool: Piscina<unknown, unknown> | undefined;
  private closed = false;

  constructor(options: PooledCcdaConverterOptions = {}) {
    this.maxThreads = Math.max(1, Math.floor(options.maxThreads ?? availableParallelism() - 1));
    this.maxQueue = Math.max(1, Math.floor(options.maxQueue ?? DEFAULT_MAX_QUEUE));
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.workerFile = options.workerFile ?? new URL('./ccda.worker.mjs', import.meta.url);
    this.onConverted = options.onConverted;
  }

  private async run(task: unknown, name?: string): Promise<unknown> {
    if (this.closed) throw new CoreError('INTERNAL', 'The C-CDA converter is closed');
    const pool = (this.pool ??= new Piscina<unknown, unknown>({
      filename: this.workerFile.href,
      minThreads: 1,
      maxThreads: this.maxThreads,
      maxQueue: this.maxQueue,
      idleTimeout: this.idleTimeoutMs,
    }));
    try {
      return await pool.run(task, name === undefined ? {} : { name });
    } catch (cause) {
      // A thread that crashed, was stopped by close(), or a full queue: the cause names no document, but
      // it stays out of the message all the same.
      // Piscina tells a full queue apart by its message only.
      if (cause instanceof Error && /queue is at limit|no task queue available/i.test(cause.message)) {
        throw new CoreError('RATE_LIMITED', 'Too many documents are being converted; try again shortly');
      }
      throw new CoreError('INTERNAL', 'The C-CDA converter failed', { cause });
    }
  }

  async searchText(xml: string): Promise<string> {
    const result = (await this.run(xml, 'searchText')) as { ok?: unknown; text?: unknown; threadId?: unknown } | undefined;
    if (result?.ok !== true || typeof result.text !== 'string' || typeof result.threadId !== 'number') {
      throw new CoreError('INTERNAL', 'The C-CDA converter answered something unexpected');
    }
    this.onConverted?.({ threadId: result.threadId });
    return result.text;
  }

  async convert(xml: string): Promise<FhirBundle> {
    const result = await this.run(xml);
    if (!isTaskResult(result)) throw new CoreError('INTERNAL', 'The C-CDA converter answered something unexpected');
    this.onConverted?.({ threadId: result.threadId });
    if (result.ok) return result.bundle;
    if (result.code === 'CCDA_INVALID') throw new CoreError('CCDA_INVALID', result.message);
    throw new CoreError('INTERNAL', INTERNAL_MESSAGE);
  }

  async read(xml: string): Promise<CcdaReading> {
    const result = (await this.run(xml, 'read')) as { ok?: unknown; searchText?: unknown; conversion?: unknown } | undefined;
    if (result?.ok !== true || typeof result.searchText !== 'string' || !isReadConversion(result.conversion)) {
      throw new CoreError('INTERNAL', 'The C-CDA converter answered something unexpected');
    }
    const conversion = result.conversion;
    this.onConverted?.({ threadId: conversion.threadId });
    if (conversion.ok) return { searchText: result.searchText, conversion: { ok: true, bundleJson: conversion.bundleJson } };
    const message = conversion.code === 'CCDA_INVALID' ? conversion.message : INTERNAL_MESSAGE;
    return { searchText: result.searchText, conversion: { ok: false, code: conversion.code, message } };
  }

  /**
   * The fold on a pool thread: the stored records go as the JSON text the database gave and come back as
   * the text the INSERT binds, so the main thread neither parses nor copies them field by field.
   */
  async fold(request: FoldRequest): Promise<FoldOutcome> {
    const result = (await this.run(request, 'fold')) as { ok?: unknown; outcome?: unknown } | undefined;
    if (result?.ok === true && isFoldOutcome(result.outcome)) return result.outcome;
    if (result?.ok === false) throw new CoreError('INTERNAL', 'Folding the documents into the record failed');
    throw new CoreError('INTERNAL', 'The C-CDA converter answered something unexpected');
  }

  /** Stops the threads. Idempotent; conversions asked for afterwards fail with INTERNAL. */
  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    await pool?.destroy();
  }
}

function isTaskResult(value: unknown): value is CcdaTaskResult {
  if (typeof value !== 'object' || value === null) return false;
  const result = value as Record<string, unknown>;
  if (typeof result.threadId !== 'number') return false;
  if (result.ok === true) return typeof result.bundle === 'object' && result.bundle !== null;
  return (result.code === 'CCDA_INVALID' && typeof result.message === 'string') || result.code === 'INTERNAL';
}

function isReadConversion(value: unknown): value is ReadTaskConversion {
  if (typeof value === 'object' && value !== null && (value as { ok?: unknown }).ok === true) {
    const conversion = value as Record<string, unknown>;
    return typeof conversion.threadId === 'number' && typeof conversion.bundleJson === 'string';
  }
  return isTaskResult(value) && !value.ok;
}

function isFoldOutcome(value: unknown): value is FoldOutcome {
  if (typeof value !== 'object' || value === null) return false;
  const outcome = value as Record<string, unknown>;
  return Array.isArray(outcome.changed) && Array.isArray(outcome.removed);
}
