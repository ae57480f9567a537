import { expect } from 'vitest';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, csvOf, personRow, SAMPLE_ADDRESS } from '../support/api.js';

/** Trials of each race: a write lost once in a few tries shows up in this many. */
const TRIALS = 20;
/** Trials of imports run at once (each imports a few hundred rows twice). */
const IMPORT_TRIALS = 5;

/** People `from`..`to` - 1 as import rows, opted out so the imports start no document queries. */
const rowsOf = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => personRow(from + i, { hieOptOut: 'true' }));

const person = (n: number) => ({ firstName: 'Ana', lastName: `Lee${n}`, dob: '1980-01-02', genderAtBirth: 'F', address: [SAMPLE_ADDRESS] });

/**
 * Writers of one patient at once: every write the service accepted (answered 2xx) is there afterwards.
 * The writes are sent together, many times over, so whatever order the host runs them in, each trial is
 * one more interleaving; no trial may lose one.
 */
export function defineConcurrencyGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('patients written by several callers at once', () => {
    test(`a PUT, an opt-out and two cohort additions sent at once all land (${TRIALS} trials)`, async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const [first, second] = [await api.createCohort('First'), await api.createCohort('Second')];
        const lost = { optOut: 0, cohort: 0, put: 0 };
        for (let trial = 0; trial < TRIALS; trial++) {
          const created = await api.call('POST', '/medical/v1/patient', { body: person(trial) });
          expect(created.status, created.text).toBe(201);
          const id = created.body.id;
          const answers = await Promise.all([
            api.call('PUT', `/medical/v1/patient/${id}`, { body: { ...person(trial), firstName: 'Anna', contact: [{ phone: '2175550100' }] } }),
            api.call('PUT', `/medical/v1/patient/${id}/hie-opt-out`, { query: { hieOptOut: 'true' } }),
            api.call('POST', `/medical/v1/cohort/${first.id}/patient`, { body: { patientIds: [id] } }),
            api.call('POST', `/medical/v1/cohort/${second.id}/patient`, { body: { patientIds: [id] } }),
          ]);
          for (const answer of answers) expect(answer.status, answer.text).toBe(200);
          const after = (await api.call('GET', `/medical/v1/patient/${id}`)).body;
          if (!after.hieOptOut) lost.optOut++;
          if (!(after.cohortIds.includes(first.id) && after.cohortIds.includes(second.id))) lost.cohort++;
          if (after.firstName !== 'Anna' || after.contact.length !== 1) lost.put++;
        }
        expect(lost).toEqual({ optOut: 0, cohort: 0, put: 0 });
      });
    });

    test('a patient is answered with its version as ETag; a PUT or an opt-out with If-Match changes only that version, else 412 PRECONDITION_FAILED', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const created = await api.call('POST', '/medical/v1/patient', { body: person(1) });
        expect(created.status, created.text).toBe(201);
        const id = created.body.id;
        expect(created.headers.etag).toBe(`"${created.body.eTag}"`);
        const read = await api.call('GET', `/medical/v1/patient/${id}`);
        expect(read.headers.etag).toBe(created.headers.etag);
        const path = `/medical/v1/patient/${id}`;
        const put = (ifMatch: string, firstName: string) => api.call('PUT', path, { body: { ...person(1), firstName }, headers: { 'if-match': ifMatch } });

        const changed = await put(read.headers.etag!, 'Anna');
        expect(changed.status, changed.text).toBe(200);
        expect(changed.headers.etag).toBe(`"${changed.body.eTag}"`);
        expect(changed.headers.etag).not.toBe(read.headers.etag);
        for (const stale of [read.headers.etag!, read.body.eTag, `W/${changed.headers.etag}`, '"no-such-version"']) {
          const refused = await put(stale, 'Stale');
          expect(refused.status, stale).toBe(412);
          expect(refused.body).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED', title: 'Precondition Failed' });
        }
        const optOut = `/medical/v1/patient/${id}/hie-opt-out`;
        const refusedOptOut = await api.call('PUT', optOut, { query: { hieOptOut: 'true' }, headers: { 'if-match': read.headers.etag! } });
        expect(refusedOptOut.status).toBe(412);
        expect((await api.call('GET', path)).body).toMatchObject({ firstName: 'Anna', hieOptOut: false, eTag: changed.body.eTag });

        // The current version, bare as the published SDK sends the eTag field, or among others; any (`*`).
        expect((await put(changed.body.eTag, 'Annie')).status).toBe(200);
        const current = (await api.call('GET', path)).headers.etag!;
        const optedOut = await api.call('PUT', optOut, { query: { hieOptOut: 'true' }, headers: { 'if-match': `"old", ${current}` } });
        expect(optedOut.status, optedOut.text).toBe(200);
        expect(optedOut.headers.etag).not.toBe(current);
        expect((await put('*', 'Ann')).status).toBe(200);
        expect((await api.call('GET', path)).body).toMatchObject({ firstName: 'Ann', hieOptOut: true });
        // A missing patient is missing, whatever the condition.
        expect((await api.call('PUT', '/medical/v1/patient/00000000-0000-4000-8000-000000000000', { body: person(1), headers: { 'if-match': '*' } })).status).toBe(404);
      });
    });

    test('a DELETE with If-Match removes only that version, else 412 and the patient stays', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const created = await api.call('POST', '/medical/v1/patient', { body: person(1) });
        const path = `/medical/v1/patient/${created.body.id}`;
        expect((await api.call('PUT', `${path}/hie-opt-out`, { query: { hieOptOut: 'true' } })).status).toBe(200);
        const refused = await api.call('DELETE', path, { headers: { 'if-match': created.headers.etag! } });
        expect(refused.status, refused.text).toBe(412);
        expect(refused.body).toMatchObject({ code: 'PRECONDITION_FAILED' });
        expect((await api.call('GET', path)).status).toBe(200);
        const current = (await api.call('GET', path)).headers.etag!;
        expect((await api.call('DELETE', path, { headers: { 'if-match': current } })).status).toBe(204);
        expect((await api.call('GET', path)).status).toBe(404);
        expect((await api.call('DELETE', path, { headers: { 'if-match': '*' } })).status).toBe(404);
      });
    });

    test('a PUT that would make a patient the same person as another is refused naming it, also when sent at once with the other’s creation', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const ann = await api.call('POST', '/medical/v1/patient', { body: person(1) });
        const bob = await api.call('POST', '/medical/v1/patient', { body: { ...person(2), firstName: 'Bob', genderAtBirth: 'M' } });
        expect([ann.status, bob.status]).toEqual([201, 201]);
        const merged = await api.call('PUT', `/medical/v1/patient/${bob.body.id}`, { body: person(1) });
        expect(merged.status, merged.text).toBe(409);
        expect(merged.body).toMatchObject({ code: 'CONFLICT' });
        expect(merged.body.detail).toContain(ann.body.id);
        expect((await api.call('GET', `/medical/v1/patient/${bob.body.id}`)).body).toMatchObject({ firstName: 'Bob', lastName: 'Lee2' });
        // Its own demographics, changed in a way that keeps it itself, are fine.
        expect((await api.call('PUT', `/medical/v1/patient/${ann.body.id}`, { body: { ...person(1), contact: [{ phone: '2175550100' }] } })).status).toBe(200);

        // A create and a PUT into the same person at once: whichever lands first, one person is one patient.
        for (let trial = 0; trial < TRIALS; trial++) {
          const other = await api.call('POST', '/medical/v1/patient', { body: { ...person(100 + trial), firstName: 'Cy', genderAtBirth: 'M' } });
          const [created, moved] = await Promise.all([
            api.call('POST', '/medical/v1/patient', { body: person(200 + trial) }),
            api.call('PUT', `/medical/v1/patient/${other.body.id}`, { body: person(200 + trial) }),
          ]);
          if (created.status === 201) expect(moved.status, moved.text).toBe(409);
          else expect([created.status, created.body.id, moved.status]).toEqual([200, other.body.id, 200]);
        }
        const patients = await api.listAllPatients();
        // Every person here has a last name of their own (dob and gender are shared or told apart by first name).
        const people = new Set(patients.map((patient) => `${patient.firstName}|${patient.lastName}`));
        expect(people.size).toBe(patients.length);
      });
    });

    test(`the same person created by several requests at once is one patient (${TRIALS} trials)`, async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        for (let trial = 0; trial < TRIALS; trial++) {
          const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => api.call('POST', '/medical/v1/patient', { body: { ...person(trial), externalId: `emr-${trial}-${i}` } })));
          // One created it; the others were answered that patient, unchanged.
          expect(answers.map((answer) => answer.status).sort(), answers.map((answer) => answer.text).join('\n')).toEqual([200, 200, 200, 201]);
          expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1);
          expect(new Set(answers.map((answer) => answer.body.externalId)).size).toBe(1);
        }
        expect(await api.listAllPatients()).toHaveLength(TRIALS);
      });
    });

    test(`imports of overlapping people run at once, and requests creating some of them meanwhile, make one patient per person (${IMPORT_TRIALS} trials)`, async () => {
      for (let trial = 0; trial < IMPORT_TRIALS; trial++) {
        await withHost(makeHost, async (host) => {
          const api = await AccountApi.create(host);
          await api.createFacility();
          // People 0..399 and 200..599 (200 in both), then the same 400 again: a file imported twice at once.
          const files = [csvOf(rowsOf(0, 400)), csvOf(rowsOf(200, 600)), csvOf(rowsOf(0, 400))];
          const started = await Promise.all(files.map(() => api.startBulk()));
          for (const [i, file] of files.entries()) expect((await api.upload(started[i]!.body.uploadUrl, file)).status).toBe(200);
          const settling = host.settle();
          // People of the files, created through the API while the imports run (or before, or after).
          const creates = [3, 250, 599].map((n) => api.call('POST', '/medical/v1/patient', { body: { firstName: `Jane${String.fromCharCode(97 + (n % 26))}`, lastName: `Doe${n}`, dob: '1980-01-15', genderAtBirth: 'F', address: [{ ...SAMPLE_ADDRESS, zip: '62701' }] } }));
          await Promise.all([settling, ...creates]);
          for (const answer of await Promise.all(creates)) expect([200, 201], answer.text).toContain(answer.status);
          await host.settle();
          for (const request of started) expect((await api.bulkStatus(request.body.requestId)).body).toMatchObject({ status: 'completed', failed: 0 });
          const patients = await api.listAllPatients();
          const people = new Set(patients.map((patient) => `${patient.firstName}|${patient.lastName}`));
          expect({ trial, patients: patients.length, people: people.size }).toEqual({ trial, patients: 600, people: 600 });
        });
      }
    });

    test(`PUTs sent at once with the same If-Match: exactly one lands, the others are 412 (${TRIALS} trials)`, async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        for (let trial = 0; trial < TRIALS; trial++) {
          const created = await api.call('POST', '/medical/v1/patient', { body: person(trial) });
          const path = `/medical/v1/patient/${created.body.id}`;
          const answers = await Promise.all(
            ['Ada', 'Bea', 'Cy'].map((firstName) => api.call('PUT', path, { body: { ...person(trial), firstName }, headers: { 'if-match': created.headers.etag! } })),
          );
          expect(answers.map((answer) => answer.status).sort()).toEqual([200, 412, 412]);
          const winner = answers.find((answer) => answer.status === 200)!;
          expect((await api.call('GET', path)).body).toEqual(winner.body);
        }
      });
    });
  });
}
