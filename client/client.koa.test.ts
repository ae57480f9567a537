import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fixtureText, sandboxFilesFor, WORD_ONLY_IN } from '../spec/groups/documents.spec-group.js';
import { makeKoaDriver } from '../spec/support/koa-driver.js';
import { startReceiver, type Receiver } from '../spec/support/receiver.js';
import {
  CarebridgeApiError,
  CarebridgeClient,
  CarebridgeClientError,
  isWebhookMessageOfType,
  parseWebhook,
  verifyStandardWebhook,
  verifyWebhookSignature,
  WEBHOOK_SIGNATURE_HEADER,
  type Patient,
  type PatientCreate,
  type WebhookMessage,
} from './index.js';

/*
 * Every method of the client against the real service (Koa, SQLite, 127.0.0.1), over HTTP. Background work
 * runs when the test says (`settle`), so each step's outcome is known before it is checked.
 */

const NPI = '1234567893';
const ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' as const };
const FACILITY = { name: 'Main Clinic', npi: NPI, address: ADDRESS };
const CSV_HEADER = 'externalId,firstName,lastName,dob,gender,addressLine1-1,city-1,state-1,zip-1';

let driver: Awaited<ReturnType<typeof makeKoaDriver>>;
let receiver: Receiver;
let tempDir: string;

beforeAll(async () => {
  [driver, receiver, tempDir] = await Promise.all([makeKoaDriver(), startReceiver(), mkdtemp(join(tmpdir(), 'carebridge-client-'))]);
  receiver.setDefault({ kind: 'ok', pong: true });
});
afterAll(async () => {
  await Promise.all([driver?.close(), receiver?.close(), tempDir ? rm(tempDir, { recursive: true, force: true }) : undefined]);
});

async function newClient(name = 'Client Test'): Promise<CarebridgeClient> {
  const { apiKey } = await driver.createAccount(name);
  return new CarebridgeClient({ apiKey, baseUrl: driver.service.url });
}

let patientCounter = 0;
function patientInput(overrides: Partial<PatientCreate> = {}): PatientCreate {
  patientCounter++;
  return { firstName: 'Ana', lastName: `Client${patientCounter}`, dob: '1975-03-09', genderAtBirth: 'F', address: [ADDRESS], externalId: `emr-${patientCounter}`, ...overrides };
}

async function apiError(promise: Promise<unknown>): Promise<CarebridgeApiError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(CarebridgeApiError);
  return error as CarebridgeApiError;
}

function csvRows(count: number, offset = 0): string {
  const rows = Array.from({ length: count }, (_, i) => `csv-${offset + i},Rowan,Rowfield${offset + i},1980-01-0${(i % 9) + 1},M,${i + 1} Oak St,Springfield,IL,62701`);
  return `${CSV_HEADER}\n${rows.join('\n')}\n`;
}

describe('organization', () => {
  test('get (none yet), create, get, update; a second create is ORGANIZATION_EXISTS', async () => {
    const client = await newClient();
    expect(await client.getOrganization()).toBeUndefined();
    const created = await client.createOrganization({ name: 'Acme Health', type: 'ambulatory', location: ADDRESS });
    expect(created).toMatchObject({ id: expect.any(String), oid: expect.stringMatching(/^2\.25\./), name: 'Acme Health', type: 'ambulatory', location: { zip: '62701' } });
    expect(await client.getOrganization()).toEqual(created);
    const updated = await client.updateOrganization(created.id, { name: 'Acme Health West', type: 'hospital', location: { ...ADDRESS, zip: 62702 } });
    expect(updated).toMatchObject({ id: created.id, name: 'Acme Health West', type: 'hospital', location: { zip: '62702' } });
    const exists = await apiError(client.createOrganization({ name: 'Again', type: 'ambulatory', location: ADDRESS }));
    expect(exists).toMatchObject({ status: 409, code: 'ORGANIZATION_EXISTS', title: 'Conflict', detail: expect.any(String) });
  });
});

