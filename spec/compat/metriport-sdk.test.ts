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

/** Every SDK method some test called (through `sdkFor`'s instances), for the coverage check at the end. */
const called = new Set<string>();

/** An SDK instance whose method calls are recorded; it is the SDK unchanged otherwise. */
function recorded(sdk: MetriportMedicalApi): MetriportMedicalApi {
  return new Proxy(sdk, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      return (...args: unknown[]) => {
        called.add(property);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function sdkFor(name: string): Promise<{ sdk: MetriportMedicalApi; accountId: string; apiKey: string }> {
  const { apiKey, accountId } = await driver.createAccount(name);
  return { sdk: recorded(new MetriportMedicalApi(apiKey, { baseAddress: driver.service.url })), accountId, apiKey };
}

/** The problem body an axios error carries. */
async function problemOf(promise: Promise<unknown>): Promise<{ status?: number; code?: string; detail?: string } | undefined> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  return (error as { response?: { data?: { status?: number; code?: string; detail?: string } } } | undefined)?.response?.data;
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
  test('consolidated data: createPatientConsolidated (merged and deduplicated), countPatientConsolidated, getPatientConsolidated, getSingleConsolidatedQueryStatus, getPatientMedicalRecord', async () => {
    const { sdk } = await sdkFor('SDK Consolidated');
    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: NPI, address: ADDRESS });
    const patient = await sdk.createPatient(patientData(), facility.id);
    expect(await httpStatus(sdk.getPatientMedicalRecord(patient.id, 'html'))).toBe(404);

    const diabetes = { coding: [{ system: 'http://snomed.info/sct', code: '44054006', display: 'Diabetes mellitus type 2' }] };
    const created = await sdk.createPatientConsolidated(patient.id, {
      resourceType: 'Bundle',
      type: 'collection',
      entry: [
        { resource: { resourceType: 'Condition', id: 'cx-diabetes', code: diabetes, subject: { reference: 'Patient/theirs' }, onsetDateTime: '2019-04-02' } },
        // The same coded condition of the same episode (same onset) under another id: merged into the first.
        // (A dateless one would stay apart: merging it into a dated episode would depend on arrival order.)
        { resource: { resourceType: 'Condition', id: 'cx-diabetes-again', code: diabetes, subject: { reference: 'Patient/theirs' }, onsetDateTime: '2019-04-02' } },
        {
          resourceType: undefined as never,
          resource: {
            resourceType: 'Observation',
            status: 'final',
            code: { coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'Hemoglobin A1c' }] },
            effectiveDateTime: '2024-05-01',
            valueQuantity: { value: 7.1, unit: '%', system: 'http://unitsofmeasure.org', code: '%' },
          },
        },
      ],
    } as never);
    expect(created).toMatchObject({ resourceType: 'Bundle', type: 'transaction-response' });
    const responses = (created as { entry: { response: { status: string; location: string } }[] }).entry.map((e) => e.response);
    expect(responses[0]).toEqual({ status: '201 Created', location: 'Condition/cx-diabetes' });
    expect(responses[1]).toEqual({ status: '200 OK', location: 'Condition/cx-diabetes' });
    expect(responses[2]).toMatchObject({ status: '201 Created', location: expect.stringMatching(/^Observation\//) });
    expect(sdk.lastRequestId).toEqual(expect.any(String));

    const bundle = await sdk.getPatientConsolidated(patient.id, ['Condition', 'Observation']);
    const resources = (bundle as { entry: { resource: { resourceType: string; id: string; subject?: { reference: string } } }[] }).entry.map((e) => e.resource);
    expect(resources.map((r) => `${r.resourceType}/${r.id}`).sort()).toEqual(['Condition/cx-diabetes', responses[2]!.location]);
    // References to a Patient are references to this patient.
    expect(resources.find((r) => r.resourceType === 'Condition')!.subject).toEqual({ reference: `Patient/${patient.id}` });

    expect(await sdk.countPatientConsolidated(patient.id, ['Condition', 'Observation'])).toEqual({
      total: 2,
      resources: { Condition: 1, Observation: 1 },
      filter: { resources: 'Condition,Observation' },
    });
    expect(await sdk.countPatientConsolidated(patient.id, undefined, undefined, '2020-01-01')).toMatchObject({ resources: { Condition: 1 } });

    const refused = await problemOf(
      sdk.createPatientConsolidated(patient.id, { resourceType: 'Bundle', type: 'collection', entry: [{ resource: { resourceType: 'Patient', id: 'p1' } }] } as never),
    );
    expect(refused).toMatchObject({ status: 400, code: 'VALIDATION_FAILED', detail: expect.stringContaining('entry.0.resource.resourceType') });

    for (const format of ['html', 'pdf'] as const) {
      const { url } = await sdk.getPatientMedicalRecord(patient.id, format);
      const file = await fetch(url);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toContain(format === 'pdf' ? 'application/pdf' : 'text/html');
      const text = await file.text();
      expect(format === 'pdf' ? text.startsWith('%PDF-') : text.includes('Diabetes mellitus type 2')).toBe(true);
    }

    const query = await sdk.startConsolidatedQuery(patient.id, ['Condition']);
    expect(await sdk.getSingleConsolidatedQueryStatus(patient.id, query.requestId)).toMatchObject({ requestId: query.requestId, status: 'processing' });
    await driver.settle();
    expect(await sdk.getSingleConsolidatedQueryStatus(patient.id, query.requestId)).toMatchObject({ requestId: query.requestId, status: 'completed' });
  });

  test('getDocumentUploadUrl (deprecated) answers the upload URL, which takes the file', async () => {
    const { sdk } = await sdkFor('SDK Upload URL');
    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: NPI, address: ADDRESS });
    const patient = await sdk.createPatient(patientData(), facility.id);
    const uploadUrl = await sdk.getDocumentUploadUrl(patient.id, {
      resourceType: 'DocumentReference',
      description: 'Referral letter',
      content: [{ attachment: { contentType: 'application/xml', title: 'referral.xml' } }],
    });
    expect(uploadUrl).toEqual(expect.stringContaining('/medical/v1/document/upload/'));
    const put = await fetch(uploadUrl, { method: 'PUT', headers: { 'content-type': 'application/xml' }, body: fixtureText('care-plan.xml') });
    expect(put.status).toBe(200);
    await driver.settle();
    expect((await sdk.listDocumentsAsDTO(patient.id)).map((d) => d.description)).toContain('Referral letter');
  });

  test('cohorts: updateCohort, getCohort, listCohorts, add/remove patients, listPatientsInCohort and its pages, addPatientToCohorts, listCohortsForPatient, deleteCohort', async () => {
    const { sdk, apiKey } = await sdkFor('SDK Cohorts');
    // The SDK has no call to create a cohort: plain HTTP.
    const made = await driver.call({ method: 'POST', path: '/medical/v1/cohort', apiKey, body: { name: 'Diabetes program' } });
    expect(made.status).toBe(201);
    const other = (await driver.call({ method: 'POST', path: '/medical/v1/cohort', apiKey, body: { name: 'Heart failure' } })).body;
    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: NPI, address: ADDRESS });
    const patients = [];
    for (let i = 0; i < 3; i++) patients.push(await sdk.createPatient(patientData(), facility.id));

    const updated = await sdk.updateCohort({ id: made.body.id, eTag: made.body.eTag, description: 'Type 2, adults' } as never);
    expect(updated).toMatchObject({ id: made.body.id, name: 'Diabetes program', description: 'Type 2, adults' });
    expect(await sdk.getCohort(made.body.id)).toEqual(updated);
    expect((await sdk.listCohorts()).cohorts.map((c) => c.id)).toEqual([made.body.id, other.id]);

    const added = await sdk.addPatientsToCohort({ cohortId: made.body.id, patientIds: [patients[0]!.id, patients[1]!.id] });
    expect(added).toMatchObject({ cohort: { id: made.body.id }, message: '2 patients added to the cohort' });
    const firstPage = await sdk.listPatientsInCohort({ id: made.body.id, pagination: { count: 1 } });
    expect(firstPage.patients.map((p) => p.id)).toEqual([patients[0]!.id]);
    const secondPage = await sdk.getCohortPatientsPage(firstPage.meta.nextPage!);
    expect(secondPage.patients.map((p) => p.id)).toEqual([patients[1]!.id]);
    expect(secondPage.meta.nextPage).toBeUndefined();

    expect(await sdk.removePatientsFromCohort({ cohortId: made.body.id, patientIds: [patients[0]!.id] })).toMatchObject({ message: '1 patient removed from the cohort' });
    expect((await sdk.addPatientsToCohort({ cohortId: other.id, allPatients: true })).message).toBe('3 patients added to the cohort');
    expect((await sdk.addPatientToCohorts(patients[0]!.id, [made.body.id, other.id])).cohorts.map((c) => c.id)).toEqual([other.id, made.body.id]);
    expect((await sdk.listCohortsForPatient(patients[2]!.id)).cohorts.map((c) => c.id)).toEqual([other.id]);
    expect(await problemOf(sdk.addPatientsToCohort({ cohortId: made.body.id, patientIds: ['00000000-0000-7000-8000-00000000ffff'] }))).toMatchObject({ status: 404, code: 'PATIENT_NOT_FOUND' });

    await sdk.deleteCohort(other.id);
    expect(await httpStatus(sdk.getCohort(other.id))).toBe(404);
  });

  test('network query: startNetworkQuery, getNetworkQueryStatus, the network-query.* webhooks the SDK parses; listNetworkEntries and listNetworkEntriesPage', async () => {
    const { sdk, accountId } = await sdkFor('SDK Network');
    const settings = await sdk.updateSettings(`${receiver.url}/network/${accountId}`);
    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: NPI, address: ADDRESS });
    const patient = await sdk.createPatient(patientData(), facility.id);

    const started = await sdk.startNetworkQuery({ patientId: patient.id, sources: ['hie', 'pharmacy', 'lab'], metadata: { run: 'n1' } });
    expect(started).toMatchObject({ requestId: expect.any(String), status: 'processing', startedAt: expect.any(Date) });
    expect(started.sources.map((source) => source.type)).toEqual(['hie', 'pharmacy', 'lab']);
    await driver.settle();
    const done = await sdk.getNetworkQueryStatus({ requestId: started.requestId });
    expect(done.status).toBe('completed');
    expect(done.sources.every((source) => source.status === 'completed' && source.completedAt instanceof Date)).toBe(true);

    const bodies = receiver.requests.filter((request) => request.path === `/network/${accountId}`);
    const network = bodies.filter((request) => String(JSON.parse(request.body).meta.type).startsWith('network-query.'));
    expect(network.map((request) => JSON.parse(request.body).meta.type).sort()).toEqual(['network-query.hie', 'network-query.lab', 'network-query.pharmacy']);
    for (const request of network) {
      expect(MetriportMedicalApi.verifyWebhookSignature(settings.webhookKey as string, request.body, String(request.headers['x-metriport-signature']))).toBe(true);
      const parsed = MetriportMedicalApi.parseWebhookResponse(JSON.parse(request.body)) as { meta: { data?: unknown }; payload: { patientId: string; consolidatedDataUrl: string } };
      expect(parsed.meta.data).toEqual({ run: 'n1' });
      expect(parsed.payload.patientId).toBe(patient.id);
      expect((await fetch(parsed.payload.consolidatedDataUrl)).status).toBe(200);
    }
    expect(await problemOf(sdk.getNetworkQueryStatus({ requestId: '00000000-0000-7000-8000-00000000ffff' }))).toMatchObject({ status: 404 });

    const entries = await sdk.listNetworkEntries({ pagination: { count: 3 } });
    expect(entries.networkEntries).toHaveLength(3);
    expect(entries.networkEntries[0]).toMatchObject({ name: expect.any(String), oid: expect.any(String), network: 'SANDBOX', supportsMessaging: false });
    const next = await sdk.listNetworkEntriesPage(entries.meta.nextPage!);
    expect(next.networkEntries[0]!.oid).not.toBe(entries.networkEntries[0]!.oid);
    expect((await sdk.listNetworkEntries({ filter: 'pharmacy' })).networkEntries.map((entry) => entry.name)).toEqual([
      'Sandbox Community Pharmacy #1042',
      'Sandbox Mail Order Pharmacy',
    ]);
  });

  test('methods carebridge does not serve answer 501 NOT_IMPLEMENTED naming the method', async () => {
    const { sdk } = await sdkFor('SDK Not Served');
    const facility = await sdk.createFacility({ name: 'SDK Facility', npi: NPI, address: ADDRESS });
    const patient = await sdk.createPatient(patientData(), facility.id);
    const calls: [string, () => Promise<unknown>][] = [
      ['syncPatient', () => sdk.syncPatient(patient.id)],
      ['updatePatientTreatmentRelationship', () => sdk.updatePatientTreatmentRelationship(patient.id, true)],
      ['sendMessage', () => sdk.sendMessage({ patientId: patient.id, destination: '2.16.840.1.113883.3.9621', subject: 'Referral', body: 'Hello' } as never)],
      ['listMessages', () => sdk.listMessages({ patientId: patient.id })],
      ['listMessagesPage', () => sdk.listMessagesPage('/message?count=10')],
      ['getMessage', () => sdk.getMessage('00000000-0000-7000-8000-000000000001')],
      ['createEmbedToken', () => sdk.createEmbedToken({ expirationInSeconds: 600 } as never)],
    ];
    for (const [operation, call] of calls) {
      const problem = await problemOf(call());
      // listMessagesPage reads a page of the listMessages route.
      const named = operation === 'listMessagesPage' ? 'listMessages' : operation;
      expect(problem, operation).toMatchObject({ status: 501, code: 'NOT_IMPLEMENTED', detail: expect.stringContaining(named), details: { operation: named } });
    }
  });

  test('organization: getOrganization before and after createOrganization (one per account)', async () => {
    const { sdk } = await sdkFor('SDK Organization');
    expect(await sdk.getOrganization()).toBeUndefined();
    const created = await sdk.createOrganization({ name: 'Acme Health', type: TreatmentType.ambulatory, location: ADDRESS });
    expect(created).toMatchObject({ id: expect.any(String), oid: expect.any(String), eTag: expect.any(String), name: 'Acme Health', location: { state: 'IL' } });
    expect(await sdk.getOrganization()).toEqual(created);
    expect(await httpStatus(sdk.createOrganization({ name: 'Again', type: TreatmentType.ambulatory, location: ADDRESS }))).toBe(409);

    // updateOrganization sends what it got back (id, eTag, oid...) with If-Match; organizationSchema parses the answer.
    const updated = await sdk.updateOrganization({ ...created, name: 'Acme Health West', type: TreatmentType.acuteCare });
    expect(updated).toMatchObject({ id: created.id, oid: created.oid, name: 'Acme Health West', type: 'acuteCare' });
    expect(await sdk.getOrganization()).toEqual(updated);
  });

  test('facilities: updateFacility with what getFacility gave, deleteFacility (only without patients)', async () => {
    const { sdk } = await sdkFor('SDK Facility Update');
    const facility = await sdk.createFacility({ name: 'North Clinic', npi: NPI, address: ADDRESS });
    const updated = await sdk.updateFacility({ ...(await sdk.getFacility(facility.id)), name: 'North Clinic Annex', active: false });
    expect(updated).toMatchObject({ id: facility.id, name: 'North Clinic Annex', active: false, npi: NPI });
    expect(await sdk.getFacility(facility.id)).toEqual(updated);

    const busy = await sdk.createFacility({ name: 'Busy Clinic', npi: NPI, address: ADDRESS });
    await sdk.createPatient(patientData(), busy.id);
    expect(await problemOf(sdk.deleteFacility(busy.id, busy.eTag))).toMatchObject({ status: 409, code: 'FACILITY_IN_USE' });
    await sdk.deleteFacility(facility.id, updated.eTag);
    expect(await httpStatus(sdk.getFacility(facility.id))).toBe(404);
    expect((await sdk.listFacilities()).map((f) => f.id)).toEqual([busy.id]);
  });

  test('patients: getPatientByExternalId, matchPatient (undefined when nobody matches), listPatients and listPatientsPage, set/getPatientFacilities', async () => {
    const { sdk } = await sdkFor('SDK Patient Lookup');
    const [main, second] = [await sdk.createFacility({ name: 'Main', npi: NPI, address: ADDRESS }), await sdk.createFacility({ name: 'Second', npi: NPI, address: ADDRESS })];
    const data = patientData();
    const patient = await sdk.createPatient(data, main.id);

    expect(await sdk.getPatientByExternalId(data.externalId)).toEqual(patient);
    expect(await httpStatus(sdk.getPatientByExternalId('emr-nobody'))).toBe(404);

    const { externalId: _externalId, ...demographics } = data;
    expect(await sdk.matchPatient(demographics)).toEqual(patient);
    // Same person written differently: names case-insensitive, one of the names enough.
    expect(await sdk.matchPatient({ ...demographics, firstName: 'ANA Maria', lastName: data.lastName.toLowerCase() })).toMatchObject({ id: patient.id });
    expect(await sdk.matchPatient({ ...demographics, dob: '1975-03-10' })).toBeUndefined();
    // Created again, the same person is the same patient, unchanged (as the public API answers).
    expect(await sdk.createPatient({ ...data, externalId: 'emr-twin' }, main.id)).toEqual(patient);
    // The same name and birth date at another address is another patient; a change making it this one is refused.
    const elsewhere = { ...ADDRESS, zip: '62799' };
    const twin = await sdk.createPatient({ ...data, externalId: 'emr-twin', address: [elsewhere] }, main.id);
    expect(twin.id).not.toBe(patient.id);
    expect(await problemOf(sdk.updatePatient({ ...twin, address: [ADDRESS] } as Parameters<MetriportMedicalApi['updatePatient']>[0], main.id))).toMatchObject({ status: 409, code: 'CONFLICT' });
    // Someone living at both addresses is either of them: matching refuses to pick one.
    expect(await problemOf(sdk.matchPatient({ ...demographics, address: [ADDRESS, elsewhere] }))).toMatchObject({ status: 409, code: 'CONFLICT' });

    const others = [];
    for (let i = 0; i < 4; i++) others.push(await sdk.createPatient(patientData(), main.id));
    const first = await sdk.listPatients({ pagination: { count: 2 } });
    expect(first.patients).toHaveLength(2);
    expect(first.meta).toMatchObject({ itemsOnPage: 2, nextPage: expect.any(String) });
    const ids = first.patients.map((p) => p.id);
    let page = first;
    while (page.meta.nextPage) {
      page = await sdk.listPatientsPage(page.meta.nextPage);
      ids.push(...page.patients.map((p) => p.id));
    }
    expect(ids).toHaveLength(6);
    expect(new Set(ids).size).toBe(6);
    // fromItem starts at that patient, inclusive.
    expect((await sdk.listPatients({ pagination: { fromItem: ids[3]!, count: 2 } })).patients.map((p) => p.id)).toEqual(ids.slice(3, 5));
    expect((await sdk.listPatients({ facilityId: second.id })).patients).toEqual([]);

    expect(await sdk.getPatientFacilities(patient.id)).toEqual([expect.objectContaining(await sdk.getFacility(main.id))]);
    const both = await sdk.setPatientFacilities(patient.id, [second.id, main.id]);
    expect(both.map((f) => f.id)).toEqual([second.id, main.id]);
    expect((await sdk.getPatient(patient.id)).facilityIds).toEqual([second.id, main.id]);
    expect((await sdk.listPatients({ facilityId: second.id })).patients.map((p) => p.id)).toEqual([patient.id]);
    expect(await problemOf(sdk.setPatientFacilities(patient.id, ['00000000-0000-7000-8000-00000000ffff']))).toMatchObject({ status: 404, code: 'FACILITY_NOT_FOUND' });
    expect((await sdk.getPatientFacilities(patient.id)).map((f) => f.id)).toEqual([second.id, main.id]);
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

    // The SDK sends the eTag it is given as If-Match: the one from before the opt-outs is stale now.
    expect(await httpStatus(sdk.deletePatient(created.id, facility.id, updated.eTag))).toBe(412);
    await sdk.deletePatient(created.id, facility.id, (await sdk.getPatient(created.id)).eTag);
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
      // Only a document's size differs: a message listing no document (a patient the network holds nothing for) parses.
      const listsDocuments = (body as { patients: { documents: unknown[] }[] }).patients.some((patient) => patient.documents.length > 0);
      if (listsDocuments) expect(() => MetriportMedicalApi.parseWebhookResponse(body)).toThrow();
      else expect(() => MetriportMedicalApi.parseWebhookResponse(body)).not.toThrow();
      const withNumericSizes = structuredClone(body) as { patients: { documents: { size?: unknown }[] }[] };
      for (const patient of withNumericSizes.patients) for (const document of patient.documents) document.size = Number(document.size);
      expect(() => MetriportMedicalApi.parseWebhookResponse(withNumericSizes)).not.toThrow();
    }
  });

  test('the suite calls every method of MetriportMedicalApi (a newer SDK with methods nobody called fails here)', () => {
    const methods = Object.getOwnPropertyNames(MetriportMedicalApi.prototype).filter(
      (name) => name !== 'constructor' && typeof Object.getOwnPropertyDescriptor(MetriportMedicalApi.prototype, name)?.value === 'function',
    );
    expect(methods.length).toBeGreaterThan(40);
    expect(methods.filter((name) => !called.has(name)).sort()).toEqual([]);
  });
});
