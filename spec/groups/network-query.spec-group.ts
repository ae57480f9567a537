import { expect } from 'vitest';
import { SandboxLabNetwork } from '../../adapters/hie/sandbox.lab.js';
import { SandboxPharmacyNetwork } from '../../adapters/hie/sandbox.pharmacy.js';
import { parseWebhookMessage } from '../../core/webhooks/envelope.js';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import type { AccountApi } from '../support/api.js';
import { consolidatedResources, createPatient, documentsAccount, listDocuments, type Json, type SpecPatient } from './documents.spec-group.js';

/*
 * Like the sandbox HIE, the sandbox pharmacy and laboratory networks answer from a hash of the patient id.
 * The suite asks the same sandboxes what a patient will get and creates patients until one fits a test.
 */

const pharmacy = new SandboxPharmacyNetwork();
const lab = new SandboxLabNetwork();
const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm';
const LOINC = 'http://loinc.org';
const UCUM = 'http://unitsofmeasure.org';

interface NetworkPatient extends SpecPatient {
  /** RxNorm codes the pharmacy holds for the patient. */
  drugs: string[];
  /** Observations the laboratory holds. */
  results: number;
}

async function networkPatient(api: AccountApi, wanted: (patient: NetworkPatient) => boolean): Promise<NetworkPatient> {
  for (let attempt = 0; attempt < 300; attempt++) {
    const patient = await createPatient(api);
    const query = { patientId: patient.id, firstName: '', lastName: '', dob: '', genderAtBirth: 'U' as const, zips: [] };
    const drugs = (await pharmacy.fetchRecords(query)).resources.filter((r) => r.resourceType === 'MedicationRequest').map((r) => codeOf((r as Json).medicationCodeableConcept, RXNORM)!);
    const results = (await lab.fetchRecords(query)).resources.filter((r) => r.resourceType === 'Observation').length;
    const candidate = { ...patient, drugs, results };
    if (wanted(candidate)) return candidate;
  }
  throw new Error('no patient in 300 gets what the test needs from the sandbox networks');
}

function codeOf(concept: Json, system: string): string | undefined {
  return concept?.coding?.find((coding: Json) => coding.system === system)?.code;
}

async function startQuery(api: AccountApi, patientId: string, body: Json) {
  return api.call('POST', '/medical/v1/network/query', { query: { patientId }, body });
}

function networkMessages(messages: Json[], requestId: string): Json[] {
  return messages.filter((message) => String(message.meta.type).startsWith('network-query.') && message.meta.requestId === requestId);
}

