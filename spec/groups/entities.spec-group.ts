import { expect } from 'vitest';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, SAMPLE_ADDRESS, VALID_NPI } from '../support/api.js';

const PATIENT = {
  firstName: 'Ana María',
  lastName: 'Núñez',
  dob: '1975-03-09',
  genderAtBirth: 'F',
  address: [SAMPLE_ADDRESS],
  contact: [{ phone: '(217) 555-0100', email: 'Ana@Example.com' }],
  personalIdentifiers: [{ type: 'ssn', value: '123-45-6789' }],
  externalId: 'emr-1',
};

export function defineEntitiesGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('organization, facilities, cohorts and patients', () => {
    test('an account has one organization', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        expect((await api.call('GET', '/medical/v1/organization')).status).toBe(204);
        const org = { name: 'Acme Health', type: 'ambulatory', location: SAMPLE_ADDRESS };
        const created = await api.call('POST', '/medical/v1/organization', { body: org });
        expect(created.status, created.text).toBe(201);
        expect(created.body).toMatchObject({ name: 'Acme Health', type: 'ambulatory', oid: expect.stringMatching(/^2\.25\.\d+$/) });
        const again = await api.call('POST', '/medical/v1/organization', { body: org });
        expect(again.status).toBe(409);
        expect(again.body.code).toBe('ORGANIZATION_EXISTS');
        const updated = await api.call('PUT', `/medical/v1/organization/${created.body.id}`, { body: { ...org, name: 'Acme Care' } });
        expect(updated.body.name).toBe('Acme Care');
        expect((await api.call('GET', '/medical/v1/organization')).body.name).toBe('Acme Care');
      });
    });

    test('facility create, get, list, update and remove; bad input names the field', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const bad = await api.call('POST', '/medical/v1/facility', { body: { name: 'X', npi: '1234567890', address: { ...SAMPLE_ADDRESS, zip: '123' } } });
        expect(bad.status).toBe(400);
        expect(bad.headers['content-type']).toContain('application/problem+json');
        expect(bad.body).toMatchObject({ status: 400, code: 'VALIDATION_FAILED', title: 'Bad Request' });
        expect(bad.body.detail).toContain('npi');
        expect(bad.body.detail).toContain('address.zip');

        const facility = await api.createFacility('North');
        expect(facility).toMatchObject({ name: 'North', npi: VALID_NPI, active: true });
        expect((await api.call('GET', `/medical/v1/facility/${facility.id}`)).body.name).toBe('North');
        const updated = await api.call('PUT', `/medical/v1/facility/${facility.id}`, { body: { name: 'North 2', npi: VALID_NPI, address: SAMPLE_ADDRESS } });
        expect(updated.body.name).toBe('North 2');
        const list = await api.call('GET', '/medical/v1/facility');
        expect(list.body.facilities.map((f: { id: string }) => f.id)).toEqual([facility.id]);
        expect((await api.call('DELETE', `/medical/v1/facility/${facility.id}`)).status).toBe(204);
        expect((await api.call('GET', `/medical/v1/facility/${facility.id}`)).body.code).toBe('FACILITY_NOT_FOUND');
      });
    });

    test('patient create normalises contact data; get, update, list and remove', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const facility = await api.createFacility();
        const created = await api.call('POST', '/medical/v1/patient', { query: { facilityId: facility.id }, body: PATIENT });
        expect(created.status, created.text).toBe(201);
        expect(created.body).toMatchObject({
          facilityIds: [facility.id],
          firstName: 'Ana María',
          genderAtBirth: 'F',
          contact: [{ phone: '2175550100', email: 'Ana@example.com' }],
          personalIdentifiers: [{ type: 'ssn', value: '123456789' }],
          hieOptOut: false,
        });
        const id = created.body.id;
        expect((await api.call('GET', `/medical/v1/patient/${id}`)).body.lastName).toBe('Núñez');
        const updated = await api.call('PUT', `/medical/v1/patient/${id}`, { body: { ...PATIENT, lastName: 'Núñez Díaz' } });
        expect(updated.body.lastName).toBe('Núñez Díaz');
        expect((await api.listAllPatients()).map((p) => p.id)).toEqual([id]);
        // A facility with patients cannot be removed.
        expect((await api.call('DELETE', `/medical/v1/facility/${facility.id}`)).body.code).toBe('FACILITY_IN_USE');
        expect((await api.call('DELETE', `/medical/v1/patient/${id}`)).status).toBe(204);
        expect((await api.call('GET', `/medical/v1/patient/${id}`)).status).toBe(404);
      });
    });

    test('patient validation: future dob, bad gender, no address; facility rules', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const noFacility = await api.call('POST', '/medical/v1/patient', { body: PATIENT });
        expect(noFacility.status).toBe(400);
        expect(noFacility.body.code).toBe('FACILITY_REQUIRED');
        await api.createFacility();
        const future = await api.call('POST', '/medical/v1/patient', { body: { ...PATIENT, dob: '2999-01-01' } });
        expect(future.status).toBe(400);
        expect(future.body.detail).toContain('dob');
        const gender = await api.call('POST', '/medical/v1/patient', { body: { ...PATIENT, genderAtBirth: 'X' } });
        expect(gender.body.detail).toContain('genderAtBirth');
        const noAddress = await api.call('POST', '/medical/v1/patient', { body: { ...PATIENT, address: [] } });
        expect(noAddress.status).toBe(400);
        expect(noAddress.body.detail).toContain('address');
        const unknownFacility = await api.call('POST', '/medical/v1/patient', { query: { facilityId: '00000000-0000-4000-8000-000000000000' }, body: PATIENT });
        expect(unknownFacility.status).toBe(404);
      });
    });

    test('patients page by cursor, oldest first', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const ids: string[] = [];
        for (let i = 0; i < 7; i++) {
          // Seven people: the same demographics would be one patient.
          const created = await api.call('POST', '/medical/v1/patient', { body: { ...PATIENT, lastName: `Ortega${i}`, externalId: `e${i}` } });
          ids.push(created.body.id);
        }
        const first = await api.call('GET', '/medical/v1/patient', { query: { count: '3' } });
        expect(first.body.patients.map((p: { id: string }) => p.id)).toEqual(ids.slice(0, 3));
        expect(first.body.meta.nextPage).toBeTruthy();
        expect((await api.listAllPatients()).map((p) => p.id)).toEqual(ids);
        const badCount = await api.call('GET', '/medical/v1/patient', { query: { count: '0' } });
        expect(badCount.status).toBe(400);
      });
    });

    test('the patient list searches by name (case and accents aside), date of birth and externalId, and pages the search', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const people = [
          { firstName: 'José', lastName: 'García-López', dob: '1980-02-29', externalId: 'emr-1' },
          { firstName: 'Ana', lastName: 'Núñez', dob: '1975-03-09', externalId: 'emr-2' },
          { firstName: 'JOSE', lastName: 'Pérez', dob: '1980-02-29', externalId: 'emr-3' },
          { firstName: 'Zoë', lastName: 'garcia', dob: '1990-01-01', externalId: 'emr-4' },
        ];
        const ids: string[] = [];
        for (const person of people) {
          const created = await api.call('POST', '/medical/v1/patient', { body: { ...PATIENT, ...person } });
          expect(created.status, created.text).toBe(201);
          ids.push(created.body.id);
        }
        const search = async (query: Record<string, string>) => {
          const response = await api.call('GET', '/medical/v1/patient', { query });
          expect(response.status, response.text).toBe(200);
          return (response.body.patients as { id: string }[]).map((patient) => ids.indexOf(patient.id));
        };
        expect(await search({ name: 'GARCIA' })).toEqual([0, 3]);
        expect(await search({ name: 'josé gar' })).toEqual([0]);
        expect(await search({ name: 'jose' })).toEqual([0, 2]);
        expect(await search({ name: 'lopez' })).toEqual([0]);
        expect(await search({ name: 'zoe' })).toEqual([3]);
        expect(await search({ dob: '1980-02-29' })).toEqual([0, 2]);
        expect(await search({ externalId: 'emr-2' })).toEqual([1]);
        expect(await search({ name: 'jose', dob: '1980-02-29', externalId: 'emr-3' })).toEqual([2]);
        expect(await search({ name: 'nobody' })).toEqual([]);

        // A search pages like the list, its filters carried in meta.nextPage.
        const first = await api.call('GET', '/medical/v1/patient', { query: { name: 'garcia', count: '1' } });
        expect(first.body.patients.map((p: { id: string }) => p.id)).toEqual([ids[0]]);
        const next = new URL(first.body.meta.nextPage);
        expect(next.searchParams.get('name')).toBe('garcia');
        const second = await api.call('GET', '/medical/v1/patient', { query: Object.fromEntries(next.searchParams) });
        expect(second.body.patients.map((p: { id: string }) => p.id)).toEqual([ids[3]]);
        expect(second.body.meta.nextPage).toBeUndefined();

        for (const query of [{ name: '!!!' }, { dob: '29/02/1980' }, { name: 'x'.repeat(201) }]) {
          const bad = await api.call('GET', '/medical/v1/patient', { query });
          expect(bad.status, JSON.stringify(query)).toBe(400);
          expect(bad.body.code).toBe('VALIDATION_FAILED');
        }
      });
    });

    test('cohorts CRUD', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const cohort = await api.createCohort('Diabetes');
        expect((await api.call('GET', `/medical/v1/cohort/${cohort.id}`)).body.name).toBe('Diabetes');
        expect((await api.call('PUT', `/medical/v1/cohort/${cohort.id}`, { body: { name: 'CHF' } })).body.name).toBe('CHF');
        expect((await api.call('GET', '/medical/v1/cohort')).body.cohorts).toHaveLength(1);
        expect((await api.call('DELETE', `/medical/v1/cohort/${cohort.id}`)).status).toBe(204);
        expect((await api.call('DELETE', `/medical/v1/cohort/${cohort.id}`)).status).toBe(404);
      });
    });

    test('unknown routes are 404 and wrong methods 405, as problem+json', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const missing = await api.call('GET', '/medical/v1/nothing-here');
        expect(missing.status).toBe(404);
        expect(missing.body.code).toBe('ROUTE_NOT_FOUND');
        const wrong = await api.call('DELETE', '/medical/v1/organization');
        expect(wrong.status).toBe(405);
        expect(wrong.body.code).toBe('METHOD_NOT_ALLOWED');
      });
    });
  });
}
