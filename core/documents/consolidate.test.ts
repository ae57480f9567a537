import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { patientResourcesArb } from '../../spec/arbitraries/fhir.js';
import type { FhirResourceRecord } from '../domain/types.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { adoptDocumentResources, consolidate } from './consolidate.js';
import { dedupeResources, referencesIn, resourceKey, rewriteReferences } from './dedupe.js';

const ACCOUNT = 'acct-1';
const PATIENT = 'our-patient';

interface Doc {
  documentId: string;
  resources: FhirResource[];
}

/** A document's resources with ids of its own (documents never share ids: the converter seeds them). */
function asDocument(resources: FhirResource[], index: number): Doc {
  const prefix = `d${index}-`;
  const renamed = new Map(resources.map((r) => [resourceKey(r), `${r.resourceType}/${prefix}${r.id}`]));
  return {
    documentId: `doc-${index}`,
    resources: resources.map((r) => ({ ...rewriteReferences(r, renamed), id: `${prefix}${r.id}` })),
  };
}

const documentsArb = fc
  .array(patientResourcesArb({ maxClinical: 12 }), { minLength: 1, maxLength: 4 })
  .map((docs) => docs.map(asDocument));

function fold(docs: readonly Doc[]): FhirResourceRecord[] {
  let stored: FhirResourceRecord[] = [];
  docs.forEach((doc, step) => {
    const result = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: `t${step}`, existing: stored, incoming: doc });
    // What a caller writes (changed) and deletes (removed) turns the stored set into `records`.
    const byKey = new Map(stored.map((r) => [`${r.resourceType}/${r.id}`, r]));
    for (const { resourceType, id } of result.removed) byKey.delete(`${resourceType}/${id}`);
    for (const record of result.changed) byKey.set(`${record.resourceType}/${record.id}`, record);
    expect([...byKey.values()].sort(byTypeThenId)).toEqual(result.records);
    stored = result.records;
  });
  return stored;
}

function byTypeThenId(a: FhirResourceRecord, b: FhirResourceRecord): number {
  return a.resourceType !== b.resourceType ? (a.resourceType < b.resourceType ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

const content = (records: readonly FhirResourceRecord[]) => records.map(({ resource, sourceDocumentIds }) => ({ resource, sourceDocumentIds }));

describe('consolidate (properties)', () => {
  test('folding documents one at a time equals deduplicating them all at once, with every source kept', () => {
    fc.assert(
      fc.property(documentsArb, (docs) => {
        const adopted = docs.map((doc) => ({ ...doc, resources: adoptDocumentResources(doc.resources, PATIENT) }));
        const all = dedupeResources(adopted.flatMap((doc) => doc.resources));
        const records = fold(docs);
        expect(records.map((r) => r.resource)).toEqual(all.resources);

        // Sources: a survivor lists each document that held it or a resource merged into it.
        const survivorOf = (key: string) => all.replaced.get(key) ?? key;
        const expected = new Map<string, Set<string>>();
        for (const doc of adopted) {
          for (const resource of doc.resources) {
            const key = survivorOf(resourceKey(resource));
            expected.set(key, (expected.get(key) ?? new Set()).add(doc.documentId));
          }
        }
        for (const record of records) {
          expect(record.sourceDocumentIds).toEqual([...expected.get(`${record.resourceType}/${record.id}`)!].sort());
        }
      }),
      { numRuns: 60 },
    );
  });

  test('the outcome does not depend on the order documents arrive in', () => {
    fc.assert(
      fc.property(
        documentsArb.chain((docs) => fc.tuple(fc.constant(docs), fc.shuffledSubarray(docs, { minLength: docs.length, maxLength: docs.length }))),
        ([docs, reordered]) => {
          expect(content(fold(reordered))).toEqual(content(fold(docs)));
        },
      ),
      { numRuns: 60 },
    );
  });

  test('folding a document again changes nothing (a retried job is harmless)', () => {
    fc.assert(
      fc.property(documentsArb, fc.nat(), (docs, pick) => {
        const stored = fold(docs);
        const again = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: 'later', existing: stored, incoming: docs[pick % docs.length]! });
        expect(again.changed).toEqual([]);
        expect(again.removed).toEqual([]);
        expect(again.records).toEqual(stored);
      }),
      { numRuns: 60 },
    );
  });

  test("documents' Patients become ours: none is stored and every Patient reference points to our patient", () => {
    fc.assert(
      fc.property(documentsArb, (docs) => {
        const records = fold(docs);
        expect(records.some((r) => r.resourceType === 'Patient')).toBe(false);
        for (const reference of referencesIn(records.map((r) => r.resource))) {
          if (reference.startsWith('Patient/')) expect(reference).toBe(`Patient/${PATIENT}`);
        }
        expect(records.every((r) => r.accountId === ACCOUNT && r.patientId === PATIENT)).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  test('a reference that resolved inside its document still resolves in the store', () => {
    fc.assert(
      fc.property(documentsArb, (docs) => {
        const records = fold(docs);
        const keys = new Set(records.map((r) => `${r.resourceType}/${r.id}`));
        // The generated documents reference only their own resources, apart from ids made to dangle (absent-N).
        for (const reference of referencesIn(records.map((r) => r.resource))) {
          if (reference.startsWith('Patient/') || reference.startsWith('#') || reference.includes('/absent-')) continue;
          expect(keys.has(reference), reference).toBe(true);
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe('consolidate (fixtures)', () => {
  const converter = new MedplumCcdaConverter();
  const fixture = (name: string) => readFileSync(fileURLToPath(new URL(`../../sandbox-data/ccda/${name}`, import.meta.url)), 'utf8');

  test('the same medication from two documents is stored once, sourced from both; unchanged records keep their time', async () => {
    const [ccd, hp] = await Promise.all([converter.convert(fixture('ccd-1.xml')), converter.convert(fixture('history-and-physical.xml'))]);
    const resourcesOf = (bundle: typeof ccd) => (bundle.entry ?? []).map((entry) => entry.resource!);
    const first = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: 't1', existing: [], incoming: { documentId: 'ccd', resources: resourcesOf(ccd) } });
    const second = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: 't2', existing: first.records, incoming: { documentId: 'hp', resources: resourcesOf(hp) } });

    const albuterol = second.records.filter((r) => r.resourceType === 'MedicationStatement' && JSON.stringify(r.resource).includes('573621'));
    expect(albuterol).toHaveLength(1);
    expect(albuterol[0]!.sourceDocumentIds).toEqual(['ccd', 'hp']);
    // ccd-1 alone names pneumonia in three entries: one survives.
    expect(first.records.filter((r) => r.resourceType === 'Condition' && JSON.stringify(r.resource).includes('233604007'))).toHaveLength(1);
    expect(second.records.some((r) => r.resourceType === 'Patient')).toBe(false);
    const untouched = second.records.filter((r) => r.updatedAt === 't1');
    expect(untouched.length).toBeGreaterThan(0);
    expect(untouched.length + second.changed.length).toBe(second.records.length);
  });
});
