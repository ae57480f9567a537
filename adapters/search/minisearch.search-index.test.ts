import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { beforeAll, describe, expect, test } from 'vitest';
import { dedupeResources, resourceKey } from '../../core/documents/dedupe.js';
import { searchTextOf, searchTextOfCcda } from '../../core/documents/search-text.js';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import type { SearchDocument } from '../../core/ports/search-index.port.js';
import { MedplumCcdaConverter } from '../ccda/medplum.ccda.js';
import { DEFAULT_SEARCH_CACHE_BYTES, editsAllowed, ESTIMATED_BYTES_PER_PATIENT, MiniSearchIndex, normaliseTerm, normaliseTermPlain, transpositionsOf } from './minisearch.search-index.js';

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const A = 'acct';
const P = 'pat';

describe('helpers', () => {
  test('edits allowed by term length', () => {
    expect(['abc', 'abcd', 'abcdefg', 'abcdefgh'].map(editsAllowed)).toEqual([0, 1, 1, 2]);
  });
  test('a term is normalised the same with the ASCII shortcut as without it', () => {
    const accented = fc.constantFrom('é', 'Ô', 'ñ', 'ß', 'İ', 'ǅ', '\u0301', 'ﬁ', 'Å', '\u212a');
    const text = fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), accented), { maxLength: 6 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 20 }), text), (term) => {
        expect(normaliseTerm(term)).toBe(normaliseTermPlain(term));
      }),
    );
    expect(['HÔPITAL', 'Metformin', 'K\u212a'].map(normaliseTerm)).toEqual(['hopital', 'metformin', 'kk']);
  });
  test('transpositions swap each pair of different neighbours', () => {
    expect(transpositionsOf('abca').sort()).toEqual(['abac', 'acba', 'baca']);
    expect(transpositionsOf('aa')).toEqual([]);
  });
});

describe('MiniSearchIndex', () => {
  test('accents never matter', async () => {
    const index = new MiniSearchIndex();
    await index.upsert(A, P, [{ key: 'Organization/1', text: 'Hôpital Saint-Éloi' }]);
    expect(await index.search(A, P, 'hopital eloi')).toEqual(['Organization/1']);
    expect(await index.search(A, P, 'HÔPITAL')).toEqual(['Organization/1']);
  });
});

describe('MiniSearchIndex within its budget', () => {
  const operation = fc.oneof(
    fc.record({ kind: fc.constant('upsert' as const), patient: fc.nat({ max: 11 }), keys: fc.array(fc.nat({ max: 9 }), { minLength: 1, maxLength: 6 }), length: fc.integer({ min: 1, max: 200 }) }),
    fc.record({ kind: fc.constant('remove' as const), patient: fc.nat({ max: 11 }), keys: fc.array(fc.nat({ max: 9 }), { maxLength: 4 }) }),
    fc.record({ kind: fc.constant('search' as const), patient: fc.nat({ max: 11 }) }),
  );

  test('what it holds never exceeds the budget, and what it still holds is exactly what it was given', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { maxLength: 120 }), async (operations) => {
        // Any one patient here fits (10 documents of at most 207 characters); a few together do not.
        const budgetBytes = 30_000;
        const index = new MiniSearchIndex({ budgetBytes });
        /** What each patient was given, as long as the index still holds it. */
        const given = new Map<number, Map<string, string>>();
        for (const step of operations) {
          const patient = `patient-${step.patient}`;
          if ((await index.stampOf(A, patient)) === undefined) given.delete(step.patient);
          if (step.kind === 'upsert') {
            const documents = step.keys.map((key) => ({ key: `Doc/${key}`, text: `word${step.patient} ${'x'.repeat(step.length)}` }));
            await index.upsert(A, patient, documents);
            const held = given.get(step.patient) ?? new Map<string, string>();
            for (const document of documents) held.set(document.key, document.text);
            given.set(step.patient, held);
            await index.setStamp(A, patient, 'held');
          } else if (step.kind === 'remove') {
            await index.remove(A, patient, step.keys.map((key) => `Doc/${key}`));
            for (const key of step.keys) given.get(step.patient)?.delete(`Doc/${key}`);
          } else {
            const found = await index.search(A, patient, `word${step.patient}`);
            expect(found.sort()).toEqual([...(given.get(step.patient)?.keys() ?? [])].sort());
          }
          expect(index.usage.bytes).toBeLessThanOrEqual(budgetBytes);
          expect(index.usage.bytes).toBeGreaterThanOrEqual(index.usage.patients * ESTIMATED_BYTES_PER_PATIENT);
        }
      }),
      { numRuns: 60 },
    );
  });

  test('the patient used last stays even when it alone weighs more than the budget', async () => {
    const index = new MiniSearchIndex({ budgetBytes: 10_000 });
    await index.upsert(A, 'small', [{ key: 'Doc/1', text: 'asthma' }]);
    await index.upsert(A, 'large', [{ key: 'Doc/1', text: `pneumonia ${'x'.repeat(5_000)}` }]);
    await index.setStamp(A, 'large', 'stamp');
    expect(await index.search(A, 'large', 'pneumonia')).toEqual(['Doc/1']);
    expect(await index.stampOf(A, 'small')).toBeUndefined();
    expect(await index.search(A, 'small', 'asthma')).toEqual([]);
    expect(index.usage).toMatchObject({ patients: 1, evictions: 1 });
  });

  test('a stamp is not recorded for a patient it holds nothing for', async () => {
    const index = new MiniSearchIndex();
    await index.setStamp(A, P, 'stamp');
    expect(await index.stampOf(A, P)).toBeUndefined();
    expect(index.usage).toMatchObject({ patients: 0, bytes: 0, budgetBytes: DEFAULT_SEARCH_CACHE_BYTES });
  });

  test('a budget must be a positive number of bytes', () => {
    expect(() => new MiniSearchIndex({ budgetBytes: 0 })).toThrow(/budgetBytes/);
    expect(() => new MiniSearchIndex({ budgetBytes: Number.NaN })).toThrow(/budgetBytes/);
  });
});

