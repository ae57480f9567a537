import { expect } from 'vitest';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, csvOf, personRow, SAMPLE_ADDRESS } from '../support/api.js';

export function defineOptOutGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('HIE opt-out', () => {
    test('PUT sets and GET reads the status; repeating is harmless', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const patient = await api.call('POST', '/medical/v1/patient', {
          body: { firstName: 'Lou', lastName: 'Reed', dob: '1942-03-02', genderAtBirth: 'M', address: SAMPLE_ADDRESS },
        });
        const path = `/medical/v1/patient/${patient.body.id}/hie-opt-out`;
        const out = await api.call('PUT', path, { query: { hieOptOut: 'TRUE' } });
        expect(out.status, out.text).toBe(200);
        expect(out.body).toMatchObject({ id: patient.body.id, hieOptOut: true, message: expect.stringContaining('opted out') });
        expect((await api.call('PUT', path, { query: { hieOptOut: 'true' } })).body.hieOptOut).toBe(true);
        expect((await api.call('GET', path)).body).toEqual({ id: patient.body.id, hieOptOut: true });
        expect((await api.call('PUT', path, { query: { hieOptOut: 'false' } })).body.hieOptOut).toBe(false);
        expect((await api.call('GET', `/medical/v1/patient/${patient.body.id}`)).body.hieOptOut).toBe(false);
      });
    });

    test('a missing or non-boolean value is a 400 naming the parameter; an unknown patient is 404', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        for (const query of [{}, { hieOptOut: 'yes' }, { hieOptOut: '' }]) {
          const response = await api.call('PUT', '/medical/v1/patient/anything/hie-opt-out', { query });
          expect(response.status).toBe(400);
          expect(response.body.detail).toContain('hieOptOut');
        }
        const unknown = await api.call('PUT', '/medical/v1/patient/00000000-0000-4000-8000-000000000000/hie-opt-out', { query: { hieOptOut: 'true' } });
        expect(unknown.status).toBe(404);
        expect(unknown.body.code).toBe('PATIENT_NOT_FOUND');
      });
    });

    test('a bulk import starts a document query for every patient it creates, never for an opted-out one', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const status = await api.importCsv(csvOf([personRow(1), personRow(2, { hieOptOut: 'true' }), personRow(3)]));
        expect(status).toMatchObject({ status: 'completed', succeeded: 3 });
        await host.settle();
        // The status follows what the import set off: one document query per patient not opted out.
        const followed = await api.bulkStatus(status.requestId);
        expect(followed.body.documentQueries).toEqual({ total: 2, processing: 0, completed: 2, failed: 0 });
        for (const patient of await api.listAllPatients()) {
          const query = await api.call('GET', '/medical/v1/document/query', { query: { patientId: patient.id } });
          expect(query.status, query.text).toBe(200);
          if (patient.hieOptOut) {
            expect(query.body).toEqual({});
            const documents = await api.call('GET', '/medical/v1/document', { query: { patientId: patient.id } });
            expect(documents.body.documents).toEqual([]);
          } else {
            expect(query.body.download?.status).toBe('completed');
          }
        }
        // A dry run starts nothing.
        const dry = await api.importCsv(csvOf([personRow(4)]), { dryRun: true });
        expect(dry.status).toBe('completed');
        expect(dry).not.toHaveProperty('documentQueries');
        await host.settle();
        expect(await api.listAllPatients()).toHaveLength(3);
      });
    });

    test('bulk hieOptOut: empty opts a new patient in and keeps an existing one; true/false change it', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const first = await api.importCsv(csvOf([personRow(1), personRow(2, { hieOptOut: 'TRUE' }), personRow(3, { hieOptOut: 'false' })]));
        expect(first).toMatchObject({ status: 'completed', succeeded: 3, failed: 0 });
        const byExternal = async () => new Map((await api.listAllPatients()).map((p) => [(p as unknown as { externalId: string }).externalId, p.hieOptOut]));
        expect(await byExternal()).toEqual(new Map([['ext-1', false], ['ext-2', true], ['ext-3', false]]));
        // Re-import: empty keeps, explicit values change.
        await api.importCsv(csvOf([personRow(1, { hieOptOut: 'true' }), personRow(2), personRow(3, { hieOptOut: 'True' })]));
        expect(await byExternal()).toEqual(new Map([['ext-1', true], ['ext-2', true], ['ext-3', true]]));
        const bad = await api.importCsv(csvOf([personRow(4, { hieOptOut: 'maybe' })]));
        expect(bad).toMatchObject({ status: 'completed', succeeded: 0, failed: 1 });
        const rows = await api.resultRows(bad);
        expect(rows[1]!.at(-1)).toContain('hieOptOut');
      });
    });
  });
}
