import { expect } from 'vitest';
import { RELATED_TYPES } from '../../core/documents/related.js';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import type { AccountApi } from '../support/api.js';
import {
  consolidatedResources,
  createPatient,
  documentsAccount,
  fixtureText,
  listDocuments,
  patientWhere,
  referencesOf,
  runDocumentQuery,
  WORD_ONLY_IN,
  type Json,
} from './documents.spec-group.js';

interface SearchResult {
  status: number;
  headers: Record<string, string>;
  resourceCount: number;
  url?: string;
  entries: Json[];
}

async function search(api: AccountApi, patientId: string, query?: string): Promise<SearchResult> {
  const response = await api.call('GET', `/medical/v1/patient/${patientId}/consolidated/search`, { query: query === undefined ? {} : { query } });
  expect(response.status, response.text).toBe(200);
  let entries: Json[] = [];
  if (response.body.url) {
    const file = await api.host.fetchUrl(response.body.url, { method: 'GET' });
    expect(file.status, file.text).toBe(200);
    const bundle = JSON.parse(file.text);
    expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: response.body.resourceCount });
    entries = bundle.entry;
  }
  return { status: response.status, headers: response.headers, resourceCount: response.body.resourceCount, url: response.body.url, entries };
}

const keyOf = (resource: Json) => `${resource.resourceType}/${resource.id}`;
const matches = (result: SearchResult) => result.entries.filter((e) => e.search.mode === 'match').map((e) => e.resource);

export function defineSearchGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('consolidated search (deprecated)', () => {
    test('each fixture word used below is in that fixture only', () => {
      for (const [file, word] of Object.entries(WORD_ONLY_IN)) {
        for (const other of Object.keys(WORD_ONLY_IN)) {
          expect(fixtureText(other).toLowerCase().includes(word), `${word} in ${other}`).toBe(other === file);
        }
      }
    });

    test('typos, document text, several terms, related resources, the Patient, and a URL valid 60 s', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await patientWhere(api, (files) => files.includes('ccd-1.xml') && files.length >= 2);
        await runDocumentQuery(api, patient.id);
        const documents = await listDocuments(api, patient.id);
        const all = await consolidatedResources(api, patient.id);
        const allKeys = new Set(all.map(keyOf));

        // A misspelt medication (one letter missing) and a misspelt problem (two letters swapped).
        const medication = await search(api, patient.id, 'Albuterl');
        expect(medication.headers.deprecation).toBe('true');
        // The documents list albuterol as medication history (moodCode EVN): a statement of use, not an order.
        expect(matches(medication).some((r) => r.resourceType === 'MedicationStatement' && JSON.stringify(r).toLowerCase().includes('albuterol'))).toBe(true);
        const problem = await search(api, patient.id, 'pnuemonia');
        expect(matches(problem).some((r) => r.resourceType === 'Condition' && r.code?.text === 'Pneumonia')).toBe(true);

        // Whatever matched comes with what it references among the related types, and the Patient, once each.
        for (const result of [medication, problem]) {
          const keys = result.entries.map((e) => keyOf(e.resource));
          expect(new Set(keys).size).toBe(keys.length);
          expect(result.entries.filter((e) => e.resource.resourceType === 'Patient').map((e) => e.resource.id)).toEqual([patient.id]);
          for (const reference of referencesOf(matches(result))) {
            if (RELATED_TYPES.has(reference.split('/')[0]!) && allKeys.has(reference)) expect(keys).toContain(reference);
          }
        }

        // A term from one document finds that document (as its DocumentReference), and not the others.
        for (const file of patient.files) {
          const reference = documents.find((d: Json) => d.content[0].attachment.title.endsWith(`_${file}`));
          const found = matches(await search(api, patient.id, WORD_ONLY_IN[file]!)).filter((r) => r.resourceType === 'DocumentReference');
          expect(found.map((r) => r.id)).toEqual([reference.id]);
        }

        // Several terms: every one must match, so the results narrow.
        const one = await search(api, patient.id, 'pneumonia');
        const two = await search(api, patient.id, 'PNEUMONIA pacemaker');
        const oneKeys = new Set(matches(one).map(keyOf));
        expect(matches(two).length).toBeGreaterThan(0);
        expect(matches(two).length).toBeLessThan(matches(one).length);
        expect(matches(two).every((r) => oneKeys.has(keyOf(r)))).toBe(true);

        // Nothing matches: no URL, count 0.
        expect(await search(api, patient.id, 'xylophone')).toMatchObject({ resourceCount: 0, url: undefined, entries: [] });
        expect(await search(api, patient.id, 'pneumonia xylophone')).toMatchObject({ resourceCount: 0, url: undefined });

        // No query: everything.
        const everything = await search(api, patient.id);
        expect(new Set(everything.entries.map((e) => keyOf(e.resource)))).toEqual(allKeys);

        host.clock.advance(60_000);
        expect((await host.fetchUrl(everything.url!, { method: 'GET' })).status).toBe(410);
        const other = await documentsAccount(host, 'Other Health');
        expect((await other.call('GET', `/medical/v1/patient/${patient.id}/consolidated/search`, { query: { query: 'pneumonia' } })).status).toBe(404);
      });
    });

    test('the index follows new documents as they are converted', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await createPatient(api);
        const word = WORD_ONLY_IN['procedure-note.xml']!;
        expect(await search(api, patient.id, word)).toMatchObject({ resourceCount: 0 });
        const created = await api.call('POST', '/medical/v1/document/upload', {
          query: { patientId: patient.id },
          body: { description: 'Colonoscopy report', content: [{ attachment: { contentType: 'application/xml', title: 'procedure.xml' } }] },
        });
        expect(created.status, created.text).toBe(200);
        await host.fetchUrl(created.body.uploadUrl, { method: 'PUT', contentType: 'application/xml', body: fixtureText('procedure-note.xml') });
        // Before conversion the document's own text is searchable already; its resources are not there yet.
        expect(matches(await search(api, patient.id, word)).map(keyOf)).toEqual([`DocumentReference/${created.body.documentReferenceId}`]);
        expect(matches(await search(api, patient.id, 'appendicitis')).map((r) => r.resourceType)).toEqual(['DocumentReference']);
        await host.settle();
        const after = await search(api, patient.id, 'appendicitis');
        expect(matches(after).some((r) => r.resourceType === 'Condition' && r.code?.text === 'Appendicitis')).toBe(true);
        expect(matches(await search(api, patient.id, 'Colonoscopy report')).map(keyOf)).toContain(`DocumentReference/${created.body.documentReferenceId}`);
      });
    });
  });
}
