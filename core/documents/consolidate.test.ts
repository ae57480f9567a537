import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { patientResourcesArb } from '../../spec/arbitraries/fhir.js';
import type { FhirResourceRecord } from '../domain/types.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { adoptDocumentResources, consolidate, ConsolidatedRecord, SOURCE_DOCUMENT_EXTENSION, withoutProvenance } from './consolidate.js';
import { dedupeResources, resourceKey } from './dedupe.js';
import { referencesIn, withReferencesReplaced } from './references.js';

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
    resources: resources.map((r) => ({ ...withReferencesReplaced(r, renamed), id: `${prefix}${r.id}` })),
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
        expect(records.map((r) => withoutProvenance(r.resource as FhirResource))).toEqual(all.resources);

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
          // The resource names the same documents.
          const named = ((record.resource.extension as { url: string; valueString: string }[] | undefined) ?? []).filter((e) => e.url === SOURCE_DOCUMENT_EXTENSION);
          expect(named.map((e) => e.valueString)).toEqual(record.sourceDocumentIds);
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

/** A DocumentReference as storeDocument writes it: sourced from its document, not yet naming it. */
const storedDocumentReference = (id: string): FhirResourceRecord => ({
  accountId: ACCOUNT,
  patientId: PATIENT,
  resourceType: 'DocumentReference',
  id,
  resource: { resourceType: 'DocumentReference', id, status: 'current', subject: { reference: `Patient/${PATIENT}` } },
  sourceDocumentIds: [id],
  updatedAt: 't0',
});

const keyOf = (r: { resourceType: string; id: string }) => `${r.resourceType}/${r.id}`;

/**
 * Folds `steps` both ways: `consolidate` over the whole stored set each time, and a ConsolidatedRecord;
 * each step's records, writes and removals must be the same.
 */
function foldBothWays(start: readonly FhirResourceRecord[], steps: readonly Doc[]): void {
  let whole = [...start];
  const record = new ConsolidatedRecord(ACCOUNT, PATIENT, start);
  steps.forEach((doc, step) => {
    const expected = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: `t${step + 1}`, existing: whole, incoming: doc });
    const actual = record.fold(doc, `t${step + 1}`);
    expect([...record.all()].sort(byTypeThenId), `step ${step}`).toEqual(expected.records);
    expect([...actual.changed].sort(byTypeThenId)).toEqual([...expected.changed].sort(byTypeThenId));
    expect(actual.removed.map(keyOf).sort()).toEqual(expected.removed.map(keyOf).sort());
    whole = expected.records;
  });
}

