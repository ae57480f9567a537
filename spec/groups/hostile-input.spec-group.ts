import { expect } from 'vitest';
import { MAX_JSON_DEPTH } from '../../core/api/input-text.js';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import type { HostResponse } from '../support/driver.js';
import { AccountApi, SAMPLE_ADDRESS } from '../support/api.js';

const PATIENT = { firstName: 'Ada', lastName: 'Lovelace', dob: '1985-12-10', genderAtBirth: 'F', address: SAMPLE_ADDRESS };

function expectRefused(response: HostResponse, field?: string): void {
  expect(response.status, response.text).toBe(400);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(response.body.code).toBe('VALIDATION_FAILED');
  if (field) expect(response.body.detail).toContain(field);
}

/** The text of a JSON object nested `depth` levels deep (JSON.stringify would need a deep stack to write it). */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth - 1)}{"leaf":"x"}${'}'.repeat(depth - 1)}`;
}

export function defineHostileInputGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('hostile input: a clear 400, never a 500, never a stored value that breaks a later read', () => {
    test('NUL and other control characters in ids and query values are a 400 naming the parameter', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const facility = await api.createFacility();
        for (const id of ['%00', 'a%00b', 'x%0Ay', '%7F']) {
          for (const path of [`/medical/v1/facility/${id}`, `/medical/v1/cohort/${id}`, `/medical/v1/patient/${id}`, `/medical/v1/patient/bulk/${id}`]) {
            expectRefused(await api.call('GET', path), 'path');
          }
          expectRefused(await api.call('PUT', `/medical/v1/cohort/${id}`, { body: { name: 'C' } }), 'path');
        }
        for (const query of [{ patientId: '\u0000' }, { facilityId: '\u0000' }, { cursor: '\u0000' }, { facilityId: `${facility.id}\u0000` }]) {
          const [name] = Object.keys(query);
          expectRefused(await api.call('GET', '/medical/v1/patient', { query }), `query ${name}`);
        }
        expectRefused(await api.call('GET', '/medical/v1/document', { query: { patientId: '\u0000' } }), 'query patientId');
      });
    });

    test('NUL, control characters and lone surrogates in JSON strings are refused and nothing is stored', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const facility = await api.createFacility();
        const cohort = await api.createCohort('Heart program');
        expectRefused(await api.call('PUT', `/medical/v1/cohort/${cohort.id}`, { body: { name: 'C\u0000' } }), 'name');
        expectRefused(await api.call('POST', '/medical/v1/cohort', { body: { name: 'C', description: 'a\u0000b' } }), 'description');
        expectRefused(await api.call('POST', '/medical/v1/cohort', { body: { name: 'bell\u0007' } }), 'name');
        expectRefused(await api.call('POST', '/medical/v1/cohort', { body: { name: 'half \ud800 pair' } }), 'name');
        expectRefused(await api.call('POST', '/medical/v1/facility', { body: { name: 'F\u0000', npi: '1234567893', address: SAMPLE_ADDRESS } }), 'name');
        expectRefused(await api.call('POST', '/medical/v1/patient', { query: { facilityId: facility.id }, body: { ...PATIENT, firstName: 'A\u0000' } }), 'firstName');
        expectRefused(await api.call('POST', '/medical/v1/patient', { query: { facilityId: facility.id }, body: { ...PATIENT, address: [{ ...SAMPLE_ADDRESS, city: '\u0000' }] } }), 'address.0.city');
        // A control character in a field name is refused too, whatever the field.
        expectRefused(await api.call('POST', '/medical/v1/cohort', { body: { name: 'C', ['x\u0000']: 1 } }));

        expect((await api.call('GET', `/medical/v1/cohort/${cohort.id}`)).body.name).toBe('Heart program');
        const cohorts = await api.call('GET', '/medical/v1/cohort');
        expect(cohorts.status).toBe(200);
        expect(JSON.stringify(cohorts.body)).not.toMatch(/\\u0000|\\u0007|\\ud800/);

        // Tabs and line breaks are text, not control characters, in a description.
        const described = await api.call('POST', '/medical/v1/cohort', { body: { name: 'Notes', description: 'line one\nline two\tend' } });
        expect(described.status, described.text).toBe(201);
        expect((await api.call('GET', `/medical/v1/cohort/${described.body.id}`)).body.description).toBe('line one\nline two\tend');

        const patient = await api.call('POST', '/medical/v1/patient', { query: { facilityId: facility.id }, body: PATIENT });
        expect(patient.status, patient.text).toBe(201);
        const upload = await api.call('POST', '/medical/v1/document/upload', { query: { patientId: patient.body.id }, body: { description: 'scan\u0000' } });
        expectRefused(upload, 'description');
      });
    });

    test(`JSON nested deeper than ${MAX_JSON_DEPTH} levels is a 400, however deep`, async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const facility = await api.createFacility();
        const patient = await api.call('POST', '/medical/v1/patient', { query: { facilityId: facility.id }, body: PATIENT });
        for (const depth of [MAX_JSON_DEPTH + 1, 5_000]) {
          const deep = await api.call('POST', '/medical/v1/document/upload', {
            query: { patientId: patient.body.id },
            jsonText: `{"resourceType":"DocumentReference","extension":${nested(depth)}}`,
          });
          expectRefused(deep, 'nested deeper');
          expectRefused(await api.call('POST', '/medical/v1/cohort', { jsonText: `{"name":"C","description":${nested(depth)}}` }));
        }
        const shallow = await api.call('POST', '/medical/v1/document/upload', {
          query: { patientId: patient.body.id },
          jsonText: `{"resourceType":"DocumentReference","extension":${nested(MAX_JSON_DEPTH - 2)}}`,
        });
        expect(shallow.status, shallow.text).toBe(200);
      });
    });

    // A backtracking pattern over these 200,000 characters takes minutes (it took 11-13 s at 64 KB); a scan
    // takes milliseconds. The timeout is far from both: it catches the shape of the cost, not a speed.
    test('a hostile document and file name are stored and indexed in time proportional to their size', { timeout: 60_000 }, async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const facility = await api.createFacility();
        const patient = await api.call('POST', '/medical/v1/patient', { query: { facilityId: facility.id }, body: PATIENT });
        const created = await api.call('POST', '/medical/v1/document/upload', {
          query: { patientId: patient.body.id },
          body: { resourceType: 'DocumentReference', content: [{ attachment: { contentType: 'application/xml', title: `a${'.-'.repeat(100_000)}a` } }] },
        });
        expect(created.status, created.text).toBe(200);
        const put = await host.fetchUrl(created.body.uploadUrl, { method: 'PUT', contentType: 'application/xml', body: '<'.repeat(200_000) });
        expect(put.status, put.text).toBe(200);
        await host.settle();
        const listed = await api.call('GET', '/medical/v1/document', { query: { patientId: patient.body.id } });
        expect(listed.body.documents).toHaveLength(1);
        const search = await api.call('GET', `/medical/v1/patient/${patient.body.id}/consolidated/search`, { query: { query: 'anything' } });
        expect(search.status, search.text).toBe(200);
      });
    });

    test('an attachment contentType that is not a media type is refused; a stored one can always be downloaded', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const facility = await api.createFacility();
        const patient = await api.call('POST', '/medical/v1/patient', { query: { facilityId: facility.id }, body: PATIENT });
        for (const contentType of ['text/plain\r\nX-Injected: 1', 'text/plain\u2028x', 'text/pl\u0100in', 'not a type', 'text/', '/plain']) {
          const created = await api.call('POST', '/medical/v1/document/upload', {
            query: { patientId: patient.body.id },
            body: { resourceType: 'DocumentReference', content: [{ attachment: { contentType } }] },
          });
          expectRefused(created, 'contentType');
        }
        const created = await api.call('POST', '/medical/v1/document/upload', {
          query: { patientId: patient.body.id },
          body: { resourceType: 'DocumentReference', content: [{ attachment: { contentType: 'Text/Plain; charset=utf-8', title: 'note "one".txt' } }] },
        });
        expect(created.status, created.text).toBe(200);
        const put = await host.fetchUrl(created.body.uploadUrl, { method: 'PUT', contentType: 'text/plain', body: 'hello' });
        expect(put.status, put.text).toBe(200);
        await host.settle();
        const listed = await api.call('GET', '/medical/v1/document', { query: { patientId: patient.body.id } });
        const fileName = listed.body.documents[0].content[0].attachment.title;
        const link = await api.call('GET', '/medical/v1/document/download-url', { query: { fileName } });
        expect(link.status, link.text).toBe(200);
        const file = await host.fetchUrl(link.body.url, { method: 'GET' });
        expect(file.status).toBe(200);
        expect(file.headers['content-type']).toMatch(/^text\/plain/);
        expect(file.text).toBe('hello');
      });
    });
  });
}
