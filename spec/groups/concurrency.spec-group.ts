import { expect } from 'vitest';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, SAMPLE_ADDRESS } from '../support/api.js';

/** Trials of each race: a write lost once in a few tries shows up in this many. */
const TRIALS = 20;

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
  });
}
