import { readdirSync, readFileSync } from 'node:fs';
import { threadId as mainThreadId } from 'node:worker_threads';
import { afterEach, describe, expect, test } from 'vitest';
import { foldDocuments } from '../../core/documents/fold.js';
import { searchTextOfCcda } from '../../core/documents/search-text.js';
import { isCoreError } from '../../core/errors.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';
import { PooledCcdaConverter, type PooledCcdaConverterOptions } from './pooled.ccda.js';

const fixturesDir = new URL('../../sandbox-data/ccda/', import.meta.url);
const fixtures = readdirSync(fixturesDir)
  .filter((name) => name.endsWith('.xml'))
  .sort()
  .map((name) => readFileSync(new URL(name, fixturesDir), 'utf8'));
const SECRET = 'Eve Everywoman 1975-05-01';

const opened: PooledCcdaConverter[] = [];
function pooled(options: PooledCcdaConverterOptions = {}): PooledCcdaConverter {
  const converter = new PooledCcdaConverter(options);
  opened.push(converter);
  return converter;
}
const testWorker = (name: string) => new URL(`./test-workers/${name}.worker.mjs`, import.meta.url);

afterEach(async () => {
  await Promise.all(opened.splice(0).map((converter) => converter.close()));
});

/** The error's code and whether its message or cause chain mentions the given text. */
async function failure(promise: Promise<unknown>, text: string): Promise<{ code: string; leaks: boolean }> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isCoreError(error)) return { code: `non-CoreError: ${String(error)}`, leaks: false };
  return { code: error.code, leaks: error.message.includes(text) };
}

