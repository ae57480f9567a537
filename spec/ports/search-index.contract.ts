import fc from 'fast-check';
import { expect, type TestAPI } from 'vitest';
import type { SearchDocument, SearchIndexPort } from '../../core/ports/search-index.port.js';

export interface SearchIndexContractOptions {
  test: TestAPI;
  /** A fresh, empty index. */
  make: () => SearchIndexPort | Promise<SearchIndexPort>;
  /** fast-check runs for the property tests. Default 40. */
  numRuns?: number;
  /**
   * A fresh index that forgets patients to stay within a small memory bound (a few of
   * the small patients below fit, not all). Absent for indexes that never forget.
   */
  makeForgetful?: () => SearchIndexPort | Promise<SearchIndexPort>;
  /** The index serializes a patient's index and restores it (the port's optional `serialize` and `restore`). Default false. */
  serializes?: boolean;
}

const A = 'account-a';
const B = 'account-b';
const P = 'patient-1';

const documents: SearchDocument[] = [
  { key: 'Condition/1', text: 'Pneumonia 2012-08-06 confirmed by chest x-ray' },
  { key: 'Condition/2', text: 'Asthma, mixed' },
  { key: 'MedicationRequest/1', text: 'atenolol 25 MG Oral Tablet' },
  { key: 'MedicationRequest/2', text: 'metformin 500 MG Oral Tablet twice daily' },
  { key: 'AllergyIntolerance/1', text: 'Penicillin G hives' },
  { key: 'Observation/1', text: 'Heart rate 72 /min' },
];

const sorted = (keys: string[]) => [...keys].sort();

/** Edits a query term tolerates, per the port: none under 4 characters, one from 4, two from 8. */
function allowedEdits(term: string): number {
  return term.length >= 8 ? 2 : term.length >= 4 ? 1 : 0;
}

/** Optimal string alignment distance: Levenshtein where swapping two neighbouring characters is one edit. */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The word with the characters at i and i+1 swapped. */
function transpose(word: string, i: number): string {
  return word.slice(0, i) + word[i + 1] + word[i] + word.slice(i + 2);
}

