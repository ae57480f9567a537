import { MetriportMedicalApi, TreatmentType, USState } from '@metriport/api-sdk';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseWebhook } from '../../client/webhooks.js';
import { fixtureText, sandboxFilesFor } from '../groups/documents.spec-group.js';
import { makeKoaDriver } from '../support/koa-driver.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

/*
 * Compatibility: the published @metriport/api-sdk, unchanged, pointed at a running carebridge with
 * `baseAddress`. Many SDK methods parse the answer with the SDK's own zod schemas, so a shape that differs
 * from what it expects fails here, not at a customer's. One service for the file; each test has its own
 * account. Background work runs when a test says (`settle`).
 */

const ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: USState.IL, zip: '62701', country: 'USA' as const };
const NPI = '1234567893';

let driver: Awaited<ReturnType<typeof makeKoaDriver>>;
let receiver: Receiver;

beforeAll(async () => {
  [driver, receiver] = await Promise.all([makeKoaDriver(), startReceiver()]);
  receiver.setDefault({ kind: 'ok', pong: true });
});
afterAll(async () => {
  await Promise.all([driver?.close(), receiver?.close()]);
});

async function sdkFor(name: string): Promise<{ sdk: MetriportMedicalApi; accountId: string; apiKey: string }> {
  const { apiKey, accountId } = await driver.createAccount(name);
  return { sdk: new MetriportMedicalApi(apiKey, { baseAddress: driver.service.url }), accountId, apiKey };
}

let counter = 0;
function patientData() {
  counter++;
  return { firstName: 'Ana', lastName: `Sdk${counter}`, dob: '1975-03-09', genderAtBirth: 'F' as const, address: [ADDRESS] as [typeof ADDRESS], externalId: `emr-${counter}` };
}

/** The status an axios error carries, or undefined when the call did not fail over HTTP. */
async function httpStatus(promise: Promise<unknown>): Promise<number | undefined> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  return (error as { response?: { status?: number } } | undefined)?.response?.status;
}

