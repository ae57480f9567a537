import { describe, expect, test } from 'vitest';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import { ACCOUNT_A, ACCOUNT_B, builders } from '../../spec/ports/storage/fixtures.js';
import { documentsOfReferences, listDocumentReferences } from './list.js';

/** A patient of ACCOUNT_A with four DocumentReferences (ids r1..r4, listed in that order), a Condition, and a stored document behind r1 and r3. */
async function world() {
  const make = builders();
  const storage = new MemoryStorage();
  const patient = make.patient(ACCOUNT_A);
  await storage.patients.insert(patient);
  const reference = (id: string, resource: Record<string, unknown>) =>
    make.fhirResource(ACCOUNT_A, patient.id, { resourceType: 'DocumentReference', id, resource: { resourceType: 'DocumentReference', id, ...resource } });
  await storage.fhirResources.putMany([
    reference('r3', { date: '2024-03-10T09:00:00Z', type: { coding: [{ display: 'Discharge Summary' }] } }),
    reference('r1', { date: '2024-01-31', description: 'Continuity of Care' }),
    reference('r4', { description: 'undated referral', content: [{ attachment: { title: 'Cardiology.xml' } }] }),
    reference('r2', { date: '2024-02-15', type: { text: 'Lab report' } }),
    make.fhirResource(ACCOUNT_A, patient.id, { resourceType: 'Condition', id: 'c1' }),
  ]);
  await storage.documents.insert(make.document(ACCOUNT_A, patient.id, { id: 'r3' }));
  await storage.documents.insert(make.document(ACCOUNT_A, patient.id, { id: 'r1' }));
  return { deps: { storage }, patient };
}

const idsOf = (resources: readonly { id?: string | undefined }[]) => resources.map((resource) => resource.id);

describe('listing documents', () => {
  test("the patient's DocumentReferences by id, nothing else, when no filter is given", async () => {
    const { deps, patient } = await world();
    expect(idsOf(await listDocumentReferences(deps, ACCOUNT_A, patient.id, {}))).toEqual(['r1', 'r2', 'r3', 'r4']);
  });

  test('day bounds are inclusive, by day, and leave undated references out', async () => {
    const { deps, patient } = await world();
    expect(idsOf(await listDocumentReferences(deps, ACCOUNT_A, patient.id, { dateFrom: '2024-01-31', dateTo: '2024-03-10' }))).toEqual(['r1', 'r2', 'r3']);
    expect(idsOf(await listDocumentReferences(deps, ACCOUNT_A, patient.id, { dateFrom: '2024-02-01T23:59:59Z' }))).toEqual(['r2', 'r3']);
    expect(idsOf(await listDocumentReferences(deps, ACCOUNT_A, patient.id, { dateTo: '2024-02-14' }))).toEqual(['r1']);
  });

  test('content is looked for in the description, type text and codings and attachment title, case aside; count keeps the first', async () => {
    const { deps, patient } = await world();
    const withContent = async (content: string) => idsOf(await listDocumentReferences(deps, ACCOUNT_A, patient.id, { content }));
    expect(await withContent('CONTINUITY')).toEqual(['r1']);
    expect(await withContent('lab rep')).toEqual(['r2']);
    expect(await withContent('discharge')).toEqual(['r3']);
    expect(await withContent('cardiology')).toEqual(['r4']);
    expect(idsOf(await listDocumentReferences(deps, ACCOUNT_A, patient.id, { count: 2 }))).toEqual(['r1', 'r2']);
  });

  test('a patient missing or of another account is PATIENT_NOT_FOUND', async () => {
    const { deps, patient } = await world();
    await expect(listDocumentReferences(deps, ACCOUNT_B, patient.id, {})).rejects.toMatchObject({ code: 'PATIENT_NOT_FOUND' });
    await expect(listDocumentReferences(deps, ACCOUNT_A, 'nobody', {})).rejects.toMatchObject({ code: 'PATIENT_NOT_FOUND' });
  });

  test('the stored documents behind references come in the order of the references, those without one left out', async () => {
    const { deps, patient } = await world();
    const references = await listDocumentReferences(deps, ACCOUNT_A, patient.id, {});
    expect(idsOf(await documentsOfReferences(deps, ACCOUNT_A, patient.id, [...references].reverse()))).toEqual(['r3', 'r1']);
    expect(await documentsOfReferences(deps, ACCOUNT_B, patient.id, references)).toEqual([]);
  });
});