/** Every resource of every HL7 example, and each document's text. */
const converted: FhirResource[] = [];
const documents: SearchDocument[] = [];
beforeAll(async () => {
  const converter = new MedplumCcdaConverter();
  for (const fileName of readdirSync(fixturesDir).filter((name) => name.endsWith('.xml'))) {
    const xml = readFileSync(fixturesDir + fileName, 'utf8');
    const bundle = await converter.convert(xml);
    converted.push(...(bundle.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : [])));
    documents.push({ key: `DocumentReference/${fileName}`, text: searchTextOfCcda(xml) });
  }
});

describe('MiniSearchIndex over the converted HL7 examples', () => {
  const index = new MiniSearchIndex();
  const resources = new Map<string, FhirResource>();

  beforeAll(async () => {
    // Compositions carry the whole narrative; leaving them out keeps the resource hits about the resources.
    const deduped = dedupeResources(converted).resources.filter((resource) => resource.resourceType !== 'Composition');
    for (const resource of deduped) resources.set(resourceKey(resource), resource);
    await index.upsert(A, P, [...documents, ...deduped.map((resource) => ({ key: resourceKey(resource), text: searchTextOf(resource) }))]);
  });

  const typesOf = (keys: string[]) => new Set(keys.map((key) => key.split('/')[0]));
  const textsOf = (keys: string[]) => keys.filter((key) => resources.has(key)).map((key) => searchTextOf(resources.get(key)!));

  test('a misspelt medication is found (atenlol, albuteral)', async () => {
    // The examples list them as medication history (moodCode EVN): statements of use, not orders. Atenolol
    // is one tablet in every document; albuterol is two puffs in three and 1 mg/actuat in another: two
    // statements, one per dose.
    for (const [typo, drug, statementCount] of [['atenlol', 'atenolol', 1], ['albuteral', 'albuterol', 2]] as const) {
      const found = await index.search(A, P, typo);
      const statements = found.filter((key) => key.startsWith('MedicationStatement/'));
      expect(statements).toHaveLength(statementCount);
      for (const text of textsOf(statements)) expect(text.toLowerCase()).toContain(drug);
    }
  });

  test('a misspelt problem is found once per episode, deduplicated across documents (pnuemonia)', async () => {
    const found = await index.search(A, P, 'pnuemonia');
    const conditions = found.filter((key) => key.startsWith('Condition/'));
    // The documents give pneumonia several episodes (1998, 2012, 2013...): each once.
    const episodes = conditions.map((key) => {
      const condition = resources.get(key)!;
      return `${String(condition.onsetDateTime).slice(0, 10)} ${String(condition.abatementDateTime ?? '').slice(0, 10)}`;
    });
    expect(conditions.length).toBeGreaterThan(1);
    expect(new Set(episodes).size).toBe(conditions.length);
    for (const text of textsOf(conditions)) expect(text).toContain('Pneumonia');
    expect(found).toEqual(expect.arrayContaining(['DocumentReference/ccd-1.xml', 'DocumentReference/progress-note.xml']));
  });

  test('a term of one document finds that document (cardiomegally, pacemaker, propofol)', async () => {
    expect((await index.search(A, P, 'cardiomegally')).filter((key) => key.startsWith('DocumentReference/'))).toEqual(['DocumentReference/progress-note.xml']);
    expect((await index.search(A, P, 'pacemaker')).filter((key) => key.startsWith('DocumentReference/'))).toEqual(['DocumentReference/ccd-1.xml']);
    expect(await index.search(A, P, 'propofol')).toContain('DocumentReference/procedure-note.xml');
  });

  test('more terms narrow the result', async () => {
    const tablet = await index.search(A, P, 'oral tablet');
    const atenolol = await index.search(A, P, 'oral tablet atenolol');
    expect(atenolol.length).toBeGreaterThan(0);
    expect(atenolol.length).toBeLessThan(tablet.length);
    expect(atenolol.every((key) => tablet.includes(key))).toBe(true);
    expect(typesOf(atenolol)).toContain('MedicationStatement');
  });

  test('an unrelated word finds nothing', async () => {
    expect(await index.search(A, P, 'zebra')).toEqual([]);
    expect(await index.search(A, P, 'pneumonia zebra')).toEqual([]);
  });
});

// Its speed is the search benchmark's to measure (bench/search.bench.ts: warm and cold p50/p99); here, that
// an index of that size answers typos and misses correctly.
describe('MiniSearchIndex at the size of a large patient', () => {
  test('5,000 resources: typos find what the right spelling finds, a word found nowhere finds nothing', async () => {
    const texts = converted.filter((resource) => resource.resourceType !== 'Composition').map(searchTextOf);
    const documents = Array.from({ length: 5000 }, (_, i) => ({ key: `Observation/${i}`, text: `${texts[i % texts.length]} visit ${i % 97} batch${i % 13}` }));
    const index = new MiniSearchIndex();
    await index.upsert(A, P, documents);
    for (const [typo, right] of [['pnuemonia', 'pneumonia'], ['blod presure', 'blood pressure'], ['atenolol oral tablte', 'atenolol oral tablet'], ['penicilin', 'penicillin']] as const) {
      const wanted = await index.search(A, P, right);
      expect(wanted.length, right).toBeGreaterThan(0);
      expect(new Set(await index.search(A, P, typo)), typo).toEqual(new Set(wanted));
    }
    expect(await index.search(A, P, 'zebra')).toEqual([]);
  });
});
