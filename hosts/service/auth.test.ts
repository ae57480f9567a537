import { afterEach, describe, expect, test } from 'vitest';
import type { RouteDefinition } from '../../core/api/router.js';
import { makeKoaDriver } from '../../spec/support/koa-driver.js';
import type { HostDriver } from '../../spec/support/driver.js';
import { expectProblem, SAMPLE_ADDRESS, VALID_NPI } from '../../spec/support/http-testing.js';

type Driver = HostDriver & Awaited<ReturnType<typeof makeKoaDriver>>;

let drivers: Driver[] = [];
afterEach(async () => {
  await Promise.all(drivers.map((driver) => driver.close()));
  drivers = [];
});

async function service(): Promise<Driver> {
  const driver = await makeKoaDriver();
  drivers.push(driver);
  return driver;
}

const CSV = 'firstName,lastName,dob,gender,addressLine1,city,state,zip\nAnn,Lee,1970-01-01,F,1 Main St,Springfield,IL,62701\n';
const PATIENT = { firstName: 'Sam', lastName: 'Sample', dob: '1980-01-01', genderAtBirth: 'F', address: [SAMPLE_ADDRESS] };
const FACILITY = { name: 'Sample Facility', npi: VALID_NPI, address: SAMPLE_ADDRESS };
const ALICE_PATIENT = { ...PATIENT, firstName: 'Alice-Only-Name' };
const ALICE_FACILITY = { ...FACILITY, name: 'Alice-Only-Facility' };

/** A valid body per route that takes one, so a refusal is about the account, not about the input. */
const SAMPLE_BODIES: Record<string, unknown> = {
  'POST /medical/v1/organization': { name: 'Org', type: 'ambulatory', location: SAMPLE_ADDRESS },
  'PUT /medical/v1/organization/:id': { name: 'Org', type: 'ambulatory', location: SAMPLE_ADDRESS },
  'POST /medical/v1/facility': FACILITY,
  'PUT /medical/v1/facility/:id': FACILITY,
  'POST /medical/v1/cohort': { name: 'Cohort' },
  'PUT /medical/v1/cohort/:id': { name: 'Cohort' },
  'POST /medical/v1/patient': PATIENT,
  'PUT /medical/v1/patient/:id': PATIENT,
  'POST /settings': { webhookUrl: 'http://127.0.0.1:9/hook' },
};

interface AliceData {
  apiKey: string;
  accountId: string;
  organizationId: string;
  facilityId: string;
  cohortId: string;
  patientId: string;
  requestId: string;
  uploadUrl: string;
}

async function seedAlice(driver: Driver): Promise<AliceData> {
  const { apiKey, accountId } = await driver.createAccount('Alice Clinic');
  const call = async (method: 'POST', path: string, body?: unknown, query?: Record<string, string>) => {
    const response = await driver.call({ method, path, apiKey, body, query });
    expect(response.status, `${method} ${path}: ${response.text}`).toBeLessThan(300);
    return response.body;
  };
  const organization = await call('POST', '/medical/v1/organization', SAMPLE_BODIES['POST /medical/v1/organization']);
  const facility = await call('POST', '/medical/v1/facility', ALICE_FACILITY);
  const cohort = await call('POST', '/medical/v1/cohort', { name: 'Alice-Only-Cohort' });
  const patient = await call('POST', '/medical/v1/patient', ALICE_PATIENT);
  const bulk = await call('POST', '/medical/v1/patient/bulk');
  return {
    apiKey,
    accountId,
    organizationId: organization.id,
    facilityId: facility.id,
    cohortId: cohort.id,
    patientId: patient.id,
    requestId: bulk.requestId,
    uploadUrl: bulk.uploadUrl,
  };
}

/** An id no account has, for path parameters this test has no record for. */
const UNKNOWN_ID = '00000000-0000-7000-8000-00000000dead';

/** The route's path with Alice's ids in it (an unknown id for parameters naming records she has none of). */
function pathWithIds(route: RouteDefinition, alice: AliceData): string {
  return route.path.replace(/:([A-Za-z]+)/g, (_match, name: string) => {
    if (name === 'requestId') return alice.requestId;
    if (name !== 'id') return UNKNOWN_ID;
    if (route.path.startsWith('/medical/v1/facility/')) return alice.facilityId;
    if (route.path.startsWith('/medical/v1/cohort/')) return alice.cohortId;
    if (route.path.startsWith('/medical/v1/organization/')) return alice.organizationId;
    if (route.path.startsWith('/medical/v1/patient/')) return alice.patientId;
    return UNKNOWN_ID;
  });
}

