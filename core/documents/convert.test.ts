import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { MemoryBlob } from '../../adapters/blob/memory/memory.blob.js';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import type { DocumentRecord } from '../domain/types.js';
import type { FoldRequest } from '../ports/ccda.port.js';
import { convertDocument, convertDocuments } from './convert.js';
import { foldDocuments } from './fold.js';

const FIXTURES = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const FILES = ['ccd-1.xml', 'ccd-2.xml', 'care-plan.xml', 'consultation-note.xml', 'progress-note.xml', 'broken'];
const converter = new MedplumCcdaConverter();
const xmlOf = (file: string) => (file === 'broken' ? '<letter>not clinical</letter>' : readFileSync(`${FIXTURES}${file}`, 'utf8'));

/** A patient's documents waiting for conversion, stored as the download step leaves them. */
async function world(files: readonly string[]) {
  const deps = { storage: new MemoryStorage(), blob: new MemoryBlob(), ccda: converter, search: new MiniSearchIndex(), clock: new SteppedClock('2026-02-01T00:00:00.000Z') };
  const documents: DocumentRecord[] = [];
  for (const [i, file] of files.entries()) {
    const document: DocumentRecord = {
      id: `00000000-0000-7000-8000-${String(i + 1).padStart(12, '0')}`,
      accountId: 'acct',
      patientId: 'patient',
      source: 'hie',
      fileName: `patient/${i}-${file}`,
      description: file,
      status: 'current',
      indexed: '2026-02-01T00:00:00.000Z',
      mimeType: 'application/xml',
      size: 1,
      type: {},
      organizationIdentifiers: [],
      blobKey: `acct/documents/${i}`,
      conversionStatus: 'processing',
      createdAt: '2026-02-01T00:00:00.000Z',
    };
    await deps.blob.put(document.blobKey, xmlOf(file), { contentType: 'application/xml' });
    await deps.storage.documents.insert(document);
    documents.push(document);
  }
  return { deps, documents };
}

describe('convertDocuments', () => {
  test('several documents at once leave exactly what converting them one after the other leaves', async () => {
    await fc.assert(
      fc.asyncProperty(fc.shuffledSubarray(FILES, { minLength: 1, maxLength: 4 }), async (files) => {
        const together = await world(files);
        const oneByOne = await world(files);
        const returned = await convertDocuments(together.deps, together.documents);
        for (const document of oneByOne.documents) await convertDocument(oneByOne.deps, document);

        const resources = (w: typeof together) => w.deps.storage.fhirResources.listByPatient('acct', 'patient');
        expect(await resources(together)).toEqual(await resources(oneByOne));
        const documents = (w: typeof together) => w.deps.storage.documents.listByPatient('acct', 'patient');
        expect(await documents(together)).toEqual(await documents(oneByOne));
        expect(returned).toEqual(await documents(together));
        expect(returned.map((d) => d.conversionStatus)).toEqual(files.map((file) => (file === 'broken' ? 'failed' : 'completed')));
        // Again: nothing is processing any more, so nothing changes.
        expect(await convertDocuments(together.deps, returned)).toEqual(returned);
      }),
      { numRuns: 6 },
    );
  }, 120_000);

  test('a converter that folds is handed the stored records and the ready bundles as JSON text, and its outcome is what is written', async () => {
    const files = ['ccd-1.xml', 'care-plan.xml', 'ccd-2.xml'];
    const here = await world(files);
    const there = await world(files);
    // What the first document left stored, folded on this thread in both worlds.
    await convertDocument(here.deps, here.documents[0]!);
    await convertDocument(there.deps, there.documents[0]!);
    const requests: FoldRequest[] = [];
    const folding = Object.assign(Object.create(converter) as MedplumCcdaConverter, {
      fold: async (request: FoldRequest) => {
        requests.push(request);
        return foldDocuments(structuredClone(request));
      },
    });
    const ready = new Map(
      await Promise.all(there.documents.slice(1).map(async (document, i) => [document.id, { bundleJson: JSON.stringify(await converter.convert(xmlOf(files[i + 1]!))) }] as const)),
    );
    const storedBefore = await there.deps.storage.fhirResources.listByPatientJson('acct', 'patient');
    await convertDocuments(here.deps, here.documents.slice(1));
    await convertDocuments({ ...there.deps, ccda: folding }, there.documents.slice(1), ready);

    expect(requests).toHaveLength(1);
    expect(requests[0]!.stored).toEqual(storedBefore);
    expect(storedBefore.length).toBeGreaterThan(5);
    expect(requests[0]!.documents.map((document) => 'bundleJson' in document)).toEqual([true, true]);
    const resources = (w: typeof here) => w.deps.storage.fhirResources.listByPatient('acct', 'patient');
    expect(await resources(there)).toEqual(await resources(here));
    const documents = (w: typeof here) => w.deps.storage.documents.listByPatient('acct', 'patient');
    expect(await documents(there)).toEqual(await documents(here));
  }, 60_000);
});

describe('a document too large to convert', () => {
  test('is stored and listed, and its conversion fails with the reason, without the file being read or converted', async () => {
    const { deps, documents } = await world(['ccd-1.xml', 'ccd-2.xml']);
    const big = { ...documents[0]!, size: 40 * 1024 * 1024 };
    await deps.storage.documents.update(big);
    let reads = 0;
    const get = deps.blob.get.bind(deps.blob);
    deps.blob.get = async (key: string) => (reads++, get(key));
    const [refused, converted] = await convertDocuments({ ...deps, config: { maxConversionBytes: 32 * 1024 * 1024 } }, [big, documents[1]!]);
    expect(refused!.conversionStatus).toBe('failed');
    expect(refused!.conversionError).toBe('The document is 40 MB; documents over 32 MB are stored but not converted');
    expect(converted!.conversionStatus).toBe('completed');
    expect(reads).toBe(1);
  });

  test('the limit is checked against the stored bytes too', async () => {
    const { deps, documents } = await world(['ccd-1.xml']);
    const [refused] = await convertDocuments({ ...deps, config: { maxConversionBytes: 100 * 1024 } }, documents);
    expect(refused!.conversionError).toMatch(/^The document is \d+ KB; documents over 100 KB are stored but not converted$/);
  });
});