describe('ConsolidatedRecord (incremental fold)', () => {
  // Steps pick a document, folded under its own id or another one (a document re-issued with the same
  // entries: the same resource keys from two documents), so documents are folded again, and out of order.
  const stepsArb = documentsArb.chain((docs) =>
    fc
      .array(fc.record({ doc: fc.nat({ max: docs.length - 1 }), as: fc.nat({ max: 5 }) }), { minLength: 1, maxLength: 7 })
      .map((picks) => picks.map(({ doc, as }) => ({ documentId: as < docs.length ? docs[as]!.documentId : `doc-other-${as}`, resources: docs[doc]!.resources }))),
  );

  test('folding a document into the record gives exactly what consolidating the whole set gives', () => {
    fc.assert(
      fc.property(stepsArb, fc.nat({ max: 2 }), (steps, references) => {
        const start = Array.from({ length: references }, (_, i) => storedDocumentReference(`doc-${i}`));
        foldBothWays(start, steps);
      }),
      { numRuns: 150 },
    );
  });

  test('the candidates of a document are the stored resources it can merge with, not the rest of the record', () => {
    const condition = (id: string, code: string, onset: string): FhirResource => ({
      resourceType: 'Condition',
      id,
      code: { coding: [{ system: 'http://snomed.info/sct', code }] },
      onsetDateTime: onset,
    });
    // A record of 500 conditions, each its own fact.
    const stored = consolidate({
      accountId: ACCOUNT,
      patientId: PATIENT,
      now: 't1',
      existing: [],
      incoming: { documentId: 'old', resources: Array.from({ length: 500 }, (_, i) => condition(`c${i}`, `${1000 + i}`, '2012-01-01')) },
    }).records;
    const record = new ConsolidatedRecord(ACCOUNT, PATIENT, stored);
    const incoming = [condition('n1', '1007', '2012-01-01'), condition('n2', '1008', '2013-05-05'), condition('n3', '9999', '2012-01-01')];
    expect(record.candidatesOf(incoming).map(keyOf)).toEqual(['Condition/c7']);

    const { changed, removed } = record.fold({ documentId: 'new', resources: incoming }, 't2');
    // n1 is c7 again (c7 survives: the smaller id), n2 another episode of c8, n3 new.
    expect(changed.map(keyOf).sort()).toEqual(['Condition/c7', 'Condition/n2', 'Condition/n3']);
    expect(changed.find((r) => r.id === 'c7')!.sourceDocumentIds).toEqual(['new', 'old']);
    expect(removed).toEqual([]);
    expect([...record.all()]).toHaveLength(502);
  });

  test('a merge reaches the stored resources that reference what was merged away, and what then agrees with them', () => {
    // Stored: a practitioner and a role naming it. The document brings a richer copy of the practitioner
    // under a smaller id (it survives) and a role naming that copy: once the stored role's reference is
    // rewritten, the two roles are the same and merge too.
    const practitioner = (id: string, extra: Record<string, unknown> = {}): FhirResource => ({
      resourceType: 'Practitioner',
      id,
      identifier: [{ system: 'http://hl7.org/fhir/sid/us-npi', value: '1234567893' }],
      ...extra,
    });
    const role = (id: string, practitionerId: string): FhirResource => ({ resourceType: 'PractitionerRole', id, practitioner: { reference: `Practitioner/${practitionerId}` } });
    const unrelated = Array.from({ length: 50 }, (_, i): FhirResource => ({ resourceType: 'Location', id: `l${i}`, name: `Room ${i}` }));
    const first: Doc = { documentId: 'first', resources: [practitioner('p9'), role('r9', 'p9'), ...unrelated] };
    const second: Doc = { documentId: 'second', resources: [practitioner('p1', { name: [{ family: 'Doe' }] }), role('r1', 'p1')] };
    foldBothWays([], [first, second]);

    const record = new ConsolidatedRecord(ACCOUNT, PATIENT, consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: 't1', existing: [], incoming: first }).records);
    const { changed, removed } = record.fold(second, 't2');
    expect(removed.map(keyOf).sort()).toEqual(['Practitioner/p9', 'PractitionerRole/r9']);
    expect(changed.map(keyOf).sort()).toEqual(['Practitioner/p1', 'PractitionerRole/r1']);
  });

  test("a stored medication's drug is read from the Medication it names, though the document names none", () => {
    const drug = { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '197380' }] };
    const first: Doc = {
      documentId: 'first',
      resources: [
        { resourceType: 'Medication', id: 'm1', code: drug },
        { resourceType: 'MedicationStatement', id: 's1', status: 'active', medicationReference: { reference: 'Medication/m1' } },
      ],
    };
    const second: Doc = { documentId: 'second', resources: [{ resourceType: 'MedicationStatement', id: 's2', status: 'active', medicationCodeableConcept: drug }] };
    foldBothWays([], [first, second]);
  });
});

