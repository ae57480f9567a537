import { expect } from 'vitest';
import type { ConsolidatedQuery, DocumentQuery, DocumentRecord, FhirResourceJson, FhirResourceRecord, NetworkQuery } from '../../../core/domain/types.js';
import { at, ACCOUNT_A, ACCOUNT_B, ids } from './fixtures.js';
import type { StorageContractGroup } from './suite.js';

/** Documents and what is made of them: document, consolidated and network queries, FHIR resources. */
export function documentsContract({ test }: StorageContractGroup): void {
  // ----- documents

  test('documents: insert, get, by file name, list by patient oldest first, update, scoped', async (storage, build) => {
    const later = build.document(ACCOUNT_A, 'p1', { createdAt: at(5) });
    const { queryId: _q, ...upload } = build.document(ACCOUNT_A, 'p1', { source: 'upload', conversionStatus: 'waiting-upload', createdAt: at(1) });
    const otherPatient = build.document(ACCOUNT_A, 'p2');
    const foreign = build.document(ACCOUNT_B, 'p1', { fileName: later.fileName });
    for (const document of [later, upload, otherPatient, foreign]) await storage.documents.insert(document);
    expect(await storage.documents.get(ACCOUNT_A, later.id)).toEqual(later);
    expect(await storage.documents.get(ACCOUNT_A, upload.id)).toEqual(upload);
    expect(await storage.documents.get(ACCOUNT_B, later.id)).toBeUndefined();
    expect(await storage.documents.getByFileName(ACCOUNT_A, later.fileName)).toEqual(later);
    expect(await storage.documents.getByFileName(ACCOUNT_B, later.fileName)).toEqual(foreign);
    expect(await storage.documents.getByFileName(ACCOUNT_A, 'missing.xml')).toBeUndefined();
    expect(ids(await storage.documents.listByPatient(ACCOUNT_A, 'p1'))).toEqual([upload.id, later.id]);
    expect(await storage.documents.listByPatient(ACCOUNT_B, 'p2')).toEqual([]);

    const converted: DocumentRecord = { ...later, conversionStatus: 'failed', conversionError: 'CCDA_INVALID', size: 12 };
    expect(await storage.documents.update(converted)).toEqual(converted);
    expect(await storage.documents.get(ACCOUNT_A, later.id)).toEqual(converted);
    expect(await storage.documents.update({ ...converted, accountId: ACCOUNT_B })).toBeUndefined();
    expect(await storage.documents.update(build.document(ACCOUNT_A, 'p1'))).toBeUndefined();
  });

  test('documents: insertMany inserts all or none; updateMany replaces those stored in the account, skips the rest, keeps the last of a document named twice', async (storage, build) => {
    const first = build.document(ACCOUNT_A, 'p1', { createdAt: at(1) });
    const second = build.document(ACCOUNT_A, 'p1', { createdAt: at(2) });
    await storage.documents.insertMany([]);
    await storage.documents.insertMany([first, second]);
    expect(ids(await storage.documents.listByPatient(ACCOUNT_A, 'p1'))).toEqual([first.id, second.id]);
    const third = build.document(ACCOUNT_A, 'p1', { createdAt: at(3) });
    await expect(storage.documents.insertMany([third, second])).rejects.toMatchObject({ code: 'CONFLICT' });
    const fourth = build.document(ACCOUNT_A, 'p1', { createdAt: at(4) });
    await expect(storage.documents.insertMany([fourth, fourth])).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(ids(await storage.documents.listByPatient(ACCOUNT_A, 'p1'))).toEqual([first.id, second.id]);

    const converted: DocumentRecord = { ...first, conversionStatus: 'failed', conversionError: 'CCDA_INVALID', size: 12, type: { text: 'changed' } as DocumentRecord['type'] };
    const { conversionError: _e, ...secondDone } = { ...second, conversionStatus: 'completed' as const, description: 'it\'s done' };
    const missing = build.document(ACCOUNT_A, 'p1');
    await storage.documents.updateMany([]);
    await storage.documents.updateMany([
      { ...converted, size: 1 },
      secondDone,
      missing,
      { ...second, accountId: ACCOUNT_B, description: 'another account' },
      converted,
    ]);
    expect(await storage.documents.get(ACCOUNT_A, first.id)).toEqual(converted);
    expect(await storage.documents.get(ACCOUNT_A, second.id)).toEqual(secondDone);
    expect(await storage.documents.get(ACCOUNT_A, missing.id)).toBeUndefined();
    expect(await storage.documents.get(ACCOUNT_B, second.id)).toBeUndefined();
  });

  // ----- document queries

  test('documentQueries: insert, get, latest for patient, update, scoped', async (storage, build) => {
    expect(await storage.documentQueries.latestForPatient(ACCOUNT_A, 'p1')).toBeUndefined();
    const older = build.documentQuery(ACCOUNT_A, 'p1', { createdAt: at(1) });
    const { metadata: _m, ...newer } = build.documentQuery(ACCOUNT_A, 'p1', { createdAt: at(2) });
    const otherPatient = build.documentQuery(ACCOUNT_A, 'p2', { createdAt: at(3) });
    for (const query of [newer, older, otherPatient]) await storage.documentQueries.insert(query);
    expect(await storage.documentQueries.get(ACCOUNT_A, older.id)).toEqual(older);
    expect(await storage.documentQueries.get(ACCOUNT_B, older.id)).toBeUndefined();
    expect(await storage.documentQueries.latestForPatient(ACCOUNT_A, 'p1')).toEqual(newer);
    expect(await storage.documentQueries.latestForPatient(ACCOUNT_B, 'p1')).toBeUndefined();
    const done: DocumentQuery = { ...older, download: { status: 'completed', total: 3, successful: 3, errors: 0 }, updatedAt: at(9) };
    expect(await storage.documentQueries.update(done)).toEqual(done);
    expect(await storage.documentQueries.get(ACCOUNT_A, older.id)).toEqual(done);
    expect(await storage.documentQueries.update({ ...done, accountId: ACCOUNT_B })).toBeUndefined();
    expect(await storage.documentQueries.update(build.documentQuery(ACCOUNT_A, 'p1'))).toBeUndefined();
  });

  test('documentQueries: the progress of a bulk import counts its queries by state, in its account only', async (storage, build) => {
    const none = { total: 0, processing: 0, completed: 0, failed: 0 };
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_A, 'bulk-1')).toEqual(none);
    const ended = (status: 'completed' | 'failed') => ({ status, total: 1, successful: status === 'completed' ? 1 : 0, errors: status === 'failed' ? 1 : 0 });
    const queries = ['p1', 'p2', 'p3', 'p4'].map((patientId) => ({ ...build.documentQuery(ACCOUNT_A, patientId), bulkRequestId: 'bulk-1' }));
    const unrelated = build.documentQuery(ACCOUNT_A, 'p5');
    const otherImport = { ...build.documentQuery(ACCOUNT_A, 'p6'), bulkRequestId: 'bulk-2' };
    for (const query of [...queries, unrelated, otherImport]) await storage.documentQueries.insert(query);
    expect(await storage.documentQueries.get(ACCOUNT_A, queries[0]!.id)).toEqual(queries[0]);
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_A, 'bulk-1')).toEqual({ total: 4, processing: 4, completed: 0, failed: 0 });
    await storage.documentQueries.update({ ...queries[0]!, download: ended('completed'), convert: ended('completed') });
    await storage.documentQueries.update({ ...queries[1]!, download: ended('failed'), convert: ended('failed') });
    // One step ended, the other still running: the query is still processing.
    await storage.documentQueries.update({ ...queries[2]!, download: ended('completed') });
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_A, 'bulk-1')).toEqual({ total: 4, processing: 2, completed: 1, failed: 1 });
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_B, 'bulk-1')).toEqual(none);
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_A, 'bulk-2')).toEqual({ total: 1, processing: 1, completed: 0, failed: 0 });
  });

  // ----- FHIR resources

  test('fhirResources: putMany inserts or replaces; listByPatient orders by type then id, optionally filtered', async (storage, build) => {
    const condition2 = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Condition', id: 'c2' });
    const condition1 = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Condition', id: 'c1' });
    const allergy = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'AllergyIntolerance', id: 'z9' });
    const observation = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Observation', id: 'a0' });
    await storage.fhirResources.putMany([condition2, observation, condition1, allergy]);
    await storage.fhirResources.putMany([build.fhirResource(ACCOUNT_A, 'p2', { id: 'c1' }), build.fhirResource(ACCOUNT_B, 'p1', { id: 'c1' })]);
    await storage.fhirResources.putMany([]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1')).toEqual([allergy, condition1, condition2, observation]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1', ['Observation', 'Condition'])).toEqual([condition1, condition2, observation]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1', [])).toEqual([]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p3')).toEqual([]);

    const merged = { ...condition1, resource: { ...condition1.resource, note: [{ text: 'merged' }] }, sourceDocumentIds: ['d1', 'd2'], updatedAt: at(4) };
    await storage.fhirResources.putMany([merged, { ...condition2, sourceDocumentIds: ['x'] }, condition2]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1', ['Condition'])).toEqual([merged, condition2]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p2')).toHaveLength(1);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_B, 'p1')).toHaveLength(1);
  });

  test('fhirResources: resources come back exactly as written, key order included', async (storage, build) => {
    const resource = build.fhirResource(ACCOUNT_A, 'p1', { id: 'r1' });
    resource.resource = { resourceType: 'Observation', id: 'r1', status: 'final', valueQuantity: { value: 7.25, unit: 'mmol/L' }, zeta: null, alpha: [1, 'two', { three: true }] };
    await storage.fhirResources.putMany([resource]);
    const [read] = await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1');
    expect(JSON.stringify(read!.resource)).toBe(JSON.stringify(resource.resource));
    (read!.resource as { status: string }).status = 'mutated';
    expect((await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1'))[0]!.resource.status).toBe('final');
  });

  test('fhirResources: the JSON text forms read and write the same rows as the object forms, in the same order', async (storage, build) => {
    const asJson = ({ resource, ...rest }: FhirResourceRecord): FhirResourceJson => ({ ...rest, resourceJson: JSON.stringify(resource) });
    const observation = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Observation', id: 'o1' });
    observation.resource = { resourceType: 'Observation', id: 'o1', status: 'final', valueQuantity: { value: 7.25, unit: 'mmol/L' }, zeta: null, alpha: [1, 'two', { three: true }], text: 'naïve 糖尿病' };
    const condition = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Condition', id: 'c1' });
    const stale = { ...condition, resource: { ...condition.resource, note: [{ text: 'stale' }] } };
    await storage.fhirResources.putMany([build.fhirResource(ACCOUNT_A, 'p2', { id: 'other' }), build.fhirResource(ACCOUNT_B, 'p1', { id: 'foreign' })]);
    expect(await storage.fhirResources.listByPatientJson(ACCOUNT_A, 'p1')).toEqual([]);

    // Written as text (a key given twice: its last version), read back both ways.
    await storage.fhirResources.putManyJson([asJson(observation), asJson(stale), asJson(condition)]);
    await storage.fhirResources.putManyJson([]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1')).toEqual([condition, observation]);
    const texts = await storage.fhirResources.listByPatientJson(ACCOUNT_A, 'p1');
    expect(texts).toEqual([asJson(condition), asJson(observation)]);

    // Written as objects, read as text; a text replaces an object of the same key.
    const merged = { ...observation, resource: { ...observation.resource, note: [{ text: 'merged' }] }, sourceDocumentIds: ['d1', 'd2'], updatedAt: at(4) };
    await storage.fhirResources.putMany([merged]);
    expect((await storage.fhirResources.listByPatientJson(ACCOUNT_A, 'p1'))[1]).toEqual(asJson(merged));
    await storage.fhirResources.putManyJson([asJson(observation)]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1')).toEqual([condition, observation]);
    expect(await storage.fhirResources.listByPatientJson(ACCOUNT_A, 'p2')).toHaveLength(1);
    expect(await storage.fhirResources.listByPatientJson(ACCOUNT_B, 'p1')).toHaveLength(1);
  });

  test('fhirResources: removeMany removes the patient’s given keys only; missing ones are ignored', async (storage, build) => {
    const keep = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Condition', id: 'keep' });
    const drop = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Condition', id: 'drop' });
    const sameIdOtherType = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Observation', id: 'drop' });
    const otherPatient = build.fhirResource(ACCOUNT_A, 'p2', { resourceType: 'Condition', id: 'drop' });
    const foreign = build.fhirResource(ACCOUNT_B, 'p1', { resourceType: 'Condition', id: 'drop' });
    await storage.fhirResources.putMany([keep, drop, sameIdOtherType, otherPatient, foreign]);
    await storage.fhirResources.removeMany(ACCOUNT_A, 'p1', [
      { resourceType: 'Condition', id: 'drop' },
      { resourceType: 'Condition', id: 'never-existed' },
    ]);
    await storage.fhirResources.removeMany(ACCOUNT_A, 'p1', []);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1')).toEqual([keep, sameIdOtherType]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p2')).toEqual([otherPatient]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_B, 'p1')).toEqual([foreign]);
  });

  // ----- consolidated queries

  test('consolidatedQueries: insert, get, processing oldest first, by patient newest first, update, scoped', async (storage, build) => {
    const first = build.consolidatedQuery(ACCOUNT_A, 'p1', { createdAt: at(1), metadata: { k: 'v' } });
    const second = build.consolidatedQuery(ACCOUNT_A, 'p1', { createdAt: at(2) });
    const done = build.consolidatedQuery(ACCOUNT_A, 'p1', { createdAt: at(3), status: 'completed', conversionType: 'pdf', filters: {} });
    const otherPatient = build.consolidatedQuery(ACCOUNT_A, 'p2');
    for (const query of [done, second, otherPatient, first]) await storage.consolidatedQueries.insert(query);
    expect(await storage.consolidatedQueries.get(ACCOUNT_A, first.id)).toEqual(first);
    expect(await storage.consolidatedQueries.get(ACCOUNT_B, first.id)).toBeUndefined();
    expect(ids(await storage.consolidatedQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([first.id, second.id]);
    expect(ids(await storage.consolidatedQueries.listByPatient(ACCOUNT_A, 'p1'))).toEqual([done.id, second.id, first.id]);
    expect(await storage.consolidatedQueries.listByPatient(ACCOUNT_B, 'p1')).toEqual([]);
    const failed: ConsolidatedQuery = { ...first, status: 'failed', updatedAt: at(7) };
    expect(await storage.consolidatedQueries.update(failed)).toEqual(failed);
    expect(ids(await storage.consolidatedQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([second.id]);
    expect(await storage.consolidatedQueries.update({ ...failed, accountId: ACCOUNT_B, status: 'processing' })).toBeUndefined();
    expect(await storage.consolidatedQueries.get(ACCOUNT_A, first.id)).toEqual(failed);
  });

  // ----- network queries

  test('networkQueries: insert, get (scoped), processing oldest first, update, pruneFinished takes only ended ones past the cut, oldest first', async (storage, build) => {
    const first = build.networkQuery(ACCOUNT_A, 'p1', { createdAt: at(1), metadata: { k: 'v' } });
    const second = build.networkQuery(ACCOUNT_A, 'p1', { createdAt: at(2) });
    const ended = build.networkQuery(ACCOUNT_A, 'p1', { sources: [{ type: 'pharmacy', status: 'failed', startedAt: at(0), completedAt: at(1) }], updatedAt: at(1) });
    const otherPatient = build.networkQuery(ACCOUNT_A, 'p2');
    for (const query of [ended, second, otherPatient, first]) await storage.networkQueries.insert(query);
    expect(await storage.networkQueries.get(ACCOUNT_A, first.id)).toEqual(first);
    expect(await storage.networkQueries.get(ACCOUNT_B, first.id)).toBeUndefined();
    expect(ids(await storage.networkQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([first.id, second.id]);
    expect(await storage.networkQueries.listProcessing(ACCOUNT_B, 'p1')).toEqual([]);

    const done: NetworkQuery = { ...first, sources: first.sources.map((source) => ({ ...source, status: 'completed', completedAt: at(5) })), updatedAt: at(5) };
    expect(await storage.networkQueries.update(done)).toEqual(done);
    expect(ids(await storage.networkQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([second.id]);
    expect(await storage.networkQueries.update({ ...done, accountId: ACCOUNT_B })).toBeUndefined();

    // Ended at 1 and 5; running ones never go.
    expect(await storage.networkQueries.pruneFinished(at(6), 1)).toBe(1);
    expect(await storage.networkQueries.get(ACCOUNT_A, ended.id)).toBeUndefined();
    expect(await storage.networkQueries.pruneFinished(at(5), 10)).toBe(0);
    expect(await storage.networkQueries.pruneFinished(at(6), 10)).toBe(1);
    expect(ids(await storage.networkQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([second.id]);
    expect(await storage.networkQueries.get(ACCOUNT_A, otherPatient.id)).toEqual(otherPatient);
  });

  test('networkQueries: two sources ending at once in two transactions (getForUpdate, then update) both land', async (storage, build) => {
    const query = build.networkQuery(ACCOUNT_A, 'p1', {
      sources: [
        { type: 'pharmacy', status: 'processing', startedAt: at(1) },
        { type: 'lab', status: 'processing', startedAt: at(1) },
      ],
    });
    await storage.networkQueries.insert(query);
    const end = (type: 'pharmacy' | 'lab') =>
      storage.transaction(async (tx) => {
        const held = (await tx.networkQueries.getForUpdate(ACCOUNT_A, query.id))!;
        // Let the other transaction read too, as two workers would, before either writes.
        await new Promise<void>((resume) => setTimeout(resume, 20));
        await tx.networkQueries.update({ ...held, sources: held.sources.map((source) => (source.type === type ? { ...source, status: 'completed', completedAt: at(2) } : source)) });
      });
    await Promise.all([end('pharmacy'), end('lab')]);
    const stored = (await storage.networkQueries.get(ACCOUNT_A, query.id))!;
    expect(stored.sources.map((source) => [source.type, source.status])).toEqual([
      ['pharmacy', 'completed'],
      ['lab', 'completed'],
    ]);
    expect(await storage.networkQueries.getForUpdate(ACCOUNT_B, query.id)).toBeUndefined();
  });
}