export function defineNetworkQueryGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('network query', () => {
    test('hie, pharmacy and lab: one webhook per source with the consolidated data, RxNorm medications and LOINC results in the store, metadata echoed', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await networkPatient(api, (p) => p.files.length >= 1 && p.drugs.length >= 1 && p.results >= 1);

        const start = await startQuery(api, patient.id, { sources: ['hie', 'pharmacy', 'lab'], metadata: { chart: 'c-17' } });
        expect(start.status, start.text).toBe(200);
        expect(start.body).toEqual({
          requestId: expect.any(String),
          startedAt: expect.any(String),
          status: 'processing',
          sources: ['hie', 'pharmacy', 'lab'].map((type) => ({ type, status: 'processing', startedAt: start.body.startedAt })),
        });
        // A query still running is returned, whatever is asked.
        expect((await startQuery(api, patient.id, { sources: ['lab'] })).body.requestId).toBe(start.body.requestId);

        await host.settle();
        const status = await api.call('GET', `/medical/v1/network/query/${start.body.requestId}`);
        expect(status.status, status.text).toBe(200);
        expect(status.body).toMatchObject({ requestId: start.body.requestId, status: 'completed' });
        expect(status.body.sources.map((s: Json) => [s.type, s.status, typeof s.completedAt])).toEqual([
          ['hie', 'completed', 'string'],
          ['pharmacy', 'completed', 'string'],
          ['lab', 'completed', 'string'],
        ]);

        const all = await api.webhooks();
        const messages = networkMessages(all, start.body.requestId);
        expect(messages.map((m) => m.meta.type).sort()).toEqual(['network-query.hie', 'network-query.lab', 'network-query.pharmacy']);
        for (const message of messages) {
          parseWebhookMessage(message);
          expect(message.meta.data).toEqual({ chart: 'c-17' });
          expect(message.payload).toMatchObject({ patientId: patient.id, externalId: patient.externalId, source: { type: message.meta.type.split('.')[1], status: 'completed' } });
        }
        // The hie source ran as a document query, which sent its own messages too.
        expect(all.filter((m: Json) => m.meta.type === 'medical.document-conversion')).toHaveLength(1);

        const last = messages.find((m) => m.meta.type === 'network-query.lab')!;
        const data = await host.fetchUrl(last.payload.consolidatedDataUrl, { method: 'GET' });
        expect(data.status, data.text).toBe(200);
        const bundle = JSON.parse(data.text);
        expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'collection' });
        const resources: Json[] = await consolidatedResources(api, patient.id);
        expect(bundle.entry.map((e: Json) => e.resource)).toEqual(resources);

        const dispenses = resources.filter((r) => r.resourceType === 'MedicationDispense');
        expect(dispenses.length).toBeGreaterThanOrEqual(patient.drugs.length);
        for (const dispense of dispenses) {
          expect(codeOf(dispense.medicationCodeableConcept, RXNORM)).toMatch(/^\d+$/);
          expect(dispense.subject).toEqual({ reference: `Patient/${patient.id}` });
          const [prescription] = dispense.authorizingPrescription;
          expect(resources.some((r) => `${r.resourceType}/${r.id}` === prescription.reference)).toBe(true);
        }
        const reports = resources.filter((r) => r.resourceType === 'DiagnosticReport' && codeOf(r.code, LOINC));
        expect(reports.length).toBeGreaterThanOrEqual(1);
        for (const report of reports.filter((r) => r.id.startsWith('labrpt-'))) {
          for (const { reference } of report.result) {
            const observation = resources.find((r) => `${r.resourceType}/${r.id}` === reference);
            expect(observation, reference).toBeDefined();
            expect(codeOf(observation.code, LOINC)).toMatch(/^\d+-\d$/);
            expect(observation.valueQuantity).toMatchObject({ value: expect.any(Number), system: UCUM, code: expect.any(String) });
            expect(observation.referenceRange[0].low ?? observation.referenceRange[0].high).toMatchObject({ system: UCUM });
          }
        }

        // Each network's answer is a document of the patient, listed with the HIE's.
        const documents = await listDocuments(api, patient.id);
        expect(documents.filter((d: Json) => d.content[0].attachment.contentType === 'application/fhir+json')).toHaveLength(2);
        expect(documents).toHaveLength(patient.files.length + 2);
      });
    });

    test('asking again brings the same answers: nothing is stored twice; a drug in both the documents and the pharmacy history is kept once', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        // atenolol (RxNorm 197380) is in these documents and may be in the pharmacy history.
        const patient = await networkPatient(api, (p) => p.drugs.includes('197380') && (p.files.includes('ccd-1.xml') || p.files.includes('consultation-note.xml')));
        const first = await startQuery(api, patient.id, { sources: { hie: { enabled: true }, pharmacy: { enabled: true }, lab: { enabled: false } } });
        expect(first.body.sources.map((s: Json) => s.type)).toEqual(['hie', 'pharmacy']);
        await host.settle();
        const before = await consolidatedResources(api, patient.id);
        const atenolol = before.filter((r: Json) => r.resourceType === 'MedicationRequest' && codeOf(r.medicationCodeableConcept, RXNORM) === '197380');
        expect(atenolol).toHaveLength(1);
        // The dispenses point to the one prescription that survived.
        for (const dispense of before.filter((r: Json) => r.resourceType === 'MedicationDispense' && codeOf(r.medicationCodeableConcept, RXNORM) === '197380')) {
          expect(dispense.authorizingPrescription[0].reference).toBe(`MedicationRequest/${atenolol[0].id}`);
        }

        const second = await startQuery(api, patient.id, { sources: ['pharmacy'] });
        expect(second.body.requestId).not.toBe(first.body.requestId);
        await host.settle();
        expect((await api.call('GET', `/medical/v1/network/query/${second.body.requestId}`)).body.status).toBe('completed');
        expect(await consolidatedResources(api, patient.id)).toEqual(before);
        expect((await listDocuments(api, patient.id)).filter((d: Json) => d.content[0].attachment.contentType === 'application/fhir+json')).toHaveLength(1);
      });
    });

    test('refused: an opted-out patient (nothing recorded), bad sources and metadata, another account; unknown ids are 404', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await createPatient(api);
        expect((await api.call('PUT', `/medical/v1/patient/${patient.id}/hie-opt-out`, { query: { hieOptOut: 'true' } })).status).toBe(200);
        const refused = await startQuery(api, patient.id, { sources: ['pharmacy'] });
        expect(refused.status).toBe(400);
        expect(refused.body.code).toBe('PATIENT_OPTED_OUT');
        await host.settle();
        expect((await api.webhooks()).filter((m: Json) => String(m.meta.type).startsWith('network-query.'))).toEqual([]);

        const other = await createPatient(api);
        for (const body of [{ sources: [] }, { sources: ['hie', 'radiology'] }, { sources: { hie: { enabled: 'yes' } } }, { sources: 'hie' }, {}]) {
          const response = await startQuery(api, other.id, body);
          expect(response.status, JSON.stringify(body)).toBe(400);
          expect(response.body.detail).toContain('sources');
        }
        const badMetadata = await startQuery(api, other.id, { sources: ['lab'], metadata: { nested: { no: 1 } } });
        expect(badMetadata.status).toBe(400);
        expect(badMetadata.body.code).toBe('METADATA_INVALID');
        expect((await startQuery(api, '00000000-0000-7000-8000-00000000ffff', { sources: ['lab'] })).status).toBe(404);
        expect((await api.call('GET', '/medical/v1/network/query/00000000-0000-7000-8000-00000000ffff')).status).toBe(404);

        const started = await startQuery(api, other.id, { sources: ['lab'] });
        const stranger = await documentsAccount(host, 'Stranger Health');
        expect((await stranger.call('GET', `/medical/v1/network/query/${started.body.requestId}`)).status).toBe(404);
        expect((await startQuery(stranger, other.id, { sources: ['lab'] })).status).toBe(404);
      });
    });

    test('a patient who opts out while the query waits gets no network call: each source ends failed, with its webhook', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await networkPatient(api, (p) => p.drugs.length > 0 && p.results > 0);
        const start = await startQuery(api, patient.id, { sources: ['pharmacy', 'lab'] });
        expect((await api.call('PUT', `/medical/v1/patient/${patient.id}/hie-opt-out`, { query: { hieOptOut: 'true' } })).status).toBe(200);
        await host.settle();
        expect((await api.call('GET', `/medical/v1/network/query/${start.body.requestId}`)).body).toMatchObject({ status: 'failed' });
        const messages = networkMessages(await api.webhooks(), start.body.requestId);
        expect(messages.map((m) => [m.meta.type, m.payload.source.status]).sort()).toEqual([
          ['network-query.lab', 'failed'],
          ['network-query.pharmacy', 'failed'],
        ]);
        expect(await consolidatedResources(api, patient.id)).toEqual([]);
      });
    });

    test('the network directory lists the organizations the sandbox networks reach, filtered and paged', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const all = await api.call('GET', '/medical/v1/network-entry');
        expect(all.status, all.text).toBe(200);
        const names = all.body.networkEntries.map((entry: Json) => entry.name);
        expect(names).toEqual(expect.arrayContaining(['Good Health HIE', 'Sandbox Reference Laboratory', 'Sandbox Community Pharmacy #1042']));
        expect(new Set(all.body.networkEntries.map((entry: Json) => entry.oid)).size).toBe(names.length);
        expect(all.body.meta).toEqual({ itemsOnPage: names.length });

        const labs = await api.call('GET', '/medical/v1/network-entry', { query: { filter: 'laboratory' } });
        expect(labs.body.networkEntries.map((entry: Json) => entry.name)).toEqual(['Sandbox Reference Laboratory']);
        const byNpi = await api.call('GET', '/medical/v1/network-entry', { query: { npi: labs.body.networkEntries[0].npi } });
        expect(byNpi.body.networkEntries).toEqual(labs.body.networkEntries);
        expect((await api.call('GET', '/medical/v1/network-entry', { query: { supportsMessaging: 'true' } })).body.networkEntries).toEqual([]);

        const seen: string[] = [];
        let page = await api.call('GET', '/medical/v1/network-entry', { query: { count: '2' } });
        for (;;) {
          expect(page.body.networkEntries.length).toBeLessThanOrEqual(2);
          seen.push(...page.body.networkEntries.map((entry: Json) => entry.name));
          if (!page.body.meta.nextPage) break;
          const next = new URL(page.body.meta.nextPage);
          page = await api.call('GET', next.pathname, { query: Object.fromEntries(next.searchParams) });
        }
        expect(seen).toEqual(names);
      });
    });
  });
}