describe('facilities and cohorts', () => {
  test('create, list, get, update, remove a facility; a removed one is FACILITY_NOT_FOUND', async () => {
    const client = await newClient();
    const first = await client.createFacility(FACILITY);
    const second = await client.createFacility({ ...FACILITY, name: 'Second Clinic', tin: '12-3456789' });
    expect(first).toMatchObject({ name: 'Main Clinic', npi: NPI, active: true, tin: null, address: { state: 'IL' } });
    expect((await client.listFacilities()).map((f) => f.id)).toEqual([first.id, second.id]);
    expect(await client.getFacility(second.id)).toEqual(second);
    expect(await client.updateFacility(second.id, { ...FACILITY, name: 'Renamed', active: false })).toMatchObject({ id: second.id, name: 'Renamed', active: false });
    await client.removeFacility(second.id);
    expect(await apiError(client.getFacility(second.id))).toMatchObject({ status: 404, code: 'FACILITY_NOT_FOUND' });
    expect((await client.listFacilities()).map((f) => f.id)).toEqual([first.id]);
  });

  test('create, list, get, update, remove a cohort', async () => {
    const client = await newClient();
    const cohort = await client.createCohort({ name: 'Diabetes program', description: 'Type 2' });
    expect(cohort).toMatchObject({ id: expect.any(String), name: 'Diabetes program', description: 'Type 2' });
    expect(await client.listCohorts()).toEqual([cohort]);
    expect(await client.getCohort(cohort.id)).toEqual(cohort);
    expect(await client.updateCohort(cohort.id, { name: 'Renamed' })).toMatchObject({ id: cohort.id, name: 'Renamed', description: null });
    await client.removeCohort(cohort.id);
    expect(await client.listCohorts()).toEqual([]);
    expect(await apiError(client.removeCohort(cohort.id))).toMatchObject({ status: 404, code: 'COHORT_NOT_FOUND' });
  });
});

describe('patients', () => {
  test('create, get, update, list in pages, HIE opt-out both ways, remove', async () => {
    const client = await newClient();
    const facility = await client.createFacility(FACILITY);
    const created = await client.createPatient(patientInput({ contact: { phone: '(217) 555-0100' } }), facility.id);
    expect(created).toMatchObject({ facilityIds: [facility.id], genderAtBirth: 'F', contact: [{ phone: '2175550100' }], hieOptOut: false });
    expect(await client.getPatient(created.id)).toEqual(created);

    const updated = await client.updatePatient(created.id, patientInput({ firstName: 'Anna', address: ADDRESS }));
    expect(updated).toMatchObject({ id: created.id, firstName: 'Anna', address: [{ city: 'Springfield' }] });

    const others = [await client.createPatient(patientInput()), await client.createPatient(patientInput())];
    const firstPage = await client.listPatients({ count: 2 });
    expect(firstPage.patients.map((p) => p.id)).toEqual([created.id, others[0]!.id]);
    expect(firstPage.meta.itemsOnPage).toBe(2);
    expect(firstPage.nextCursor).toEqual(expect.any(String));
    const lastPage = await client.listPatients({ count: 2, cursor: firstPage.nextCursor! });
    expect(lastPage.patients.map((p) => p.id)).toEqual([others[1]!.id]);
    expect(lastPage.nextCursor).toBeUndefined();
    const all: Patient[] = [];
    for await (const patient of client.listAllPatients({ count: 1, facilityId: facility.id })) all.push(patient);
    expect(all.map((p) => p.id)).toEqual([created.id, ...others.map((p) => p.id)]);
    // Filters reach the service: only the renamed patient is an Anna (the others kept the input's first name).
    expect((await client.listPatients({ name: 'ANNA', dob: updated.dob })).patients.map((p) => p.id)).toEqual([created.id]);
    expect((await client.listPatients({ name: 'anna', externalId: 'no-such-id' })).patients).toEqual([]);

    expect(await client.getPatientHieOptOut(created.id)).toEqual({ id: created.id, hieOptOut: false });
    expect(await client.updatePatientHieOptOut(created.id, true)).toMatchObject({ id: created.id, hieOptOut: true, message: expect.any(String) });
    expect(await client.getPatientHieOptOut(created.id)).toEqual({ id: created.id, hieOptOut: true });
    expect(await client.updatePatientHieOptOut(created.id, false)).toMatchObject({ hieOptOut: false });

    await client.removePatient(created.id);
    expect(await apiError(client.getPatient(created.id))).toMatchObject({ status: 404, code: 'PATIENT_NOT_FOUND' });
  });

  test('ifMatch: a write from the eTag read lands; one from an eTag overtaken since is PRECONDITION_FAILED and changes nothing', async () => {
    const client = await newClient();
    await client.createFacility(FACILITY);
    const read = await client.createPatient(patientInput());
    const updated = await client.updatePatient(read.id, patientInput({ firstName: 'Anna' }), undefined, { ifMatch: read.eTag });
    expect(updated).toMatchObject({ firstName: 'Anna' });
    expect(updated.eTag).not.toBe(read.eTag);
    const refused = await apiError(client.updatePatient(read.id, patientInput({ firstName: 'Stale' }), undefined, { ifMatch: read.eTag }));
    expect(refused).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED', title: 'Precondition Failed' });
    expect(await apiError(client.updatePatientHieOptOut(read.id, true, { ifMatch: read.eTag }))).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED' });
    expect(await client.getPatient(read.id)).toEqual(updated);
    expect(await client.updatePatientHieOptOut(read.id, true, { ifMatch: updated.eTag })).toMatchObject({ hieOptOut: true });
    expect(await client.updatePatientHieOptOut(read.id, false, { ifMatch: '*' })).toMatchObject({ hieOptOut: false });
  });

  test('bad input is a 400 naming the field; another account sees 404', async () => {
    const client = await newClient();
    await client.createFacility(FACILITY);
    const invalid = await apiError(client.createPatient({ ...patientInput(), dob: '1975-13-40' }));
    expect(invalid).toMatchObject({ status: 400, code: 'VALIDATION_FAILED', title: 'Bad Request' });
    expect(invalid.detail).toMatch(/dob/);
    expect(invalid.request).toEqual({ method: 'POST', path: '/medical/v1/patient' });
    const patient = await client.createPatient(patientInput());
    const stranger = await newClient('Stranger');
    expect(await apiError(stranger.getPatient(patient.id))).toMatchObject({ status: 404, code: 'PATIENT_NOT_FOUND' });
  });
});