export function defineSearchIndexContract(options: SearchIndexContractOptions): void {
  const { test, make } = options;
  const numRuns = options.numRuns ?? 40;

  async function filled(): Promise<SearchIndexPort> {
    const index = await make();
    await index.upsert(A, P, documents);
    return index;
  }

  test('an empty index finds nothing', async () => {
    const index = await make();
    expect(await index.search(A, P, 'pneumonia')).toEqual([]);
  });

  test('a word finds the documents that contain it, whatever its case', async () => {
    const index = await filled();
    expect(await index.search(A, P, 'pneumonia')).toEqual(['Condition/1']);
    expect(await index.search(A, P, 'PNEUMONIA')).toEqual(['Condition/1']);
    expect(sorted(await index.search(A, P, 'Tablet'))).toEqual(['MedicationRequest/1', 'MedicationRequest/2']);
  });

  test('several terms must all match, so more terms narrow the result', async () => {
    const index = await filled();
    expect(sorted(await index.search(A, P, 'oral tablet'))).toEqual(['MedicationRequest/1', 'MedicationRequest/2']);
    expect(await index.search(A, P, 'oral tablet metformin')).toEqual(['MedicationRequest/2']);
    expect(await index.search(A, P, 'metformin pneumonia')).toEqual([]);
  });

  test('an unrelated word finds nothing; a query with no words finds nothing', async () => {
    const index = await filled();
    expect(await index.search(A, P, 'zebra')).toEqual([]);
    expect(await index.search(A, P, '')).toEqual([]);
    expect(await index.search(A, P, '  , ; ')).toEqual([]);
  });

  test('terms of 4 to 7 characters tolerate one edit, not two', async () => {
    const index = await filled();
    expect(await index.search(A, P, 'asthna')).toEqual(['Condition/2']); // substitution
    expect(await index.search(A, P, 'astma')).toEqual(['Condition/2']); // deletion
    expect(await index.search(A, P, 'hivess')).toEqual(['AllergyIntolerance/1']); // insertion
    expect(await index.search(A, P, 'azthna')).toEqual([]); // two substitutions
  });

  test('terms of 8 or more characters tolerate two edits, not three', async () => {
    const index = await filled();
    expect(await index.search(A, P, 'pneumonai')).toEqual(['Condition/1']);
    expect(await index.search(A, P, 'pnaumonea')).toEqual(['Condition/1']);
    expect(await index.search(A, P, 'penicilin')).toEqual(['AllergyIntolerance/1']);
    expect(await index.search(A, P, 'pxaumonex')).toEqual([]);
  });

  test('a transposition counts as one edit', async () => {
    const index = await filled();
    expect(await index.search(A, P, 'astmha')).toEqual(['Condition/2']); // 6 characters, one transposition
    expect(await index.search(A, P, 'hvies')).toEqual(['AllergyIntolerance/1']);
    expect(await index.search(A, P, 'pnuemonix')).toEqual(['Condition/1']); // 9 characters: transposition + substitution
    expect(await index.search(A, P, 'npeumonai')).toEqual(['Condition/1']); // 9 characters: two transpositions
    expect(await index.search(A, P, 'astmhx')).toEqual([]); // 6 characters: transposition + substitution is two edits
  });

  test('terms under 4 characters must match exactly or as a prefix', async () => {
    const index = await filled();
    expect(await index.search(A, P, 'mg')).toEqual(expect.arrayContaining(['MedicationRequest/1', 'MedicationRequest/2']));
    expect(await index.search(A, P, 'hvs')).toEqual([]);
    expect(await index.search(A, P, 'rat')).toEqual(['Observation/1']); // prefix of "rate"
  });

  test('a prefix of 3 or more characters matches longer words; shorter ones do not', async () => {
    const index = await filled();
    expect(await index.search(A, P, 'metf')).toEqual(['MedicationRequest/2']);
    expect(await index.search(A, P, 'ate')).toEqual(['MedicationRequest/1']);
    expect(await index.search(A, P, 'at')).toEqual([]);
  });

  test('an exact match ranks before a fuzzy one', async () => {
    const index = await make();
    await index.upsert(A, P, [
      { key: 'Observation/fuzzy', text: 'glucoze level' },
      { key: 'Observation/exact', text: 'glucose level' },
    ]);
    expect(await index.search(A, P, 'glucose')).toEqual(['Observation/exact', 'Observation/fuzzy']);
  });

  test('upsert replaces a document by key and is idempotent', async () => {
    const index = await filled();
    await index.upsert(A, P, [{ key: 'Condition/2', text: 'Bronchitis' }]);
    await index.upsert(A, P, [{ key: 'Condition/2', text: 'Bronchitis' }]);
    expect(await index.search(A, P, 'asthma')).toEqual([]);
    expect(await index.search(A, P, 'bronchitis')).toEqual(['Condition/2']);
  });

  test('remove drops the keys and ignores missing ones', async () => {
    const index = await filled();
    await index.remove(A, P, ['Condition/1', 'Condition/404']);
    expect(await index.search(A, P, 'pneumonia')).toEqual([]);
    expect(await index.search(A, P, 'asthma')).toEqual(['Condition/2']);
    await index.remove(A, 'nobody', ['Condition/2']);
    expect(await index.search(A, P, 'asthma')).toEqual(['Condition/2']);
    await index.remove(A, P, documents.map((d) => d.key));
    expect(await index.search(A, P, 'asthma')).toEqual([]);
    await index.upsert(A, P, [documents[1]!]);
    expect(await index.search(A, P, 'asthma')).toEqual(['Condition/2']);
  });

  test('each account and patient has its own index', async () => {
    const index = await make();
    await index.upsert(A, P, [{ key: 'Condition/1', text: 'pneumonia' }]);
    await index.upsert(B, P, [{ key: 'Condition/9', text: 'pneumonia asthma' }]);
    await index.upsert(A, 'patient-2', [{ key: 'Condition/5', text: 'asthma' }]);
    expect(await index.search(A, P, 'pneumonia')).toEqual(['Condition/1']);
    expect(await index.search(B, P, 'pneumonia')).toEqual(['Condition/9']);
    expect(await index.search(A, P, 'asthma')).toEqual([]);
    expect(await index.search(A, 'patient-2', 'asthma')).toEqual(['Condition/5']);
    await index.remove(B, P, ['Condition/1']);
    expect(await index.search(A, P, 'pneumonia')).toEqual(['Condition/1']);
  });

  defineStampContract(test, make);
  if (options.makeForgetful) defineForgettingContract(test, options.makeForgetful, numRuns);
  if (options.serializes) defineSerializeContract(test, make, numRuns);

  const word = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'), minLength: 4, maxLength: 14 });

  test('a word within the allowed edits of a document word (a transposition counting as one) finds it', async () => {
    await fc.assert(
      fc.asyncProperty(word, fc.array(fc.tuple(fc.constantFrom('sub', 'del', 'ins', 'swap'), fc.nat(), fc.constantFrom(...'xyzq')), { minLength: 1, maxLength: 2 }), async (target, edits) => {
        let typo = target;
        for (const [kind, at, char] of edits) {
          const i = at % typo.length;
          if (kind === 'sub') typo = typo.slice(0, i) + char + typo.slice(i + 1);
          else if (kind === 'del') typo = typo.slice(0, i) + typo.slice(i + 1);
          else if (kind === 'ins') typo = typo.slice(0, i) + char + typo.slice(i);
          else if (i + 1 < typo.length) typo = transpose(typo, i);
        }
        // Edits can interact (an insertion inside a transposed pair); what counts is the distance.
        fc.pre(editDistance(typo, target) <= allowedEdits(typo));
        const index = await make();
        await index.upsert(A, P, [{ key: 'Doc/target', text: `noted ${target} today` }, { key: 'Doc/other', text: 'unrelated words only' }]);
        expect(await index.search(A, P, typo)).toContain('Doc/target');
      }),
      { numRuns },
    );
  });

  test('what is found always contains every term of the query (exactly, as a prefix or within the edits)', async () => {
    const vocabulary = ['pneumonia', 'asthma', 'atenolol', 'tablet', 'oral', 'hives', 'penicillin', 'glucose', 'fever', 'cough'];
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.subarray(vocabulary, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }),
        fc.subarray(vocabulary, { minLength: 1, maxLength: 2 }),
        async (texts, query) => {
          const index = await make();
          await index.upsert(A, P, texts.map((words, i) => ({ key: `Doc/${i}`, text: words.join(' ') })));
          const found = await index.search(A, P, query.join(' '));
          const expected = texts.flatMap((words, i) => (query.every((q) => words.includes(q)) ? [`Doc/${i}`] : []));
          expect(sorted(found)).toEqual(sorted(expected));
        },
      ),
      { numRuns },
    );
  });
}