describe('@metriport/api-sdk against carebridge', () => {
  test('organization: getOrganization before and after createOrganization (one per account)', async () => {
    const { sdk } = await sdkFor('SDK Organization');
    expect(await sdk.getOrganization()).toBeUndefined();
    const created = await sdk.createOrganization({ name: 'Acme Health', type: TreatmentType.ambulatory, location: ADDRESS });
    expect(created).toMatchObject({ id: expect.any(String), oid: expect.any(String), eTag: expect.any(String), name: 'Acme Health', location: { state: 'IL' } });
    expect(await sdk.getOrganization()).toEqual(created);
    expect(await httpStatus(sdk.createOrganization({ name: 'Again', type: TreatmentType.ambulatory, location: ADDRESS }))).toBe(409);
  });

  test('facilities: createFacility, getFacility, listFacilities', async () => {
    const { sdk } = await sdkFor('SDK Facility');
    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: NPI, active: true, address: ADDRESS });
    expect(facility).toMatchObject({ id: expect.any(String), name: 'SDK Facility', npi: NPI, address: { zip: '62701' } });
    expect(await sdk.getFacility(facility.id)).toEqual(facility);
    expect(await sdk.listFacilities()).toEqual([facility]);
  });

  test('patients: createPatient, getPatient, updatePatient (with what getPatient gave), updatePatientHieOptOut, deletePatient', async () => {
    const { sdk } = await sdkFor('SDK Patients');
    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: NPI, address: ADDRESS });
    const created = await sdk.createPatient({ ...patientData(), contact: [{ phone: '2175550100', email: 'ana@example.com' }] }, facility.id);
    expect(created).toMatchObject({ id: expect.any(String), facilityIds: [facility.id], firstName: 'Ana', contact: [{ phone: '2175550100' }] });

    const fetched = await sdk.getPatient(created.id);
    expect(fetched).toEqual(created);
    // The SDK sends the fetched object back with its own fields (eTag, facilityIds, dateCreated...) and If-Match.
    const updated = await sdk.updatePatient({ ...fetched, firstName: 'Anna' } as Parameters<MetriportMedicalApi['updatePatient']>[0], facility.id);
    expect(updated).toMatchObject({ id: created.id, firstName: 'Anna', lastName: created.lastName, facilityIds: [facility.id] });

    expect(await sdk.updatePatientHieOptOut(created.id, true)).toEqual({ id: created.id, hieOptOut: true, message: expect.any(String) });
    expect(await sdk.getPatient(created.id)).toMatchObject({ hieOptOut: true });
    expect(await sdk.updatePatientHieOptOut(created.id, false)).toMatchObject({ hieOptOut: false });

    await sdk.deletePatient(created.id, facility.id, updated.eTag);
    expect(await httpStatus(sdk.getPatient(created.id))).toBe(404);
  });

  test('documents and consolidated data, and the webhooks they cause verify with the SDK', async () => {
    const { sdk, accountId } = await sdkFor('SDK Documents');
    const settings = await sdk.updateSettings(`${receiver.url}/sdk/${accountId}`);
    expect(settings).toMatchObject({ webhookUrl: `${receiver.url}/sdk/${accountId}`, webhookEnabled: true, webhookKey: expect.any(String) });
    expect(await sdk.getSettings()).toEqual(settings);

    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: NPI, address: ADDRESS });
    let patientId: string | undefined;
    let files: string[] = [];
    for (let attempt = 0; attempt < 80 && !patientId; attempt++) {
      const patient = await sdk.createPatient(patientData(), facility.id);
      files = await sandboxFilesFor(patient.id);
      if (files.length >= 1) patientId = patient.id;
    }
    expect(patientId).toBeDefined();
    const id = patientId!;

    // startDocumentQuery and getDocumentQueryStatus parse with the SDK's documentQuerySchema.
    const query = await sdk.startDocumentQuery(id, facility.id, { purpose: 'compat' });
    expect(query).toMatchObject({ requestId: expect.any(String), download: { status: 'processing' } });
    await driver.settle();
    expect(await sdk.getDocumentQueryStatus(id)).toMatchObject({ requestId: query.requestId, download: { status: 'completed', total: files.length } });

    const { documents } = await sdk.listDocuments(id);
    expect(documents).toHaveLength(files.length);
    expect(documents[0]).toMatchObject({ resourceType: 'DocumentReference', id: expect.any(String) });
    const summaries = await sdk.listDocumentsAsDTO(id);
    expect(summaries.map((summary) => summary.id).sort()).toEqual(documents.map((document) => document.id).sort());

    const { url } = await sdk.getDocumentUrl(summaries[0]!.fileName);
    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(await download.text()).toContain('ClinicalDocument');

    const bulkUrls = await sdk.startBulkGetDocumentUrl(id, { batch: 'b1' });
    expect(bulkUrls).toEqual({ requestId: expect.any(String), status: 'processing' });

    const consolidated = await sdk.startConsolidatedQuery(id, ['Condition', 'AllergyIntolerance'], undefined, undefined, 'json', undefined, { run: 'c1' });
    expect(consolidated).toMatchObject({ requestId: expect.any(String), status: 'processing', resources: ['Condition', 'AllergyIntolerance'] });
    expect(await sdk.getConsolidatedQueryStatus(id)).toMatchObject({ status: 'processing', queries: [{ requestId: consolidated.requestId }] });

    // createDocumentReference: the customer uploads a C-CDA it holds to the URL it is given.
    const reference = await sdk.createDocumentReference(id, {
      resourceType: 'DocumentReference',
      description: 'Outside records',
      content: [{ attachment: { contentType: 'application/xml', title: 'outside.xml' } }],
    });
    expect(reference).toEqual({ documentReferenceId: expect.any(String), uploadUrl: expect.any(String) });
    const put = await fetch(reference.uploadUrl, { method: 'PUT', headers: { 'content-type': 'application/xml' }, body: fixtureText('care-plan.xml') });
    expect(put.status).toBe(200);

    await driver.settle();
    expect(await sdk.getConsolidatedQueryStatus(id)).toMatchObject({ status: 'completed', queries: null });
    expect((await sdk.listDocuments(id)).documents.map((document) => document.id)).toContain(reference.documentReferenceId);

    // Every message the service sent verifies with the SDK's verifyWebhookSignature, on the raw body.
    const key = settings.webhookKey as string;
    const received = receiver.requests.filter((request) => request.path === `/sdk/${accountId}`);
    const types = received.map((request) => {
      const signature = String(request.headers['x-metriport-signature']);
      expect(MetriportMedicalApi.verifyWebhookSignature(key, request.body, signature)).toBe(true);
      expect(sdk.verifyWebhookSignature(key, Buffer.from(request.body), signature)).toBe(true);
      expect(MetriportMedicalApi.verifyWebhookSignature(key, request.body.replace('"meta"', '"meta" '), signature)).toBe(false);
      const type = parseWebhook(request.body).meta.type;
      // The SDK's own parser too (document-download: see the next test).
      if (type !== 'medical.document-download') expect(() => MetriportMedicalApi.parseWebhookResponse(JSON.parse(request.body)), type).not.toThrow();
      return type;
    });
    expect(new Set(types)).toEqual(
      new Set(['ping', 'medical.document-download', 'medical.document-conversion', 'medical.document-bulk-download-urls', 'medical.consolidated-data']),
    );

    expect(await sdk.getWebhookStatus()).toMatchObject({ webhookEnabled: true });
    await expect(sdk.retryWebhookRequests()).resolves.toBeUndefined();
  });

  test("the SDK's parseWebhookResponse reads our messages; document-download differs only in size, which the wire format keeps as a string", async () => {
    const { sdk, accountId, apiKey } = await sdkFor('SDK Webhook Parsing');
    await sdk.updateSettings(`${receiver.url}/parse/${accountId}`);
    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: NPI, address: ADDRESS });
    // The SDK has no bulk patient create method: the call and the upload go over plain HTTP.
    const started = await driver.call({ method: 'POST', path: '/medical/v1/patient/bulk', apiKey });
    expect(started.status).toBe(200);
    const csv = 'firstName,lastName,dob,gender,addressLine1,city,state,zip\nBo,Kim,1980-02-02,M,2 Oak St,Springfield,IL,62701\n';
    expect((await driver.fetchUrl(started.body.uploadUrl, { method: 'PUT', apiKey, contentType: 'text/csv', body: csv })).status).toBe(200);

    let patientId: string | undefined;
    for (let attempt = 0; attempt < 80 && !patientId; attempt++) {
      const patient = await sdk.createPatient(patientData(), facility.id);
      if ((await sandboxFilesFor(patient.id)).length >= 1) patientId = patient.id;
    }
    await sdk.startDocumentQuery(patientId!, facility.id);
    await driver.settle();

    const bodies = receiver.requests.filter((request) => request.path === `/parse/${accountId}`).map((request) => JSON.parse(request.body) as Record<string, unknown>);
    expect(new Set(bodies.map((body) => (body.meta as { type: string }).type))).toEqual(
      new Set(['ping', 'medical.bulk-patient-create', 'medical.document-download', 'medical.document-conversion']),
    );
    for (const body of bodies) {
      const type = (body.meta as { type: string }).type;
      if (type !== 'medical.document-download') {
        expect(() => MetriportMedicalApi.parseWebhookResponse(body), type).not.toThrow();
        continue;
      }
      expect(() => MetriportMedicalApi.parseWebhookResponse(body)).toThrow();
      const withNumericSizes = structuredClone(body) as { patients: { documents: { size?: unknown }[] }[] };
      for (const patient of withNumericSizes.patients) for (const document of patient.documents) document.size = Number(document.size);
      expect(() => MetriportMedicalApi.parseWebhookResponse(withNumericSizes)).not.toThrow();
    }
  });
});