describe('bulk patient create', () => {
  test('createPatientsFromCsv: start, upload, completed; the result CSV downloads', async () => {
    const client = await newClient();
    const facility = await client.createFacility(FACILITY);
    const requestId = await client.createPatientsFromCsv(csvRows(3) + 'bad,,,,,,,,\n', { facilityId: facility.id });
    const processing = await client.getBulkPatientCreate(requestId);
    expect(processing).toMatchObject({ requestId, facilityId: facility.id, status: 'processing', dryRun: false });
    await driver.settle();
    const done = await client.getBulkPatientCreate(requestId);
    expect(done).toMatchObject({ status: 'completed', total: 4, processed: 4, succeeded: 3, failed: 1, result: expect.stringContaining(requestId) });
    const result = await (await client.download(done.result!)).text();
    const [header, ...rows] = result.trim().split(/\r?\n/);
    expect(header).toContain('metriportId');
    expect(rows.filter((row) => row.includes('succeeded'))).toHaveLength(3);
    expect(rows.filter((row) => row.includes('failed'))).toHaveLength(1);
    expect((await client.listPatients()).patients).toHaveLength(3);
  });

  test('waitForBulkPatientCreate follows the request to its end; downloadBulkPatientCreateResult streams the result to a file', async () => {
    const client = await newClient();
    const facility = await client.createFacility(FACILITY);
    const requestId = await client.createPatientsFromCsv(csvRows(2) + 'bad,,,,,,,,\n', { facilityId: facility.id });
    const seen: string[] = [];
    const waiting = client.waitForBulkPatientCreate(requestId, { pollMs: 10, onProgress: (status) => seen.push(status.status) });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await driver.settle();
    const final = await waiting;
    expect(final).toMatchObject({ requestId, status: 'completed', succeeded: 2, failed: 1 });
    expect(seen[0]).toBe('processing');
    expect(seen.at(-1)).toBe('completed');
    const dir = await mkdtemp(join(tmpdir(), 'carebridge-result-'));
    try {
      const file = join(dir, 'result.csv');
      await client.downloadBulkPatientCreateResult(final, file);
      const rows = (await readFile(file, 'utf8')).trim().split(/\r?\n/);
      expect(rows[0]).toContain('metriportId');
      expect(rows.slice(1).filter((row) => row.includes('succeeded'))).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await expect(client.downloadBulkPatientCreateResult({ requestId, status: 'failed' }, join(dir, 'x.csv'))).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    const aborted = new AbortController();
    aborted.abort(new Error('stop waiting'));
    await expect(client.waitForBulkPatientCreate(requestId, { signal: aborted.signal })).rejects.toThrow('stop waiting');
  });

  test('start then upload a Node stream, a file on disk and bytes; a dry run creates nobody', async () => {
    const client = await newClient();
    await client.createFacility(FACILITY);

    const streamed = await client.startBulkPatientCreate();
    expect(streamed).toMatchObject({ status: 'waiting', uploadUrl: expect.stringContaining(streamed.requestId), params: { dryRun: false } });
    const afterUpload = await client.uploadBulkPatientCsv(streamed.uploadUrl, Readable.from([Buffer.from(csvRows(2, 10))]));
    expect(afterUpload).toMatchObject({ requestId: streamed.requestId, status: 'processing' });

    const file = join(tempDir, 'patients.csv');
    await writeFile(file, csvRows(2, 20));
    const fromFile = await client.createPatientsFromCsv({ path: file });

    const dry = await client.startBulkPatientCreate({ dryRun: true });
    expect(dry.params).toEqual({ dryRun: true });
    await client.uploadBulkPatientCsv(dry.uploadUrl, new TextEncoder().encode(csvRows(5, 30)));

    await driver.settle();
    expect(await client.getBulkPatientCreate(streamed.requestId)).toMatchObject({ status: 'completed', succeeded: 2 });
    expect(await client.getBulkPatientCreate(fromFile)).toMatchObject({ status: 'completed', succeeded: 2 });
    expect(await client.getBulkPatientCreate(dry.requestId)).toMatchObject({ status: 'completed', dryRun: true, succeeded: 5 });
    expect((await client.listPatients()).patients).toHaveLength(4);

    // The pre-signed URL is single use.
    expect(await apiError(client.uploadBulkPatientCsv(streamed.uploadUrl, csvRows(1)))).toMatchObject({ status: 409, code: 'UPLOAD_URL_USED' });
  });

  test('the API key never goes to another origin than the base URL', async () => {
    const client = await newClient();
    await client.createFacility(FACILITY);
    const started = await client.startBulkPatientCreate();
    const elsewhere = started.uploadUrl.replace(new URL(started.uploadUrl).origin, receiver.url);
    const seen = receiver.requests.length;
    const error = await client.uploadBulkPatientCsv(elsewhere, csvRows(1)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CarebridgeClientError);
    expect(error).toMatchObject({ code: 'UNTRUSTED_URL' });
    expect(receiver.requests.length).toBe(seen);
  });

  test('two facilities and none chosen is FACILITY_REQUIRED; an unknown facility is 404', async () => {
    const client = await newClient();
    await client.createFacility(FACILITY);
    await client.createFacility({ ...FACILITY, name: 'Other' });
    expect(await apiError(client.createPatientsFromCsv(csvRows(1)))).toMatchObject({ status: 400, code: 'FACILITY_REQUIRED' });
    expect(await apiError(client.startBulkPatientCreate({ facilityId: '00000000-0000-7000-8000-000000000000' }))).toMatchObject({
      status: 404,
      code: 'FACILITY_NOT_FOUND',
    });
  });
});

describe('settings and webhooks', () => {
  test('webhook URL set (pinged), signed messages parse; a 410 parks, retry redelivers', async () => {
    const client = await newClient();
    await client.createFacility(FACILITY);
    const initial = await client.getSettings();
    expect(initial).toMatchObject({ webhookUrl: null, webhookEnabled: false, webhookKey: expect.any(String), webhookSigningSecret: expect.stringMatching(/^whsec_/) });

    const path = `/hooks/${initial.id}`;
    const settings = await client.updateSettings({ webhookUrl: `${receiver.url}${path}` });
    expect(settings).toMatchObject({ webhookUrl: `${receiver.url}${path}`, webhookEnabled: true });
    expect(await client.getSettings()).toEqual(settings);

    const requestId = await client.createPatientsFromCsv(csvRows(2, 40));
    await driver.settle();
    const received = receiver.requests.filter((request) => request.path === path);
    const messages: WebhookMessage[] = [];
    for (const request of received) {
      expect(verifyWebhookSignature(request.body, String(request.headers[WEBHOOK_SIGNATURE_HEADER]), settings.webhookKey)).toBe(true);
      expect(verifyWebhookSignature(`${request.body} `, String(request.headers[WEBHOOK_SIGNATURE_HEADER]), settings.webhookKey)).toBe(false);
      expect(verifyStandardWebhook(request.body, request.headers, settings.webhookKey, { nowSeconds: Number(request.headers['webhook-timestamp']) })).toBe(true);
      expect(verifyStandardWebhook(request.body, request.headers, settings.webhookSigningSecret, { nowSeconds: Number(request.headers['webhook-timestamp']) })).toBe(true);
      messages.push(parseWebhook(request.body));
    }
    expect(messages[0]).toMatchObject({ meta: { type: 'ping' } });
    const bulk = messages.filter((message) => isWebhookMessageOfType(message, 'medical.bulk-patient-create'));
    expect(bulk.map((message) => isWebhookMessageOfType(message, 'medical.bulk-patient-create') && message.bulkPatientCreate)).toEqual([
      { requestId, status: 'processing' },
      { requestId, status: 'completed', result: expect.stringContaining(requestId), created: 2, updated: 0 },
    ]);
    expect(await client.getWebhookStatus()).toEqual({
      webhookEnabled: true,
      webhookStatusDetail: expect.stringMatching(/^Ping answered/),
      health: 'healthy',
      failingSince: null,
      processing: 0,
      failed: 0,
      messages: expect.objectContaining({ pending: 0, parked: 0 }),
    });

    // The receiver says 410 Gone: the message is parked and the endpoint disabled.
    receiver.enqueue({ kind: 'status', status: 410 });
    const parkedRequest = await client.createPatientsFromCsv(csvRows(1, 50));
    await driver.settle();
    const status = await client.getWebhookStatus();
    expect(status).toMatchObject({ webhookEnabled: false, failed: 1 });
    expect(await client.retryWebhookRequests()).toEqual({ retried: 1 });
    await client.updateSettings({ webhookUrl: `${receiver.url}${path}` });
    await driver.settle();
    expect(await client.getWebhookStatus()).toMatchObject({ webhookEnabled: true, processing: 0, failed: 0 });
    const redelivered = receiver.requests.filter((request) => request.path === path && request.answeredStatus === 200).map((request) => parseWebhook(request.body));
    expect(redelivered.filter((message) => message.meta.type === 'medical.bulk-patient-create' && 'bulkPatientCreate' in message && message.bulkPatientCreate.requestId === parkedRequest)).toHaveLength(2);

    // An empty URL clears it.
    expect(await client.updateSettings({ webhookUrl: '' })).toMatchObject({ webhookUrl: null, webhookEnabled: false });
  });

  test('webhook endpoints: create (pinged), list, get, update, remove; each receives what its filter takes, signed with its own secret; the delivery log pages', async () => {
    const client = await newClient();
    await client.createFacility(FACILITY);
    const path = `/endpoints/${(await client.getSettings()).id}`;
    const endpoint = await client.createWebhookEndpoint({ url: `${receiver.url}${path}`, description: 'bulk only', eventTypes: ['medical.bulk-patient-create'] });
    expect(endpoint).toMatchObject({ enabled: true, description: 'bulk only', eventTypes: ['medical.bulk-patient-create'], signingSecret: expect.stringMatching(/^whsec_/) });
    expect(await client.listWebhookEndpoints()).toEqual({ endpoints: [endpoint] });
    expect(await client.getWebhookEndpoint(endpoint.id)).toEqual(endpoint);

    const requestId = await client.createPatientsFromCsv(csvRows(1, 60));
    await driver.settle();
    const received = receiver.requests.filter((request) => request.path === path).map((request) => {
      expect(verifyStandardWebhook(request.body, request.headers, endpoint.signingSecret, { nowSeconds: Number(request.headers['webhook-timestamp']) })).toBe(true);
      return parseWebhook(request.body);
    });
    expect(received.map((message) => message.meta.type)).toEqual(['ping', 'medical.bulk-patient-create', 'medical.bulk-patient-create']);
    expect(received.slice(1).every((message) => 'bulkPatientCreate' in message && message.bulkPatientCreate.requestId === requestId)).toBe(true);

    const log = await client.listWebhookAttempts({ endpointId: endpoint.id, limit: 1 });
    expect(log.attempts).toHaveLength(1);
    expect(log.attempts[0]).toMatchObject({ endpointId: endpoint.id, type: 'medical.bulk-patient-create', status: 'delivered', statusCode: 200 });
    const next = await client.listWebhookAttempts({ endpointId: endpoint.id, limit: 1, cursor: log.nextCursor! });
    expect(next.attempts[0]!.attemptedAt <= log.attempts[0]!.attemptedAt).toBe(true);
    expect(next.nextCursor).toBeNull();
    expect((await client.getWebhookEndpoint(endpoint.id)).messages).toEqual({ pending: 0, failing: 0, delivered: 2, parked: 0 });

    // A test event: a sample of the type asked, to this endpoint only, whatever its filter.
    const before = receiver.requests.length;
    const sample = await client.sendWebhookTestEvent(endpoint.id, { type: 'medical.consolidated-data' });
    expect(sample).toMatchObject({ endpointId: endpoint.id, type: 'medical.consolidated-data', status: 'delivered', statusCode: 200, error: null });
    const sent = receiver.requests.slice(before);
    expect(sent.map((request) => request.path)).toEqual([path]);
    const parsedSample = parseWebhook(sent[0]!.body);
    expect(parsedSample.meta).toMatchObject({ messageId: sample.messageId, type: 'medical.consolidated-data', test: true });
    expect((await apiError(client.sendWebhookTestEvent(endpoint.id, { type: 'ping' as never })))).toMatchObject({ status: 400 });

    const updated = await client.updateWebhookEndpoint(endpoint.id, { enabled: false, description: 'paused' });
    expect(updated).toMatchObject({ id: endpoint.id, enabled: false, description: 'paused' });
    await client.removeWebhookEndpoint(endpoint.id);
    expect(await client.listWebhookEndpoints()).toEqual({ endpoints: [] });
    const missing = await apiError(client.getWebhookEndpoint(endpoint.id));
    expect(missing).toMatchObject({ status: 404, code: 'WEBHOOK_ENDPOINT_NOT_FOUND' });
  });
});

describe('documents and consolidated data', () => {
  let client: CarebridgeClient;
  let facilityId: string;
  let patientId: string;
  let files: string[];

  beforeAll(async () => {
    client = await newClient('Documents');
    facilityId = (await client.createFacility(FACILITY)).id;
    // The sandbox network picks a patient's documents from the patient id: create patients until one has two.
    for (let attempt = 0; attempt < 80 && !patientId; attempt++) {
      const patient = await client.createPatient(patientInput());
      const held = await sandboxFilesFor(patient.id);
      if (held.length >= 2) [patientId, files] = [patient.id, held];
    }
    expect(patientId).toBeDefined();
  });

  test('document query: start, status, list (FHIR and summaries), download URLs and renderings', async () => {
    expect(await client.getDocumentQueryStatus(patientId)).toBeUndefined();
    const started = await client.startDocumentQuery(patientId, facilityId, { source: 'client-test' });
    expect(started).toMatchObject({ requestId: expect.any(String), download: { status: 'processing' } });
    await driver.settle();
    const status = await client.getDocumentQueryStatus(patientId);
    expect(status).toMatchObject({ requestId: started.requestId, download: { status: 'completed', total: files.length }, convert: { status: 'completed' } });

    const references = await client.listDocuments(patientId, facilityId);
    expect(references).toHaveLength(files.length);
    expect(references.every((reference) => reference.resourceType === 'DocumentReference')).toBe(true);
    expect(await client.listDocuments(patientId, undefined, { count: 1 })).toHaveLength(1);
    const summaries = await client.listDocumentSummaries(patientId);
    expect(summaries.map((summary) => summary.id).sort()).toEqual(references.map((reference) => reference.id).sort());

    const document = summaries[0]!;
    const { url } = await client.getDocumentUrl(document.fileName);
    const file = await client.download(url);
    expect(file.headers.get('content-type')).toBe(document.mimeType);
    expect(await file.text()).toContain('ClinicalDocument');
    const html = await client.download((await client.getDocumentUrl(document.fileName, 'html')).url);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await apiError(client.getDocumentUrl('no-such-file.xml'))).toMatchObject({ status: 404 });
  });

  test('bulk download URLs come by webhook', async () => {
    const started = await client.startBulkGetDocumentUrl(patientId, { batch: '7' });
    expect(started).toEqual({ requestId: expect.any(String), status: 'processing' });
    await driver.settle();
    const { accountId } = await accountOf(client);
    const messages = (await driver.webhookMessages(accountId)).map((body) => parseWebhook(body));
    const urls = messages.find((message) => message.meta.type === 'medical.document-bulk-download-urls' && message.meta.requestId === started.requestId);
    expect(urls).toMatchObject({ meta: { data: { batch: '7' } }, patients: [{ patientId, status: 'completed' }] });
  });

  test('createDocumentReference and uploadDocument: the uploaded C-CDA is listed and converted', async () => {
    const before = await client.listDocuments(patientId);
    const upload = await client.createDocumentReference(patientId, {
      resourceType: 'DocumentReference',
      description: 'Outside records',
      type: { text: 'Summary' },
      content: [{ attachment: { contentType: 'application/xml', title: 'outside.xml' } }],
    });
    expect(upload).toEqual({ documentReferenceId: expect.any(String), uploadUrl: expect.any(String) });
    const uploaded = await client.uploadDocument(upload.uploadUrl, fixtureText('procedure-note.xml'));
    expect(uploaded).toMatchObject({ documentReferenceId: upload.documentReferenceId, size: expect.any(Number) });
    await driver.settle();
    const after = await client.listDocuments(patientId);
    expect(after.map((reference) => reference.id)).toEqual(expect.arrayContaining([...before.map((reference) => reference.id), upload.documentReferenceId]));
  });

  test('consolidated: query, its status, the query, the data at once, and search', async () => {
    expect(await client.getConsolidatedQueryStatus(patientId)).toMatchObject({ queries: null });
    const started = await client.startConsolidatedQuery(patientId, { resources: ['Condition', 'Patient'], conversionType: 'json', metadata: { run: '1' } });
    expect(started).toMatchObject({ requestId: expect.any(String), status: 'processing', conversionType: 'json', resources: ['Condition', 'Patient'] });
    expect(await client.getConsolidatedQueryStatus(patientId)).toMatchObject({ status: 'processing', queries: [{ requestId: started.requestId }] });
    await driver.settle();
    expect(await client.getConsolidatedQuery(patientId, started.requestId)).toMatchObject({ requestId: started.requestId, status: 'completed' });

    const bundle = await client.getPatientConsolidated(patientId, { resources: 'Condition' });
    expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'searchset' });
    expect(bundle.total).toBeGreaterThan(0);
    expect((bundle.entry ?? []).every((entry) => entry.resource?.resourceType === 'Condition')).toBe(true);

    const word = WORD_ONLY_IN[files[0]!]!;
    const found = await client.searchPatientData(patientId, word);
    expect(found.resourceCount).toBeGreaterThan(0);
    const searchset = (await (await client.download(found.url!)).json()) as { resourceType: string; entry: unknown[] };
    expect(searchset).toMatchObject({ resourceType: 'Bundle', type: 'searchset' });
    expect(searchset.entry.length).toBe(found.resourceCount);
    expect(await client.searchPatientData(patientId, 'zzqxjv')).toEqual({ resourceCount: 0 });
  });

  test('an opted-out patient gets no document query', async () => {
    const patient = await client.createPatient(patientInput());
    await client.updatePatientHieOptOut(patient.id, true);
    expect(await apiError(client.startDocumentQuery(patient.id))).toMatchObject({ status: 400, code: 'PATIENT_OPTED_OUT' });
  });
});

