import { MetriportMedicalApi, USState } from '@metriport/api-sdk';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { makeKoaDriver } from '../../spec/support/koa-driver.js';
import { VALID_NPI } from '../../spec/support/http-testing.js';

const ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: USState.IL, zip: '62701', country: 'USA' as const };

/**
 * The published Metriport client pointed at a running carebridge: existing clients of the
 * public API must work unchanged against this service.
 */
describe('@metriport/api-sdk against the Koa host', () => {
  let driver: Awaited<ReturnType<typeof makeKoaDriver>>;
  let sdk: MetriportMedicalApi;

  beforeAll(async () => {
    driver = await makeKoaDriver();
    const { apiKey } = await driver.createAccount('SDK Clinic');
    sdk = new MetriportMedicalApi(apiKey, { baseAddress: driver.service.url });
  });
  afterAll(() => driver.close());

  test('createFacility, createPatient, getPatient, updatePatientHieOptOut', async () => {
    // createFacility parses the answer with the SDK's own zod schema: a shape mismatch throws here.
    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: VALID_NPI, active: true, address: ADDRESS });
    expect(facility).toMatchObject({ id: expect.any(String), name: 'SDK Facility', npi: VALID_NPI, address: { zip: '62701', state: 'IL' } });

    const created = await sdk.createPatient(
      {
        firstName: 'Ana',
        lastName: 'Núñez',
        dob: '1975-03-09',
        genderAtBirth: 'F',
        address: [ADDRESS],
        contact: [{ phone: '2175550100', email: 'ana@example.com' }],
        personalIdentifiers: [{ type: 'driversLicense', state: USState.IL, value: 'D1234567' }],
        externalId: 'emr-42',
      },
      facility.id,
    );
    expect(created).toMatchObject({ id: expect.any(String), facilityIds: [facility.id], firstName: 'Ana', lastName: 'Núñez', externalId: 'emr-42' });

    const fetched = await sdk.getPatient(created.id);
    expect(fetched).toMatchObject({ id: created.id, dob: '1975-03-09', genderAtBirth: 'F', address: [expect.objectContaining({ city: 'Springfield' })] });
    expect(fetched.personalIdentifiers).toEqual([{ type: 'driversLicense', state: 'IL', value: 'D1234567' }]);

    const optedOut = await sdk.updatePatientHieOptOut(created.id, true);
    expect(optedOut).toMatchObject({ id: created.id, hieOptOut: true, message: expect.any(String) });
    expect((await driver.call({ method: 'GET', path: `/medical/v1/patient/${created.id}/hie-opt-out`, apiKey: (await driver.createAccount()).apiKey })).status).toBe(404);
    const optedIn = await sdk.updatePatientHieOptOut(created.id, false);
    expect(optedIn).toMatchObject({ id: created.id, hieOptOut: false });

    expect(await sdk.getFacility(facility.id)).toMatchObject({ id: facility.id, name: 'SDK Facility' });
    expect((await sdk.listFacilities()).map((f) => f.id)).toEqual([facility.id]);
  });

  test('errors reach the SDK as HTTP errors carrying our problem body', async () => {
    const failure = await sdk.getPatient('00000000-0000-7000-8000-00000000beef').catch((error: unknown) => error);
    expect(failure).toMatchObject({ response: { status: 404, data: { code: 'PATIENT_NOT_FOUND', status: 404 } } });
    const unauthorised = await new MetriportMedicalApi('cb_wrong', { baseAddress: driver.service.url }).listFacilities().catch((error: unknown) => error);
    expect(unauthorised).toMatchObject({ response: { status: 401, data: { code: 'UNAUTHORIZED' } } });
  });
});