describe('consolidate (fixtures)', () => {
  const converter = new MedplumCcdaConverter();
  const fixture = (name: string) => readFileSync(fileURLToPath(new URL(`../../sandbox-data/ccda/${name}`, import.meta.url)), 'utf8');
  const FIXTURES = ['care-plan.xml', 'ccd-1.xml', 'ccd-2.xml', 'consultation-note.xml', 'discharge-summary.xml', 'history-and-physical.xml', 'procedure-note.xml', 'progress-note.xml'];
  const countByType = (records: readonly FhirResourceRecord[]) => {
    const counts: Record<string, number> = {};
    for (const record of records) counts[record.resourceType] = (counts[record.resourceType] ?? 0) + 1;
    return counts;
  };

  test('a document re-issued under a new id adds no resource but its Composition; each resource names both documents', async () => {
    for (const name of FIXTURES) {
      const xml = fixture(name);
      // The same document with another document id: every converted resource gets another id.
      const reissued = xml.replace(/(<ClinicalDocument[\s\S]*?<id )[^>]*\/>/, '$1root="2.16.840.1.113883.19.5.99999.1" extension="REISSUED"/>');
      expect(reissued, name).not.toBe(xml);
      const [original, again] = await Promise.all([converter.convert(xml), converter.convert(reissued)]);
      const originalIds = new Set((original.entry ?? []).map((entry) => entry.resource!.id));
      expect((again.entry ?? []).filter((entry) => originalIds.has(entry.resource!.id)).map((entry) => entry.resource!.resourceType), name).toEqual([]);

      const first = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: 't1', existing: [], incoming: { documentId: 'first', resources: (original.entry ?? []).map((e) => e.resource!) } });
      const second = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: 't2', existing: first.records, incoming: { documentId: 'again', resources: (again.entry ?? []).map((e) => e.resource!) } });
      expect(countByType(second.records), name).toEqual({ ...countByType(first.records), Composition: 2 });
      for (const record of second.records) {
        if (record.resourceType !== 'Composition') expect(record.sourceDocumentIds, `${name} ${record.resourceType}`).toEqual(['again', 'first']);
      }
    }
  });

  test('distinct episodes of one condition stay distinct across documents', async () => {
    let records: FhirResourceRecord[] = [];
    for (const name of ['ccd-1.xml', 'care-plan.xml', 'ccd-1.xml']) {
      const bundle = await converter.convert(fixture(name));
      records = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: name, existing: records, incoming: { documentId: name, resources: (bundle.entry ?? []).map((e) => e.resource!) } }).records;
    }
    const onsets = records
      .filter((r) => r.resourceType === 'Condition' && JSON.stringify(r.resource.code).includes('"233604007"'))
      .map((r) => String(r.resource.onsetDateTime).slice(0, 10))
      .sort();
    // ccd-1: 1998 (ended), 2012 (at the encounter), 2013; the care plan's health concern: 2013-06-16.
    expect(onsets).toEqual(['1998-03-10', '2012-09-25', '2013-06-16', '2013-07-03']);
  });

  test('the same medication from two documents is stored once, sourced from both; unchanged records keep their time', async () => {
    const [ccd, consultation] = await Promise.all([converter.convert(fixture('ccd-1.xml')), converter.convert(fixture('consultation-note.xml'))]);
    const resourcesOf = (bundle: typeof ccd) => (bundle.entry ?? []).map((entry) => entry.resource!);
    const first = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: 't1', existing: [], incoming: { documentId: 'ccd', resources: resourcesOf(ccd) } });
    const second = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: 't2', existing: first.records, incoming: { documentId: 'consultation', resources: resourcesOf(consultation) } });

    // Atenolol 1 tablet from 2012-03-18 in both: one statement, naming both documents.
    const atenolol = second.records.filter((r) => r.resourceType === 'MedicationStatement' && JSON.stringify(r.resource).includes('197380'));
    expect(atenolol).toHaveLength(1);
    expect(atenolol[0]!.sourceDocumentIds).toEqual(['ccd', 'consultation']);
    expect(JSON.stringify(atenolol[0]!.resource.extension)).toContain('"consultation"');
    // Albuterol 2 puffs from 2011 (ccd-1, ongoing) and from 2013 (the consultation): the periods overlap,
    // so one statement whose period covers both.
    const albuterol = second.records.filter((r) => r.resourceType === 'MedicationStatement' && JSON.stringify(r.resource).includes('573621'));
    expect(albuterol).toHaveLength(1);
    expect(albuterol[0]!.resource.effectivePeriod).toEqual({ start: '2011-01-03' });
    // ccd-1 names pneumonia three times, three episodes (onset 1998, onset 2012 at the encounter, onset 2013):
    // they stay three.
    expect(first.records.filter((r) => r.resourceType === 'Condition' && JSON.stringify(r.resource).includes('233604007'))).toHaveLength(3);
    expect(second.records.some((r) => r.resourceType === 'Patient')).toBe(false);
    const untouched = second.records.filter((r) => r.updatedAt === 't1');
    // The history and physical's albuterol is 1 mg/actuat from 2007 to 2012: another dose, another statement.
    const hp = await converter.convert(fixture('history-and-physical.xml'));
    const third = consolidate({ accountId: ACCOUNT, patientId: PATIENT, now: 't3', existing: second.records, incoming: { documentId: 'hp', resources: resourcesOf(hp) } });
    expect(third.records.filter((r) => r.resourceType === 'MedicationStatement' && JSON.stringify(r.resource).includes('573621'))).toHaveLength(2);
    expect(untouched.length).toBeGreaterThan(0);
    expect(untouched.length + second.changed.length).toBe(second.records.length);
  });
});