/** The account behind a client, through the API: settings carry the account id. */
async function accountOf(client: CarebridgeClient): Promise<{ accountId: string }> {
  return { accountId: (await client.getSettings()).id };
}

describe('lookups, memberships, patient data and network query', () => {
  test('getPatientByExternalId, matchPatient (undefined when nobody matches), patient facilities and cohorts, cohort members and pages, patchCohort', async () => {
    const client = await newClient('Client Lookups');
    const [main, second] = [await client.createFacility(FACILITY), await client.createFacility({ ...FACILITY, name: 'Second' })];
    const input = patientInput();
    const patient = await client.createPatient(input, main.id);
    const other = await client.createPatient(patientInput(), main.id);
    expect(await client.getPatientByExternalId(input.externalId!)).toEqual(patient);
    expect((await apiError(client.getPatientByExternalId('emr-none'))).code).toBe('PATIENT_NOT_FOUND');
    expect(await client.matchPatient({ ...input, externalId: undefined })).toEqual(patient);
    expect(await client.matchPatient({ ...input, dob: '1975-03-10' })).toBeUndefined();

    expect((await client.setPatientFacilities(patient.id, [second.id, main.id])).map((f) => f.id)).toEqual([second.id, main.id]);
    expect((await client.getPatientFacilities(patient.id)).map((f) => f.id)).toEqual([second.id, main.id]);

    const cohort = await client.createCohort({ name: 'Diabetes program' });
    expect(await client.patchCohort(cohort.id, { description: 'Adults' })).toMatchObject({ name: 'Diabetes program', description: 'Adults' });
    expect((await client.addPatientsToCohort(cohort.id, { allPatients: true })).message).toBe('2 patients added to the cohort');
    const page = await client.listCohortPatients(cohort.id, { count: 1 });
    expect(page.patients.map((p) => p.id)).toEqual([patient.id]);
    expect((await client.listCohortPatients(cohort.id, { cursor: page.nextCursor! })).patients.map((p) => p.id)).toEqual([other.id]);
    await client.removePatientsFromCohort(cohort.id, { patientIds: [other.id] });
    expect(await client.getPatientCohorts(other.id)).toEqual([]);
    expect((await client.addPatientToCohorts(other.id, [cohort.id])).map((c) => c.id)).toEqual([cohort.id]);
  });

  test('addPatientResources, countPatientResources, getMedicalRecordUrl; a network query to its end, its webhooks parsed; listNetworkEntries in pages', async () => {
    const client = await newClient('Client Network');
    const { webhookKey } = await client.updateSettings({ webhookUrl: `${receiver.url}/client-network` });
    await client.createFacility(FACILITY);
    const patient = await client.createPatient(patientInput());
    const added = await client.addPatientResources(patient.id, {
      resourceType: 'Bundle',
      entry: [{ resource: { resourceType: 'Condition', id: 'c1', code: { coding: [{ system: 'http://snomed.info/sct', code: '38341003' }], text: 'Hypertension' } } }],
    });
    expect(added.entry).toEqual([{ response: { status: '201 Created', location: 'Condition/c1' } }]);
    expect(await client.countPatientResources(patient.id, { resources: ['Condition'] })).toEqual({ total: 1, resources: { Condition: 1 }, filter: { resources: 'Condition' } });
    const { url } = await client.getMedicalRecordUrl(patient.id, 'html');
    expect(await (await client.download(url)).text()).toContain('Hypertension');

    const started = await client.startNetworkQuery(patient.id, ['pharmacy', 'lab'], { ticket: 't-9' });
    expect(started).toMatchObject({ status: 'processing', sources: [{ type: 'pharmacy' }, { type: 'lab' }] });
    await driver.settle();
    const done = await client.getNetworkQuery(started.requestId);
    expect(done.status).toBe('completed');
    const messages = receiver.requests
      .filter((request) => request.path === '/client-network')
      .filter((request) => verifyWebhookSignature(request.body, String(request.headers[WEBHOOK_SIGNATURE_HEADER]), webhookKey))
      .map((request) => parseWebhook(request.body))
      .filter((message) => message.meta.type.startsWith('network-query.'));
    expect(messages.map((message) => message.meta.type).sort()).toEqual(['network-query.lab', 'network-query.pharmacy']);
    for (const message of messages) {
      if (!isWebhookMessageOfType(message, 'network-query.lab') && !isWebhookMessageOfType(message, 'network-query.pharmacy')) continue;
      expect(message.meta.data).toEqual({ ticket: 't-9' });
      expect((await client.download(message.payload.consolidatedDataUrl)).status).toBe(200);
    }

    const first = await client.listNetworkEntries({ count: 2 });
    expect(first.networkEntries).toHaveLength(2);
    const second = await client.listNetworkEntries({ count: 2, cursor: first.nextCursor! });
    expect(second.networkEntries[0]!.oid).toBe(first.nextCursor);
    expect((await apiError(client.startNetworkQuery(patient.id, []))).code).toBe('VALIDATION_FAILED');
  });
});
