import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import type { DocumentRecord } from '../domain/types.js';
import { CoreError } from '../errors.js';
import type { CcdaConverterPort } from '../ports/ccda.port.js';
import { searchTextOfCcda } from './search-text.js';
import { storeDocument, storeDocuments } from './store-document.js';
import { dataStamp, indexReflects } from './patient-index.js';

/*
 * A document's search text is made where the converter runs (its threads), never past the conversion
 * size limit, and before anything is recorded.
 */

const XML = readFileSync(new URL('../../sandbox-data/ccda/ccd-1.xml', import.meta.url), 'utf8');
const BYTES = new TextEncoder().encode(XML);

function documentOf(size: number): DocumentRecord {
  return {
    id: '00000000-0000-7000-8000-000000000001',
    accountId: 'acct',
    patientId: 'patient',
    source: 'hie',
    fileName: 'patient/summary.xml',
    description: 'Quarterly summary',
    status: 'current',
    indexed: '2026-02-01T00:00:00.000Z',
    mimeType: 'application/xml',
    size,
    type: {},
    organizationIdentifiers: [],
    blobKey: 'acct/documents/1',
    conversionStatus: 'processing',
    createdAt: '2026-02-01T00:00:00.000Z',
  };
}

/**
 * The index holds the patient (as after a search), current with no document yet: changes are applied to it
 * as they land. An index holding nothing for a patient is left alone until their first search.
 */
async function holdPatient(search: MiniSearchIndex): Promise<void> {
  await search.upsert('acct', 'patient', [{ key: 'Basic/held', text: 'held' }]);
  await search.setStamp('acct', 'patient', dataStamp([]));
}

/** A converter, and an index holding the patient. */
async function world(searchText: (xml: string) => Promise<string>, maxConversionBytes?: number) {
  const calls: number[] = [];
  const ccda: CcdaConverterPort = {
    convert: async () => {
      throw new Error('not used');
    },
    searchText: async (xml) => {
      calls.push(xml.length);
      return searchText(xml);
    },
  };
  const deps = {
    storage: new MemoryStorage(),
    search: new MiniSearchIndex(),
    clock: new SteppedClock('2026-02-01T00:00:00.000Z'),
    ccda,
    config: maxConversionBytes === undefined ? {} : { maxConversionBytes },
  };
  await holdPatient(deps.search);
  return { deps, calls };
}

// A word of the document's narrative, not of its description or file name.
const WORD = 'Eve';

describe('storeDocument', () => {
  test('asks the converter for the text, and the document is found by it', async () => {
    const { deps, calls } = await world(async (xml) => searchTextOfCcda(xml));
    await storeDocument(deps, documentOf(BYTES.byteLength), { mode: 'insert', ccda: BYTES });
    expect(calls).toEqual([XML.length]);
    expect(await deps.search.search('acct', 'patient', WORD)).toEqual(['DocumentReference/00000000-0000-7000-8000-000000000001']);
  });

  test('a document past the size limit is not read for its text: found by its description only', async () => {
    const { deps, calls } = await world(async (xml) => searchTextOfCcda(xml), BYTES.byteLength - 1);
    await storeDocument(deps, documentOf(BYTES.byteLength), { mode: 'insert', ccda: BYTES });
    expect(calls).toEqual([]);
    expect(await deps.search.search('acct', 'patient', WORD)).toEqual([]);
    expect(await deps.search.search('acct', 'patient', 'quarterly')).toHaveLength(1);
  });

  test('a converter too busy to take it leaves the text to this thread: the document is still found by it', async () => {
    const { deps, calls } = await world(async () => {
      throw new CoreError('RATE_LIMITED', 'busy');
    });
    await storeDocument(deps, documentOf(BYTES.byteLength), { mode: 'insert', ccda: BYTES });
    expect(calls).toHaveLength(1);
    expect(await deps.search.search('acct', 'patient', WORD)).toHaveLength(1);
  });

  test('an index that holds nothing for the patient (never searched) is not built as documents land: no work, no memory', async () => {
    const { deps } = await world(async (xml) => searchTextOfCcda(xml));
    const fresh = { ...deps, search: new MiniSearchIndex() };
    await storeDocument(fresh, documentOf(BYTES.byteLength), { mode: 'insert', ccda: BYTES });
    expect(await fresh.search.stampOf('acct', 'patient')).toBeUndefined();
    expect(await fresh.search.search('acct', 'patient', 'quarterly')).toEqual([]);
    expect(await fresh.storage.documents.listByPatient('acct', 'patient')).toHaveLength(1);
  });

  test('a converter that fails otherwise records nothing, so the step is retried whole', async () => {
    const { deps } = await world(async () => {
      throw new CoreError('INTERNAL', 'thread died');
    });
    await expect(storeDocument(deps, documentOf(BYTES.byteLength), { mode: 'insert', ccda: BYTES })).rejects.toThrow('thread died');
    expect(await deps.storage.documents.listByPatient('acct', 'patient')).toEqual([]);
  });

  test('several documents of a patient are recorded in one transaction, as storing them one after the other would leave them', async () => {
    const documents = [1, 2, 3].map((n) => ({ ...documentOf(BYTES.byteLength), id: `00000000-0000-7000-8000-00000000000${n}`, fileName: `patient/${n}.xml`, blobKey: `acct/documents/${n}` }));
    const together = await world(async (xml) => searchTextOfCcda(xml));
    const oneByOne = await world(async (xml) => searchTextOfCcda(xml));
    let transactions = 0;
    const transaction = together.deps.storage.transaction.bind(together.deps.storage);
    together.deps.storage.transaction = (work) => (transactions++, transaction(work));
    // The text given (read with the conversion) is not asked for again.
    await storeDocuments(together.deps, documents.map((document, i) => ({ document, options: { mode: 'insert', ccda: BYTES, ...(i === 0 ? { ccdaText: searchTextOfCcda(XML) } : {}) } })));
    for (const document of documents) await storeDocument(oneByOne.deps, document, { mode: 'insert', ccda: BYTES });

    expect(transactions).toBe(1);
    expect(together.calls).toHaveLength(2);
    for (const w of [together, oneByOne]) {
      const stored = await w.deps.storage.documents.listByPatient('acct', 'patient');
      expect(await indexReflects(w.deps, 'acct', 'patient', dataStamp(stored))).toBe(true);
    }
    expect(await together.deps.storage.documents.listByPatient('acct', 'patient')).toEqual(await oneByOne.deps.storage.documents.listByPatient('acct', 'patient'));
    expect(await together.deps.storage.fhirResources.listByPatient('acct', 'patient')).toEqual(await oneByOne.deps.storage.fhirResources.listByPatient('acct', 'patient'));
    expect(await together.deps.search.search('acct', 'patient', WORD)).toEqual(await oneByOne.deps.search.search('acct', 'patient', WORD));
  });
});
