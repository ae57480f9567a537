import fc from 'fast-check';
import { expect } from 'vitest';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, csvOf, personRow, SAMPLE_ADDRESS } from '../support/api.js';

export function defineTenancyGroup({ describe, test, makeHost, numRuns = 15 }: HostSpecOptions): void {
  describe('authentication and tenant isolation', () => {
    test('a missing or unknown API key is 401 on every route', async () => {
      await withHost(makeHost, async (host) => {
        for (const apiKey of [undefined, 'cb_not-a-real-key']) {
          for (const [method, path] of [
            ['GET', '/medical/v1/facility'],
            ['POST', '/medical/v1/patient/bulk'],
            ['PUT', '/medical/v1/patient/x/hie-opt-out'],
            ['GET', '/medical/v1/organization'],
          ] as const) {
            const response = await host.call({ method, path, apiKey });
            expect(response.status, `${method} ${path}`).toBe(401);
            expect(response.body.code).toBe('UNAUTHORIZED');
          }
        }
      });
    });

    test('an account rotates its own API key: the new key works at once, the old one stops after the key cache time', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const rotated = await api.call('POST', '/settings/api-key/rotate');
        expect(rotated.status, rotated.text).toBe(200);
        expect(rotated.body.apiKey).toMatch(/^cb_/);
        expect(rotated.body.apiKey).not.toBe(api.apiKey);
        expect(rotated.body.apiKey.startsWith(rotated.body.apiKeyPrefix)).toBe(true);
        const renewed = new AccountApi(host, api.accountId, rotated.body.apiKey);
        expect((await renewed.call('GET', '/medical/v1/facility')).body.facilities).toHaveLength(1);
        // The handler keeps a key that worked for a few seconds; past that the old key is refused everywhere.
        host.clock.advance(60_000);
        const old = await host.call({ method: 'GET', path: '/medical/v1/facility', apiKey: api.apiKey });
        expect(old.status).toBe(401);
        expect(old.body.code).toBe('UNAUTHORIZED');
        expect((await renewed.call('GET', '/medical/v1/facility')).status).toBe(200);
      });
    });

    test("another account's records are 404 on every route, never their data", async () => {
      await withHost(makeHost, async (host) => {
        const alice = await AccountApi.create(host, 'Alice Clinic');
        const bob = await AccountApi.create(host, 'Bob Clinic');
        const facility = await alice.createFacility();
        const cohort = await alice.createCohort();
        const patient = await alice.call('POST', '/medical/v1/patient', {
          body: { firstName: 'A', lastName: 'B', dob: '1990-01-01', genderAtBirth: 'M', address: SAMPLE_ADDRESS },
        });
        const bulk = await alice.startBulk();
        const requestId = bulk.body.requestId;

        const probes: [method: 'GET' | 'PUT' | 'DELETE', path: string, query?: Record<string, string>][] = [
          ['GET', `/medical/v1/facility/${facility.id}`],
          ['PUT', `/medical/v1/facility/${facility.id}`],
          ['DELETE', `/medical/v1/facility/${facility.id}`],
          ['GET', `/medical/v1/cohort/${cohort.id}`],
          ['DELETE', `/medical/v1/cohort/${cohort.id}`],
          ['GET', `/medical/v1/patient/${patient.body.id}`],
          ['DELETE', `/medical/v1/patient/${patient.body.id}`],
          ['PUT', `/medical/v1/patient/${patient.body.id}/hie-opt-out`, { hieOptOut: 'true' }],
          ['GET', `/medical/v1/patient/${patient.body.id}/hie-opt-out`],
          ['GET', `/medical/v1/patient/bulk/${requestId}`],
        ];
        await bob.createFacility('Bob facility');
        for (const [method, path, query] of probes) {
          const body = method === 'PUT' && path.includes('facility') ? { name: 'x', npi: '1234567893', address: SAMPLE_ADDRESS } : undefined;
          const response = await bob.call(method, path, { query, body });
          expect(response.status, `${method} ${path}`).toBe(404);
          expect(response.text).not.toContain('Alice');
        }
        // Starting a bulk create on Alice's facility with Bob's key: the facility does not exist for Bob.
        expect((await bob.startBulk({ facilityId: facility.id })).status).toBe(404);
        // Alice's upload URL with Bob's key.
        const stolen = await bob.upload(bulk.body.uploadUrl, csvOf([personRow(1)]));
        expect(stolen.status).toBe(404);
        expect((await alice.bulkStatus(requestId)).body.status).toBe('waiting');
        // Lists show only one's own.
        expect(await bob.listAllPatients()).toEqual([]);
        expect((await bob.call('GET', '/medical/v1/cohort')).body.cohorts).toEqual([]);
        // Nothing changed for Alice.
        expect((await alice.call('GET', `/medical/v1/patient/${patient.body.id}/hie-opt-out`)).body.hieOptOut).toBe(false);
      });
    });

    test('property: no call with one account key ever sees another account data', async () => {
      await withHost(makeHost, async (host) => {
        const accounts = [await AccountApi.create(host, 'One'), await AccountApi.create(host, 'Two')];
        for (const api of accounts) await api.createFacility();
        // Every patient each account was given, over all runs: a person sent again is answered as before.
        const given: Set<string>[] = [new Set(), new Set()];
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.record({ owner: fc.integer({ min: 0, max: 1 }), lastName: fc.constantFrom('Lee', 'Kim', 'Ng'), zip: fc.constantFrom('10001', '62701') }), {
              minLength: 1,
              maxLength: 6,
            }),
            async (creations) => {
              const owned: string[][] = [[], []];
              for (const { owner, lastName, zip } of creations) {
                const created = await accounts[owner]!.call('POST', '/medical/v1/patient', {
                  body: { firstName: 'Sam', lastName, dob: '1970-05-05', genderAtBirth: 'U', address: { ...SAMPLE_ADDRESS, zip } },
                });
                // One account's patient is never the answer to another's create, however alike the people.
                expect(created.status === 201 ? !given[owner]!.has(created.body.id) : given[owner]!.has(created.body.id), created.text).toBe(true);
                expect(given[1 - owner]!.has(created.body.id)).toBe(false);
                given[owner]!.add(created.body.id);
                owned[owner]!.push(created.body.id);
              }
              for (const viewer of [0, 1]) {
                const other = 1 - viewer;
                const visible = new Set((await accounts[viewer]!.listAllPatients()).map((p) => p.id));
                for (const id of owned[other]!) {
                  expect(visible.has(id)).toBe(false);
                  expect((await accounts[viewer]!.call('GET', `/medical/v1/patient/${id}`)).status).toBe(404);
                }
              }
            },
          ),
          { numRuns },
        );
      });
    });
  });
}
