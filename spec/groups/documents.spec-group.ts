import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { SandboxHieNetwork } from '../../adapters/hie/sandbox.hie.js';
import { escapeHtml } from '../../adapters/render/bundle.renderer.js';
import { parseWebhookMessage } from '../../core/webhooks/envelope.js';
import { sandboxDocumentsDir } from '../../runtime/sandbox-documents.js';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, SAMPLE_ADDRESS } from '../support/api.js';
import type { HostDriver } from '../support/driver.js';

/*
 * The sandbox network chooses a patient's documents from a hash of the patient id (deterministic, about
 * one patient in five gets none). The suite asks the same sandbox, built on the same documents, which
 * documents a patient will get, and creates patients until one fits what a test needs: so the tests do not
 * depend on how ids are made, only on the sandbox's documented behaviour.
 */

let sandbox: SandboxHieNetwork | undefined;

/** The fixture file names the sandbox network holds for a patient id, sorted. */
export async function sandboxFilesFor(patientId: string): Promise<string[]> {
  sandbox ??= new SandboxHieNetwork({ fixturesDir: sandboxDocumentsDir() });
  const refs = await sandbox.findDocuments({ patientId, firstName: '', lastName: '', dob: '', genderAtBirth: 'U', zips: [] });
  return refs.map((ref) => ref.fileName).sort();
}

export function fixtureText(fileName: string): string {
  return readFileSync(path.join(sandboxDocumentsDir(), fileName), 'utf8');
}

/** A word found in one fixture's text and in no other fixture's (checked in the search group). */
export const WORD_ONLY_IN: Record<string, string> = {
  'care-plan.xml': 'cannula',
  'ccd-1.xml': 'pacemaker',
  'ccd-2.xml': 'borderline',
  'consultation-note.xml': 'neuropathy',
  'discharge-summary.xml': 'ibuprofen',
  'history-and-physical.xml': 'asbestos',
  'procedure-note.xml': 'propofol',
  'progress-note.xml': 'cardiomegaly',
};

export interface SpecPatient {
  id: string;
  externalId: string;
  /** What the sandbox network holds for this patient. */
  files: string[];
}

let patientCounter = 0;

export async function createPatient(api: AccountApi, overrides: Record<string, unknown> = {}): Promise<SpecPatient> {
  patientCounter++;
  const externalId = `emr-${patientCounter}`;
  const response = await api.call('POST', '/medical/v1/patient', {
    body: { firstName: 'Eve', lastName: `Everywoman${patientCounter}`, dob: '1975-05-01', genderAtBirth: 'F', address: SAMPLE_ADDRESS, externalId, ...overrides },
  });
  expect(response.status, response.text).toBe(201);
  return { id: response.body.id, externalId, files: await sandboxFilesFor(response.body.id) };
}

/** Creates patients until the sandbox holds for one of them documents that satisfy `wanted`. */
export async function patientWhere(api: AccountApi, wanted: (files: string[]) => boolean): Promise<SpecPatient> {
  for (let attempt = 0; attempt < 80; attempt++) {
    const patient = await createPatient(api);
    if (wanted(patient.files)) return patient;
  }
  throw new Error('no patient in 80 gets the documents the test needs from the sandbox');
}

/** An account with its one facility. */
export async function documentsAccount(host: HostDriver, name?: string): Promise<AccountApi> {
  const api = await AccountApi.create(host, name);
  await api.createFacility();
  return api;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** Starts a document query, runs the background work, and returns the final status and the query's messages. */
export async function runDocumentQuery(api: AccountApi, patientId: string, metadata?: Record<string, string>) {
  const start = await api.call('POST', '/medical/v1/document/query', { query: { patientId }, ...(metadata ? { body: { metadata } } : {}) });
  expect(start.status, start.text).toBe(200);
  await api.host.settle();
  const status = await api.call('GET', '/medical/v1/document/query', { query: { patientId } });
  expect(status.status, status.text).toBe(200);
  const messages = (await api.webhooks()).filter((message: Json) => message.meta.requestId === start.body.requestId);
  return { requestId: start.body.requestId as string, status: status.body, messages: messages as Json[] };
}

export async function listDocuments(api: AccountApi, patientId: string): Promise<Json[]> {
  const response = await api.call('GET', '/medical/v1/document', { query: { patientId } });
  expect(response.status, response.text).toBe(200);
  return response.body.documents;
}

export async function consolidatedResources(api: AccountApi, patientId: string, query: Record<string, string> = {}): Promise<Json[]> {
  const response = await api.call('GET', `/medical/v1/patient/${patientId}/consolidated`, { query });
  expect(response.status, response.text).toBe(200);
  expect(response.body).toMatchObject({ resourceType: 'Bundle', type: 'searchset' });
  return response.body.entry.map((entry: Json) => entry.resource);
}

/** Every `reference` string at any depth. */
export function referencesOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(referencesOf);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) => (key === 'reference' && typeof child === 'string' ? [child] : referencesOf(child)));
}