type Make = () => SearchIndexPort | Promise<SearchIndexPort>;

/** What every index promises of its stamps (search-index.port.ts, `stampOf` and `setStamp`). */
function defineStampContract(test: TestAPI, make: Make): void {
  test('a stamp is undefined until set; setting it again replaces it, for that patient only', async () => {
    const index = await make();
    await index.upsert(A, P, documents);
    await index.upsert(B, P, documents);
    expect(await index.stampOf(A, P)).toBeUndefined();
    await index.setStamp(A, P, 'stamp-1');
    expect(await index.stampOf(A, P)).toBe('stamp-1');
    await index.setStamp(A, P, 'stamp-2');
    await index.setStamp(A, P, 'stamp-2');
    expect(await index.stampOf(A, P)).toBe('stamp-2');
    expect(await index.stampOf(B, P)).toBeUndefined();
    expect(await index.stampOf(A, 'patient-2')).toBeUndefined();
  });

  test('changing the documents leaves the stamp alone (the caller stamps what it changed)', async () => {
    const index = await make();
    await index.upsert(A, P, documents);
    await index.setStamp(A, P, 'stamp-1');
    await index.upsert(A, P, [{ key: 'Condition/3', text: 'Bronchitis' }]);
    await index.remove(A, P, ['Condition/1']);
    expect(await index.stampOf(A, P)).toBe('stamp-1');
  });
}

/** An index that forgets patients forgets each one's stamp with its data, never one without the other. */
function defineForgettingContract(test: TestAPI, makeForgetful: Make, numRuns: number): void {
  const PATIENTS = 40;
  /** About the size of the documents above: small patients, many of them. */
  const patientDocuments = (n: number): SearchDocument[] =>
    documents.map((document) => ({ key: document.key, text: `${document.text} marker${n}` }));
  const allKeys = sorted(documents.map((document) => document.key));
  const everyPatient = Array.from({ length: PATIENTS }, (_, n) => n);

  test('whenever a patient still has its stamp, its documents are all still found', async () => {
    await fc.assert(
      // Every patient once, in some order, then some of them again.
      fc.asyncProperty(fc.shuffledSubarray(everyPatient, { minLength: PATIENTS }), fc.array(fc.nat({ max: PATIENTS - 1 }), { maxLength: 2 * PATIENTS }), async (first, again) => {
        const index = await makeForgetful();
        const forgotten = new Set<number>();
        for (const n of [...first, ...again]) {
          const patient = `patient-${n}`;
          if ((await index.stampOf(A, patient)) === undefined) {
            // What the core does for a patient whose index has no stamp: rebuild it, then stamp it.
            await index.upsert(A, patient, patientDocuments(n));
            await index.setStamp(A, patient, `stamp-${n}`);
          }
          for (let other = 0; other < PATIENTS; other++) {
            const stamp = await index.stampOf(A, `patient-${other}`);
            if (stamp === undefined) {
              forgotten.add(other);
              continue;
            }
            expect(stamp).toBe(`stamp-${other}`);
            expect(sorted(await index.search(A, `patient-${other}`, `marker${other}`))).toEqual(allKeys);
          }
          // The patient just rebuilt is searchable at once.
          expect(sorted(await index.search(A, patient, `marker${n}`))).toEqual(allKeys);
        }
        // It does forget: the bound is smaller than all of them together.
        expect(forgotten.size).toBeGreaterThan(0);
      }),
      { numRuns: Math.max(5, Math.floor(numRuns / 4)) },
    );
  });
}