/** Whether the route names a record: by a path parameter, or by a facilityId/patientId query parameter. */
function namesRecord(route: RouteDefinition): boolean {
  if (route.path.includes(':')) return true;
  const shape = (route.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
  return 'facilityId' in shape || 'patientId' in shape;
}

describe('authentication on every route, over HTTP', () => {
  test('no key or an unknown key: 401 problem on every route that takes a key; signed routes without a signature: 403', async () => {
    const driver = await service();
    const alice = await seedAlice(driver);
    const routes = driver.service.handler.routes;
    expect(routes.length).toBeGreaterThan(20);
    for (const route of routes) {
      const path = pathWithIds(route, alice);
      const body = SAMPLE_BODIES[`${route.method} ${route.path}`];
      const init = (apiKey?: string): RequestInit => ({
        method: route.method,
        headers: { ...(apiKey ? { 'x-api-key': apiKey } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const label = `${route.method} ${route.path}`;
      if (route.auth === 'apiKey' || route.auth === 'signedAndApiKey') {
        for (const apiKey of [undefined, 'cb_not-a-real-key', `${alice.apiKey}x`, alice.apiKey.toUpperCase()]) {
          const response = await fetch(`${driver.service.url}${path}`, init(apiKey));
          expect(response.status, `${label} with ${apiKey === undefined ? 'no key' : 'a wrong key'}`).toBe(401);
          await expectProblem(response, 401, 'UNAUTHORIZED');
        }
      } else if (route.auth === 'signed') {
        const response = await fetch(`${driver.service.url}${path}`, init(alice.apiKey));
        await expectProblem(response, 403, 'SIGNATURE_INVALID');
      } else {
        throw new Error(`auth test: ${label} has auth "${route.auth}": decide what it should answer`);
      }
    }
  });

  test("another account's key: 404 for every route naming Alice's records, never her data; lists show only one's own", async () => {
    const driver = await service();
    const alice = await seedAlice(driver);
    const bob = await driver.createAccount('Bob Clinic');
    await driver.call({ method: 'POST', path: '/medical/v1/facility', apiKey: bob.apiKey, body: { ...FACILITY, name: 'Bob facility' } });
    const aliceIds = [alice.organizationId, alice.facilityId, alice.cohortId, alice.patientId, alice.requestId];
    // Query parameters that name Alice's records, for the routes that take them.
    const query = { facilityId: alice.facilityId, patientId: alice.patientId, hieOptOut: 'true' };

    let notFound = 0;
    for (const route of driver.service.handler.routes) {
      if (route.auth !== 'apiKey') continue;
      const label = `${route.method} ${route.path}`;
      const body = SAMPLE_BODIES[label];
      const path = pathWithIds(route, alice);
      const asBob = await driver.call({ method: route.method, path, apiKey: bob.apiKey, query, ...(body !== undefined ? { body } : {}) });
      for (const secret of [...aliceIds, 'Alice']) expect(asBob.text, `${label} leaked ${secret}`).not.toContain(secret);

      // Every route of the wire contract is built: none answers 501, but the SDK calls declared not served.
      if (route.tag === 'Not served') {
        expect(asBob.status, label).toBe(501);
        continue;
      }
      expect(asBob.status, label).not.toBe(501);
      if (namesRecord(route)) {
        // A route this test has no sample input for may refuse the input before any lookup: that reveals nothing either.
        if (body === undefined && asBob.status === 400 && route.method !== 'GET' && route.method !== 'DELETE') continue;
        expect(asBob.status, `${label}: ${asBob.text}`).toBe(404);
        expect(asBob.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(asBob.body).toMatchObject({ status: 404, code: expect.stringMatching(/(^|_)NOT_FOUND$/) });
        notFound++;
      } else {
        // Bob's own lists and creations, or his own input refused: anything but a server error.
        expect([200, 201, 204, 400, 404], `${label}: ${asBob.text}`).toContain(asBob.status);
      }
    }
    expect(notFound).toBeGreaterThanOrEqual(15);

    // Alice's upload URL with Bob's key, and nothing of Alice's changed.
    const stolen = await fetch(alice.uploadUrl, { method: 'PUT', headers: { 'x-api-key': bob.apiKey, 'content-type': 'text/csv' }, body: CSV });
    await expectProblem(stolen, 404);
    const asAlice = (path: string) => driver.call({ method: 'GET', path, apiKey: alice.apiKey });
    expect((await asAlice(`/medical/v1/facility/${alice.facilityId}`)).body.name).toBe('Alice-Only-Facility');
    expect((await asAlice(`/medical/v1/cohort/${alice.cohortId}`)).status).toBe(200);
    expect((await asAlice(`/medical/v1/patient/${alice.patientId}`)).body).toMatchObject({ firstName: 'Alice-Only-Name', hieOptOut: false });
    expect((await asAlice(`/medical/v1/patient/bulk/${alice.requestId}`)).body.status).toBe('waiting');
  });
});

describe('pre-signed URLs over HTTP', () => {
  test('upload URL: any change to path, account, expiry or signature is 403; GET on it is 405; expired 410; reused 409', async () => {
    const driver = await service();
    const alice = await seedAlice(driver);
    const bob = await driver.createAccount('Bob Clinic');
    const put = (url: string | URL, apiKey = alice.apiKey) =>
      fetch(url, { method: 'PUT', headers: { 'x-api-key': apiKey, 'content-type': 'text/csv' }, body: CSV });
    const original = new URL(alice.uploadUrl);
    expect(original.origin).toBe(driver.service.url);
    const variant = (change: (url: URL) => void) => {
      const url = new URL(original);
      change(url);
      return url;
    };
    const second = await driver.call({ method: 'POST', path: '/medical/v1/patient/bulk', apiKey: alice.apiKey });
    const otherPath = new URL(second.body.uploadUrl).pathname;
    const sig = original.searchParams.get('sig')!;

    const forgeries: [string, URL, string?][] = [
      ['another request path', variant((u) => (u.pathname = otherPath))],
      ['account swapped to Bob', variant((u) => u.searchParams.set('acct', bob.accountId))],
      ['account swapped to Bob, with his key', variant((u) => u.searchParams.set('acct', bob.accountId)), bob.apiKey],
      ['later expiry', variant((u) => u.searchParams.set('exp', String(Number(u.searchParams.get('exp')) + 60)))],
      ['one signature character changed', variant((u) => u.searchParams.set('sig', (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1)))],
      ['signature repeated', variant((u) => u.searchParams.append('sig', sig))],
      ['no signature', variant((u) => (u.search = ''))],
    ];
    for (const [what, url, apiKey] of forgeries) {
      const response = await put(url, apiKey);
      expect(response.status, what).toBe(403);
      await expectProblem(response, 403, 'SIGNATURE_INVALID');
    }
    await expectProblem(await fetch(original, { method: 'GET', headers: { 'x-api-key': alice.apiKey } }), 405, 'METHOD_NOT_ALLOWED');
    expect(((await driver.call({ method: 'GET', path: `/medical/v1/patient/bulk/${alice.requestId}`, apiKey: alice.apiKey })).body).status).toBe('waiting');

    expect((await put(original)).status).toBe(200);
    await expectProblem(await put(original), 409, 'UPLOAD_URL_USED');

    driver.clock.advance(10 * 60_000);
    await expectProblem(await put(second.body.uploadUrl), 410, 'UPLOAD_URL_EXPIRED');
  });

  test('result URL: works without a key until 600 s, then 410; tampering is 403; the status hands out a fresh one', async () => {
    const driver = await service();
    const alice = await seedAlice(driver);
    expect((await fetch(alice.uploadUrl, { method: 'PUT', headers: { 'x-api-key': alice.apiKey, 'content-type': 'text/csv' }, body: CSV })).status).toBe(200);
    await driver.settle();
    const status = async () => (await driver.call({ method: 'GET', path: `/medical/v1/patient/bulk/${alice.requestId}`, apiKey: alice.apiKey })).body;
    const { result } = await status();
    const download = await fetch(result);
    expect(download.status).toBe(200);
    expect(await download.text()).toContain('succeeded');

    const tampered = new URL(result);
    tampered.searchParams.set('exp', String(Number(tampered.searchParams.get('exp')) + 600));
    await expectProblem(await fetch(tampered), 403, 'SIGNATURE_INVALID');
    const asPut = await fetch(result, { method: 'PUT', headers: { 'x-api-key': alice.apiKey, 'content-type': 'text/csv' }, body: CSV });
    await expectProblem(asPut, 405, 'METHOD_NOT_ALLOWED');

    driver.clock.advance(600_000);
    await expectProblem(await fetch(result), 410, 'URL_EXPIRED');
    const fresh = (await status()).result;
    expect(fresh).not.toBe(result);
    expect((await fetch(fresh)).status).toBe(200);
  });
});