const SIZE_DIGITS = /^\d+$/;

export function defineDocumentsGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('document query, documents and uploads', () => {
    test('a query downloads the documents, converts them and says so by webhook, echoing the metadata', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await patientWhere(api, (files) => files.length >= 2);
        const metadata = { 'crm-ticket': 'T-1', team: 'cardiology' };

        const start = await api.call('POST', '/medical/v1/document/query', { query: { patientId: patient.id }, body: { metadata } });
        expect(start.status, start.text).toBe(200);
        expect(start.body).toMatchObject({ requestId: expect.any(String), download: { status: 'processing' }, convert: { status: 'processing' } });
        // One query at a time: asking again while it runs returns it.
        const again = await api.call('POST', '/medical/v1/document/query', { query: { patientId: patient.id } });
        expect(again.body.requestId).toBe(start.body.requestId);
        await host.settle();

        const status = await api.call('GET', '/medical/v1/document/query', { query: { patientId: patient.id } });
        const n = patient.files.length;
        expect(status.body).toEqual({
          requestId: start.body.requestId,
          download: { status: 'completed', total: n, successful: n, errors: 0 },
          convert: { status: 'completed', total: n, successful: n, errors: 0 },
        });

        const messages = (await api.webhooks()).filter((m: Json) => m.meta.requestId === start.body.requestId);
        expect(messages.map((m: Json) => m.meta.type)).toEqual(['medical.document-download', 'medical.document-conversion']);
        for (const message of messages) {
          parseWebhookMessage(message);
          expect(message.meta.data).toEqual(metadata);
          expect(message.patients).toHaveLength(1);
          expect(message.patients[0]).toMatchObject({ patientId: patient.id, externalId: patient.externalId, status: 'completed' });
        }
        const [download, conversion] = messages;
        expect(download.patients[0].type).toBe('document-download');
        expect(conversion.patients[0].type).toBe('document-conversion');
        const sent: Json[] = download.patients[0].documents;
        expect(sent).toHaveLength(n);
        for (const document of sent) {
          expect(document).toMatchObject({
            id: expect.any(String),
            fileName: expect.any(String),
            description: expect.any(String),
            status: 'current',
            mimeType: 'application/xml',
            type: { coding: [expect.objectContaining({ system: 'http://loinc.org', code: expect.any(String) })], text: expect.any(String) },
          });
          expect(document.size).toMatch(SIZE_DIGITS);
          expect(Number.isNaN(Date.parse(document.indexed))).toBe(false);
        }

        // Listed as FHIR DocumentReferences about our patient, and each file downloads as it was sent.
        const listed = await listDocuments(api, patient.id);
        expect(listed.map((d: Json) => d.id).sort()).toEqual(sent.map((d: Json) => d.id).sort());
        for (const reference of listed) {
          expect(reference).toMatchObject({ resourceType: 'DocumentReference', status: 'current', subject: { reference: `Patient/${patient.id}` } });
          const document = sent.find((d: Json) => d.id === reference.id);
          expect(reference.content[0].attachment).toMatchObject({ title: document.fileName, contentType: 'application/xml', size: Number(document.size) });
          const link = await api.call('GET', '/medical/v1/document/download-url', { query: { fileName: document.fileName } });
          expect(link.status, link.text).toBe(200);
          const file = await host.fetchUrl(link.body.url, { method: 'GET' });
          expect(file.status).toBe(200);
          expect(file.text).toContain('ClinicalDocument');
          expect(new TextEncoder().encode(file.text).length).toBe(Number(document.size));
          expect(patient.files.map(fixtureText)).toContain(file.text);
        }

        // Consolidated: one Patient, ours; every Patient reference points to it; a coded condition once per
        // episode (its onset and its end).
        const resources = await consolidatedResources(api, patient.id);
        expect(resources.filter((r: Json) => r.resourceType === 'Patient').map((r: Json) => r.id)).toEqual([patient.id]);
        expect(referencesOf(resources).filter((ref) => ref.startsWith('Patient/')).every((ref) => ref === `Patient/${patient.id}`)).toBe(true);
        const ended = (r: Json) => String(r.abatementDateTime ?? '').slice(0, 10) || (/"(resolved|inactive|remission)"/.test(JSON.stringify(r.clinicalStatus ?? {})) ? 'resolved' : 'open');
        const conditionEpisodes = resources
          .filter((r: Json) => r.resourceType === 'Condition' && r.code?.coding?.[0]?.system && r.code.coding[0].code)
          .map((r: Json) => `${r.code.coding[0].system}|${r.code.coding[0].code} ${String(r.onsetDateTime ?? '').slice(0, 10)} ${ended(r)}`);
        expect(conditionEpisodes.length).toBeGreaterThan(0);
        expect(new Set(conditionEpisodes).size).toBe(conditionEpisodes.length);
        // The converted documents reference nothing they lack; after deduplication that still holds.
        const keys = new Set(resources.map((r: Json) => `${r.resourceType}/${r.id}`));
        const dangling = referencesOf(resources).filter((ref) => !ref.startsWith('#') && !keys.has(ref));
        expect(dangling).toEqual([]);
      });
    });

    test('a second query sends only what it fetched: documents already held are not stored or sent again', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await patientWhere(api, (files) => files.length >= 1);
        const first = await runDocumentQuery(api, patient.id);
        const resourcesAfterFirst = await consolidatedResources(api, patient.id);
        const second = await runDocumentQuery(api, patient.id, { run: '2' });
        expect(second.requestId).not.toBe(first.requestId);
        expect(second.status).toMatchObject({ download: { status: 'completed', total: 0, successful: 0 }, convert: { status: 'completed', total: 0 } });
        expect(second.messages.map((m: Json) => [m.meta.type, m.patients[0].status])).toEqual([
          ['medical.document-download', 'completed'],
          ['medical.document-conversion', 'completed'],
        ]);
        expect(second.messages[0].patients[0].documents).toEqual([]);
        expect(second.messages[0].meta.data).toEqual({ run: '2' });
        expect(await listDocuments(api, patient.id)).toHaveLength(patient.files.length);
        expect(await consolidatedResources(api, patient.id)).toEqual(resourcesAfterFirst);
      });
    });

    test('a patient the network holds nothing for gets a completed query with empty lists, and both messages', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await patientWhere(api, (files) => files.length === 0);
        const { status, messages } = await runDocumentQuery(api, patient.id, { k: 'v' });
        expect(status).toMatchObject({
          download: { status: 'completed', total: 0, successful: 0, errors: 0 },
          convert: { status: 'completed', total: 0, successful: 0, errors: 0 },
        });
        expect(messages.map((m: Json) => [m.meta.type, m.patients[0].status, m.meta.data])).toEqual([
          ['medical.document-download', 'completed', { k: 'v' }],
          ['medical.document-conversion', 'completed', { k: 'v' }],
        ]);
        expect(messages[0].patients[0].documents).toEqual([]);
        expect(await listDocuments(api, patient.id)).toEqual([]);
        expect(await consolidatedResources(api, patient.id)).toEqual([]);
      });
    });

    test('an opted-out patient is refused with PATIENT_OPTED_OUT; opting out after the start stops the query before the network', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await patientWhere(api, (files) => files.length >= 1);
        const optOut = (value: string) => api.call('PUT', `/medical/v1/patient/${patient.id}/hie-opt-out`, { query: { hieOptOut: value } });

        expect((await optOut('true')).status).toBe(200);
        const refused = await api.call('POST', '/medical/v1/document/query', { query: { patientId: patient.id } });
        expect(refused.status).toBe(400);
        expect(refused.body.code).toBe('PATIENT_OPTED_OUT');
        await host.settle();
        expect((await api.call('GET', '/medical/v1/document/query', { query: { patientId: patient.id } })).body).toEqual({});
        expect(await api.webhooks()).toEqual([]);

        expect((await optOut('false')).status).toBe(200);
        const start = await api.call('POST', '/medical/v1/document/query', { query: { patientId: patient.id } });
        expect(start.status, start.text).toBe(200);
        expect((await optOut('true')).status).toBe(200);
        await host.settle();
        const status = await api.call('GET', '/medical/v1/document/query', { query: { patientId: patient.id } });
        expect(status.body).toMatchObject({ requestId: start.body.requestId, download: { status: 'failed' }, convert: { status: 'failed' } });
        const messages = await api.webhooks();
        expect(messages.map((m: Json) => [m.meta.type, m.patients[0].status])).toEqual([
          ['medical.document-download', 'failed'],
          ['medical.document-conversion', 'failed'],
        ]);
        expect(messages[0].patients[0].documents).toEqual([]);
        expect(await listDocuments(api, patient.id)).toEqual([]);
      });
    });

    test('metadata is checked: 400 METADATA_INVALID naming the key; an unknown patient is 404', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await createPatient(api);
        const longKey = 'k'.repeat(41);
        for (const [metadata, key] of [
          [{ [longKey]: 'v' }, longKey],
          [{ ok: 'v', count: 3 }, 'count'],
          [{ note: 'x'.repeat(501) }, 'note'],
        ] as const) {
          const response = await api.call('POST', '/medical/v1/document/query', { query: { patientId: patient.id }, body: { metadata } });
          expect(response.status).toBe(400);
          expect(response.body.code).toBe('METADATA_INVALID');
          expect(response.body.detail).toContain(key);
          expect(response.body.detail).not.toContain('x'.repeat(501));
        }
        const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
        expect((await api.call('POST', '/medical/v1/document/query', { query: { patientId: patient.id }, body: { metadata: many } })).body.code).toBe('METADATA_INVALID');
        const unknown = await api.call('POST', '/medical/v1/document/query', { query: { patientId: '00000000-0000-4000-8000-000000000000' } });
        expect(unknown.status).toBe(404);
        expect((await api.call('POST', '/medical/v1/document/query', { query: {} })).status).toBe(400);
        await host.settle();
        expect(await api.webhooks()).toEqual([]);
      });
    });

    test('download URLs: short-lived, scoped to the account; bulk URLs come by webhook, valid 600 s', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await patientWhere(api, (files) => files.length >= 2);
        await runDocumentQuery(api, patient.id);
        const listed = await listDocuments(api, patient.id);
        const fileName: string = listed[0].content[0].attachment.title;

        const other = await documentsAccount(host, 'Other Health');
        expect((await other.call('GET', '/medical/v1/document/download-url', { query: { fileName } })).status).toBe(404);
        expect((await other.call('GET', '/medical/v1/document', { query: { patientId: patient.id } })).status).toBe(404);
        expect((await api.call('GET', '/medical/v1/document/download-url', { query: { fileName: 'nope.xml' } })).body.code).toBe('DOCUMENT_NOT_FOUND');

        const pdf = await api.call('GET', '/medical/v1/document/download-url', { query: { fileName, conversionType: 'pdf' } });
        const rendered = await host.fetchUrl(pdf.body.url, { method: 'GET' });
        expect(rendered.status).toBe(200);
        expect(rendered.headers['content-type']).toBe('application/pdf');
        expect(rendered.text.startsWith('%PDF-')).toBe(true);
        // One document rendered says so, under the document's own title.
        const html = await api.call('GET', '/medical/v1/document/download-url', { query: { fileName, conversionType: 'html' } });
        const page = (await host.fetchUrl(html.body.url, { method: 'GET' })).text;
        expect(page).toContain(`<h1>${escapeHtml(listed[0].description)}</h1>`);
        expect(page).toContain('One document from the medical record of Eve Everywoman');

        const start = await api.call('POST', '/medical/v1/document/download-url/bulk', { query: { patientId: patient.id }, body: { metadata: { batch: '7' } } });
        expect(start.status, start.text).toBe(200);
        expect(start.body).toEqual({ requestId: expect.any(String), status: 'processing' });
        await host.settle();
        const [message] = (await api.webhooks()).filter((m: Json) => m.meta.type === 'medical.document-bulk-download-urls');
        parseWebhookMessage(message);
        expect(message.meta).toMatchObject({ requestId: start.body.requestId, data: { batch: '7' } });
        expect(message.patients[0]).toMatchObject({ patientId: patient.id, externalId: patient.externalId, status: 'completed' });
        const documents: Json[] = message.patients[0].documents;
        expect(documents.map((d) => d.id).sort()).toEqual(listed.map((d: Json) => d.id).sort());
        for (const document of documents) {
          expect(typeof document.size).toBe('number');
          expect(document.organizationIdentifiers.length).toBeGreaterThan(0);
          expect(document.organizationIdentifiers[0]).toEqual({ name: expect.any(String), identifierValues: expect.any(Array) });
          const file = await host.fetchUrl(document.url, { method: 'GET' });
          expect(file.status).toBe(200);
          expect(new TextEncoder().encode(file.text).length).toBe(document.size);
        }
        const single = await api.call('GET', '/medical/v1/document/download-url', { query: { fileName } });
        host.clock.advance(600_000);
        expect((await host.fetchUrl(documents[0].url, { method: 'GET' })).status).toBe(410);
        expect((await host.fetchUrl(single.body.url, { method: 'GET' })).status).toBe(410);
        const forged = single.body.url.replace(/sig=[0-9a-f]+/, `sig=${'0'.repeat(64)}`);
        expect((await host.fetchUrl(forged, { method: 'GET' })).status).toBe(403);
      });
    });

    test('a document the customer uploads is listed, converted, consolidated and searchable; a broken one fails alone', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await createPatient(api);
        const given = {
          resourceType: 'DocumentReference',
          description: 'Outside records from Dr. Smith',
          type: { coding: [{ system: 'http://loinc.org', code: '34133-9', display: 'Summary of episode note' }], text: 'Summary' },
          context: { period: { start: '2023-01-01', end: '2023-02-01' }, facilityType: { text: 'Clinic' } },
          content: [{ attachment: { contentType: 'application/xml', title: 'outside ccd.xml' } }],
        };
        // The published SDK posts to `/document/upload/?patientId=` (trailing slash).
        const created = await api.call('POST', '/medical/v1/document/upload/', { query: { patientId: patient.id }, body: given });
        expect(created.status, created.text).toBe(200);
        expect(created.body).toEqual({ documentReferenceId: expect.any(String), uploadUrl: expect.stringMatching(/^https?:\/\//) });
        expect(await listDocuments(api, patient.id)).toEqual([]);

        const xml = fixtureText('ccd-1.xml');
        const put = await host.fetchUrl(created.body.uploadUrl, { method: 'PUT', contentType: 'application/xml', body: xml });
        expect(put.status, put.text).toBe(200);
        const twice = await host.fetchUrl(created.body.uploadUrl, { method: 'PUT', contentType: 'application/xml', body: xml });
        expect(twice.status).toBe(409);
        expect(twice.body.code).toBe('UPLOAD_URL_USED');
        await host.settle();

        const [listed] = await listDocuments(api, patient.id);
        expect(listed).toMatchObject({
          resourceType: 'DocumentReference',
          id: created.body.documentReferenceId,
          description: given.description,
          context: given.context,
          type: given.type,
          subject: { reference: `Patient/${patient.id}` },
          content: [{ attachment: { contentType: 'application/xml', size: new TextEncoder().encode(xml).length } }],
        });
        const resources = await consolidatedResources(api, patient.id);
        const conditions = resources.filter((r: Json) => r.resourceType === 'Condition').map((r: Json) => r.code?.text);
        expect(conditions).toContain('Pneumonia');
        const search = await api.call('GET', `/medical/v1/patient/${patient.id}/consolidated/search`, { query: { query: WORD_ONLY_IN['ccd-1.xml']! } });
        const bundle = JSON.parse((await host.fetchUrl(search.body.url, { method: 'GET' })).text);
        expect(bundle.entry.filter((e: Json) => e.search.mode === 'match').map((e: Json) => e.resource.id)).toContain(created.body.documentReferenceId);

        // Not a C-CDA document: that document fails to convert; nothing else changes, nothing crashes.
        const broken = await api.call('POST', '/medical/v1/document/upload', { query: { patientId: patient.id }, body: { description: 'Scanned letter' } });
        const brokenPut = await host.fetchUrl(broken.body.uploadUrl, { method: 'PUT', contentType: 'application/xml', body: '<letter><p>not clinical</p></letter>' });
        expect(brokenPut.status, brokenPut.text).toBe(200);
        await host.settle();
        expect((await listDocuments(api, patient.id)).map((d: Json) => d.id)).toEqual([created.body.documentReferenceId, broken.body.documentReferenceId]);
        expect(await consolidatedResources(api, patient.id)).toHaveLength(resources.length + 1);

        const expired = await api.call('POST', '/medical/v1/document/upload', { query: { patientId: patient.id }, body: given });
        host.clock.advance(10 * 60_000);
        expect((await host.fetchUrl(expired.body.uploadUrl, { method: 'PUT', contentType: 'application/xml', body: xml })).status).toBe(410);
        expect((await api.call('POST', '/medical/v1/document/upload', { query: { patientId: patient.id }, body: [1, 2] })).status).toBe(400);
      });
    });
  });
}