/** What an index that serializes promises (search-index.port.ts, `serialize` and `restore`). */
function defineSerializeContract(test: TestAPI, make: Make, numRuns: number): void {
  const queries = ['pneumonia', 'PNEUMONIA', 'Tablet', 'metfromin', 'oral tablet', 'pen', 'xylophone', 'hart'];

  test('a restored index answers every query as the serialized one did, in the same order, unstamped', async () => {
    const original = await make();
    await original.upsert(A, P, documents);
    await original.remove(A, P, ['Observation/1']);
    await original.setStamp(A, P, 'stamp-1');
    const serialized = await original.serialize!(A, P);
    expect(serialized).toBeTypeOf('string');

    // In a fresh index, as in another process.
    const restored = await make();
    expect(await restored.restore!(A, P, serialized!)).toBe(true);
    for (const query of queries) expect(await restored.search(A, P, query), query).toEqual(await original.search(A, P, query));
    expect(await restored.stampOf(A, P)).toBeUndefined();
    expect(await restored.search(B, P, 'pneumonia')).toEqual([]);

    // It goes on like any other: changes apply to it, and restoring twice is the same as once.
    await restored.upsert(A, P, [{ key: 'Condition/3', text: 'Bronchitis' }]);
    await restored.remove(A, P, ['Condition/1']);
    expect(await restored.search(A, P, 'bronchitis')).toEqual(['Condition/3']);
    expect(await restored.search(A, P, 'pneumonia')).toEqual([]);
    expect(await restored.restore!(A, P, serialized!)).toBe(true);
    expect(await restored.restore!(A, P, serialized!)).toBe(true);
    expect(await restored.search(A, P, 'pneumonia')).toEqual(['Condition/1']);
    expect(await restored.search(A, P, 'bronchitis')).toEqual([]);
  });

  test('a patient never given a document serializes to undefined; an unreadable text is refused and changes nothing', async () => {
    const index = await make();
    expect(await index.serialize!(A, P)).toBeUndefined();
    await index.upsert(A, P, documents);
    await index.setStamp(A, P, 'stamp-1');
    const serialized = (await index.serialize!(A, P))!;
    for (const bad of ['', 'not an index', '{}\n{}', serialized.slice(0, serialized.length / 2), serialized.replace('\n', '')]) {
      expect(await index.restore!(A, P, bad), JSON.stringify(bad.slice(0, 40))).toBe(false);
    }
    expect(await index.search(A, P, 'pneumonia')).toEqual(['Condition/1']);
    expect(await index.stampOf(A, P)).toBe('stamp-1');
    expect(await index.restore!(A, 'patient-2', 'not an index')).toBe(false);
    expect(await index.serialize!(A, 'patient-2')).toBeUndefined();
  });

  test('any set of documents restores to an index that finds the same keys for any word', async () => {
    const vocabulary = ['pneumonia', 'asthma', 'atenolol', 'tablet', 'Hôpital', 'penicillin', 'glucose', 'fever', 'cough', 'x-ray'];
    await fc.assert(
      fc.asyncProperty(fc.array(fc.subarray(vocabulary, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }), fc.constantFrom(...vocabulary, 'hopital', 'fevr'), async (texts, query) => {
        const original = await make();
        await original.upsert(A, P, texts.map((words, i) => ({ key: `Doc/${i}`, text: words.join(' ') })));
        const restored = await make();
        expect(await restored.restore!(A, P, (await original.serialize!(A, P))!)).toBe(true);
        expect(await restored.search(A, P, query)).toEqual(await original.search(A, P, query));
      }),
      { numRuns },
    );
  });
}