describe('PooledCcdaConverter', () => {
  test('conversions run on pool threads, several at once, never on the main thread', async () => {
    const threads: number[] = [];
    const converter = pooled({ maxThreads: 2, onConverted: ({ threadId }) => threads.push(threadId) });
    // Two rounds of every fixture at once: with both threads busy, the work is shared between them.
    await Promise.all([...fixtures, ...fixtures].map((xml) => converter.convert(xml)));
    expect(threads).toHaveLength(fixtures.length * 2);
    expect(new Set(threads).size).toBe(2);
    expect(threads).not.toContain(mainThreadId);
  });

  test('the search text of a document is made on a pool thread, the same as the core makes it, also of hostile text', async () => {
    const threads: number[] = [];
    const converter = pooled({ maxThreads: 1, onConverted: ({ threadId }) => threads.push(threadId) });
    const hostile = '<'.repeat(2_000_000);
    const texts = await Promise.all([...fixtures, hostile].map((xml) => converter.searchText(xml)));
    expect(texts).toEqual([...fixtures, hostile].map((xml) => searchTextOfCcda(xml)));
    expect(texts[0]).toContain('Eve');
    expect(threads).toHaveLength(fixtures.length + 1);
    expect(threads).not.toContain(mainThreadId);
  });

  test('the bundles are the in-process converter’s, bit for bit', async () => {
    const converter = pooled({ maxThreads: 2 });
    const inProcess = new MedplumCcdaConverter();
    const [pooledBundles, localBundles] = await Promise.all([
      Promise.all(fixtures.map((xml) => converter.convert(xml))),
      Promise.all(fixtures.map((xml) => inProcess.convert(xml))),
    ]);
    expect(pooledBundles).toEqual(localBundles);
  });

  test('a reading (text and conversion in one trip) is what the in-process converter reads, unreadable documents included, on a pool thread', async () => {
    const threads: number[] = [];
    const converter = pooled({ maxThreads: 1, onConverted: ({ threadId }) => threads.push(threadId) });
    const inProcess = new MedplumCcdaConverter();
    const documents = [...fixtures, '<letter>not clinical</letter>'];
    const readings = await Promise.all(documents.map((xml) => converter.read(xml)));
    // The bundle crosses the thread boundary as its JSON text: the same bundle, key order included.
    const asObjects = readings.map((reading) => {
      const { conversion } = reading;
      if (!conversion.ok || !('bundleJson' in conversion)) return reading;
      return { ...reading, conversion: { ok: true, bundle: JSON.parse(conversion.bundleJson) as unknown } };
    });
    const local = await Promise.all(documents.map((xml) => inProcess.read(xml)));
    expect(asObjects).toEqual(local);
    readings.forEach((reading, i) => {
      const here = local[i]!.conversion;
      if (reading.conversion.ok && 'bundleJson' in reading.conversion && here.ok && 'bundle' in here) expect(reading.conversion.bundleJson).toBe(JSON.stringify(here.bundle));
    });
    expect(readings.filter((reading) => reading.conversion.ok && 'bundleJson' in reading.conversion)).toHaveLength(fixtures.length);
    expect(readings.map((reading) => reading.searchText)).toEqual(documents.map((xml) => searchTextOfCcda(xml)));
    expect(readings.at(-1)!.conversion).toMatchObject({ ok: false, code: 'CCDA_INVALID' });
    expect(threads).toHaveLength(documents.length);
    expect(threads).not.toContain(mainThreadId);
  });

  test('a fold on a pool thread, of records and bundles as JSON text, has the outcome of the core’s fold of objects', async () => {
    const converter = pooled({ maxThreads: 1 });
    const bundles = await Promise.all(fixtures.slice(0, 3).map((xml) => new MedplumCcdaConverter().convert(xml)));
    const base = { accountId: 'acc', patientId: 'pat', now: '2026-11-27T12:00:00.000Z' };
    // What the first document left stored, then the two others folded into it, here and on the thread.
    const stored = foldDocuments({ ...base, stored: [], documents: [{ documentId: 'd1', bundle: bundles[0]! }] }).changed;
    expect(stored.length).toBeGreaterThan(5);
    const rest = [
      { documentId: 'd2', bundle: bundles[1]! },
      { documentId: 'd3', bundle: bundles[2]! },
    ];
    const here = foldDocuments({ ...base, stored, documents: rest });
    const there = await converter.fold({ ...base, stored, documents: rest.map(({ documentId, bundle }) => ({ documentId, bundleJson: JSON.stringify(bundle) })) });
    expect(there).toEqual(here);
    expect(here.changed.length).toBeGreaterThan(0);
  });

  test('a fold that fails on its thread is INTERNAL, without the records it was given', async () => {
    const converter = pooled({ maxThreads: 1 });
    const record = { accountId: 'acc', patientId: 'pat', resourceType: 'Condition', id: 'c1', resourceJson: SECRET, sourceDocumentIds: ['d1'], updatedAt: '2026-11-27T12:00:00.000Z' };
    const request = { accountId: 'acc', patientId: 'pat', now: '2026-11-27T12:00:00.000Z', stored: [record], documents: [] };
    expect(await failure(converter.fold(request), SECRET)).toEqual({ code: 'INTERNAL', leaks: false });
    // The pool carries on.
    expect((await converter.fold({ ...request, stored: [] })).changed).toEqual([]);
  });

  test('a document the converter cannot read is CCDA_INVALID with the converter’s reason', async () => {
    const converter = pooled({ maxThreads: 1 });
    const error = await converter.convert('<note>hi</note>').catch((caught: unknown) => caught);
    expect(isCoreError(error) && error.code).toBe('CCDA_INVALID');
    expect((error as Error).message).toMatch(/^Not a readable C-CDA document: /);
  });

  test('a thread that dies mid-conversion is INTERNAL, without the document, and the pool carries on', async () => {
    const crashing = pooled({ maxThreads: 1, workerFile: testWorker('crash') });
    expect(await failure(crashing.convert(SECRET), SECRET)).toEqual({ code: 'INTERNAL', leaks: false });
    expect(await failure(crashing.convert(SECRET), SECRET)).toEqual({ code: 'INTERNAL', leaks: false });
  });

  test('an unexpected error in a thread is INTERNAL, without the document it quotes', async () => {
    const throwing = pooled({ maxThreads: 1, workerFile: testWorker('throw') });
    const error = await throwing.convert(SECRET).catch((caught: unknown) => caught);
    expect(isCoreError(error) && error.code).toBe('INTERNAL');
    expect((error as Error).message).not.toContain(SECRET);
  });

  test('an answer that is no task result is INTERNAL', async () => {
    const garbage = pooled({ maxThreads: 1, workerFile: testWorker('garbage') });
    expect(await failure(garbage.convert(SECRET), SECRET)).toEqual({ code: 'INTERNAL', leaks: false });
  });

  test('beyond the queue bound a conversion is refused with RATE_LIMITED; close() fails the waiting ones with INTERNAL', async () => {
    const stuck = pooled({ maxThreads: 1, maxQueue: 2, workerFile: testWorker('hang') });
    const outcomes = Array.from({ length: 10 }, () => failure(stuck.convert(SECRET), SECRET));
    // The refusals are immediate; the rest wait for a thread that never frees up until close().
    await new Promise((resolve) => setImmediate(resolve));
    await stuck.close();
    const codes = (await Promise.all(outcomes)).map((outcome) => {
      expect(outcome.leaks).toBe(false);
      return outcome.code;
    });
    // At most one running, two queued and one held for a thread still starting.
    expect(codes.filter((code) => code === 'RATE_LIMITED').length).toBeGreaterThanOrEqual(6);
    expect(codes.every((code) => code === 'RATE_LIMITED' || code === 'INTERNAL')).toBe(true);
  });

  test('after close() a conversion is INTERNAL and close() may be called again', async () => {
    const converter = pooled({ maxThreads: 1 });
    await converter.close();
    await converter.close();
    expect(await failure(converter.convert(fixtures[0]!), SECRET)).toEqual({ code: 'INTERNAL', leaks: false });
  });

  test('the pool size defaults to the machine’s parallelism, at least 1', () => {
    expect(new PooledCcdaConverter().maxThreads).toBeGreaterThanOrEqual(1);
    expect(new PooledCcdaConverter({ maxThreads: 0 }).maxThreads).toBe(1);
  });
});
