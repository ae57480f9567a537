import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { isCoreError } from '../../core/errors.js';
import type { HiePatientQuery } from '../../core/ports/hie.port.js';
import { SandboxHieNetwork } from './sandbox.hie.js';

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const make = () => new SandboxHieNetwork({ fixturesDir });
const query = (patientId: string): HiePatientQuery => ({
  patientId,
  firstName: 'Jane',
  lastName: 'Doe',
  dob: '1980-01-01',
  genderAtBirth: 'F',
  zips: ['12345'],
});
const ids = Array.from({ length: 400 }, (_, i) => `patient-${i}`);

describe('SandboxHieNetwork', () => {
  test('the same patient gets the same documents from any instance', async () => {
    const first = make();
    const second = make();
    for (const id of ids.slice(0, 40)) {
      expect(await first.findDocuments(query(id))).toEqual(await second.findDocuments(query(id)));
    }
  });

  test('about one patient in five gets no document; the others get 1 to 4 distinct ones', async () => {
    const network = make();
    const counts = await Promise.all(ids.map(async (id) => (await network.findDocuments(query(id))).length));
    const none = counts.filter((c) => c === 0).length / counts.length;
    expect(none).toBeGreaterThan(0.12);
    expect(none).toBeLessThan(0.28);
    for (const count of counts) expect(count).toBeLessThanOrEqual(4);
    for (const size of [1, 2, 3, 4]) expect(counts).toContain(size);
    for (const id of ids.slice(0, 50)) {
      const names = (await network.findDocuments(query(id))).map((d) => d.fileName);
      expect(new Set(names).size).toBe(names.length);
    }
  });

  test('the choice depends on the patient id, not on the demographics', async () => {
    const network = make();
    const other = { ...query('patient-7'), firstName: 'Someone', lastName: 'Else', zips: [] };
    expect(await network.findDocuments(other)).toEqual(await network.findDocuments(query('patient-7')));
  });

  test('different patients get different selections and different document ids', async () => {
    const network = make();
    const selections = new Set<string>();
    const documentIds = new Set<string>();
    for (const id of ids.slice(0, 60)) {
      const refs = await network.findDocuments(query(id));
      selections.add(refs.map((r) => r.fileName).join(','));
      for (const ref of refs) {
        expect(documentIds.has(ref.networkDocumentId)).toBe(false);
        documentIds.add(ref.networkDocumentId);
      }
    }
    expect(selections.size).toBeGreaterThan(10);
  });

  test('metadata is read from the document: title, LOINC type, custodian and author organizations', async () => {
    const network = make();
    const all = new Map<string, Awaited<ReturnType<SandboxHieNetwork['findDocuments']>>[number]>();
    for (const id of ids) for (const ref of await network.findDocuments(query(id))) all.set(ref.fileName, ref);
    expect(all.size).toBe(8);

    const discharge = all.get('discharge-summary.xml')!;
    expect(discharge.description).toBe('Community Health and Hospitals: Discharge Summary');
    expect(discharge.mimeType).toBe('application/xml');
    expect(discharge.type).toEqual({
      coding: [{ system: 'http://loinc.org', code: '18842-5', display: 'Discharge summary' }],
      text: 'Discharge summary',
    });
    expect(discharge.organizationIdentifiers).toEqual([
      { name: 'Community Health and Hospitals', identifierValues: ['99999999', '2.16.840.1.113883.19.5.9999.1393'] },
    ]);

    const history = all.get('history-and-physical.xml')!;
    expect(history.description).toBe('Community Health and Hospitals: History & Physical');
    expect(all.get('progress-note.xml')!.type.coding?.[0]?.code).toBe('11506-3');
    expect(all.get('care-plan.xml')!.organizationIdentifiers.map((o) => o.name)).toEqual(['Good Health HIE', 'Good Health Hospital']);
  });

  test('retrieve returns the bytes of the document', async () => {
    const network = make();
    const id = ids.find((candidate) => candidate.endsWith('3'))!;
    let refs = await network.findDocuments(query(id));
    for (let i = 0; refs.length === 0; i++) refs = await network.findDocuments(query(`${id}-${i}`));
    const ref = refs[0]!;
    const bytes = await network.retrieve(ref);
    expect(Buffer.from(bytes).equals(readFileSync(fixturesDir + ref.fileName))).toBe(true);
  });

  test('retrieve of an id the network never gave is DOCUMENT_NOT_FOUND', async () => {
    const network = make();
    const [ref] = await network.findDocuments(query('patient-1')).then((r) => (r.length ? r : network.findDocuments(query('patient-2'))));
    for (const networkDocumentId of ['sandbox:abc:missing.xml', 'elsewhere:abc:ccd-1.xml', 'sandbox:abc:../ccd-1.xml', 'nonsense']) {
      const outcome = await network.retrieve({ ...ref!, networkDocumentId }).then(
        () => 'returned',
        (error: unknown) => (isCoreError(error) ? error.code : 'other error'),
      );
      expect(outcome).toBe('DOCUMENT_NOT_FOUND');
    }
  });

  test('an empty folder holds no documents for anyone', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-hie-'));
    try {
      const empty = new SandboxHieNetwork({ fixturesDir: dir });
      for (const id of ids.slice(0, 20)) expect(await empty.findDocuments(query(id))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the people the sandbox documents are about', () => {
  const person = (firstName: string, lastName: string, dob: string, genderAtBirth: 'M' | 'F', zips: string[]): HiePatientQuery => ({
    patientId: `someone-${firstName}-${dob}`,
    firstName,
    lastName,
    dob,
    genderAtBirth,
    zips,
  });

  test('a patient who is the person of some documents gets exactly those, whatever their id', async () => {
    const network = make();
    const eve = person('Eve', 'Betterhalf', '1975-05-01', 'F', ['97867']);
    const files = (await network.findDocuments(eve)).map((d) => d.fileName);
    expect(files).toEqual(['care-plan.xml', 'ccd-1.xml', 'consultation-note.xml']);
    expect((await network.findDocuments({ ...eve, patientId: 'another-id' })).map((d) => d.fileName)).toEqual(files);
    const youngIsabella = person('Isabella', 'Jones', '2005-05-01', 'F', ['97867']);
    expect((await network.findDocuments(youngIsabella)).map((d) => d.fileName)).toEqual(['discharge-summary.xml', 'history-and-physical.xml', 'procedure-note.xml']);
    const olderIsabella = person('Isabella', 'Jones', '1950-12-19', 'F', ['97867']);
    expect((await network.findDocuments(olderIsabella)).map((d) => d.fileName)).toEqual(['ccd-2.xml']);
    const adam = person('Adam', 'Everyman', '1954-11-25', 'M', ['02368']);
    expect((await network.findDocuments(adam)).map((d) => d.fileName)).toEqual(['progress-note.xml']);
  });

  test('matching is the import rule: another dob, gender or zip is another person', async () => {
    const network = make();
    const eve = person('Eve', 'Betterhalf', '1975-05-01', 'F', ['97867']);
    const own = (await network.findDocuments(eve)).map((d) => d.fileName);
    for (const other of [{ ...eve, dob: '1975-05-02' }, { ...eve, genderAtBirth: 'M' as const }, { ...eve, zips: ['10001'] }, { ...eve, lastName: 'Smith' }]) {
      const files = (await network.findDocuments(other)).map((d) => d.fileName);
      expect(files.length === own.length && files.every((file, i) => file === own[i]), JSON.stringify(other)).toBe(false);
    }
  });

  test('people() lists each person once with the titles of their documents', async () => {
    const people = await make().people();
    expect(people.map(({ person: p }) => `${p.firstName} ${p.lastName} ${p.dob} ${p.genderAtBirth} ${p.zips.join(',')}`)).toEqual([
      'Eve Betterhalf 1975-05-01 F 97867',
      'Isabella Jones 1950-12-19 F 97867',
      'Isabella Jones 2005-05-01 F 97867',
      'Adam Frankie Everyman 1954-11-25 M 02368',
    ]);
    expect(people[0]!.documents).toHaveLength(3);
  });
});

test("the README's sandbox network table is what the network answers", async () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('### The sandbox network'), readme.indexOf('\n### ', readme.indexOf('### The sandbox network') + 5));
  const rows = section
    .split('\n')
    .filter((line) => /^\| [A-Z]/.test(line) && !line.startsWith('| first name'))
    .map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
  const people = await make().people();
  expect(rows).toEqual(
    people.map(({ person, documents }) => [person.firstName.split(' ')[0], person.lastName, person.dob, person.genderAtBirth, person.zips.join(', '), documents.join('; ')]),
  );
});
