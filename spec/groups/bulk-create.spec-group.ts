import { expect } from 'vitest';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, csvOf, HEADER, personRow } from '../support/api.js';

const TEN_MINUTES = 10 * 60_000;

export function defineBulkCreateGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('bulk patient create', () => {
    test('start -> upload -> completed, with two webhooks and a result CSV', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const facility = await api.createFacility();
        const started = await api.startBulk();
        expect(started.status, started.text).toBe(200);
        expect(started.body).toMatchObject({ status: 'waiting', facilityId: facility.id, params: { dryRun: false } });
        expect(started.body.uploadUrl).toMatch(/^https?:\/\/.+\/upload\?/);

        const csv = csvOf([`${personRow(1)},blue`, `${personRow(2, { zip: '123' })},red`, personRow(3)], `${HEADER},favouriteColour`);
        const uploaded = await api.upload(started.body.uploadUrl, csv);
        expect(uploaded.status, uploaded.text).toBe(200);
        expect(uploaded.body).toMatchObject({ status: 'processing', total: 3 });
        await host.settle();

        const status = (await api.bulkStatus(started.body.requestId)).body;
        expect(status).toMatchObject({ status: 'completed', total: 3, processed: 3, succeeded: 2, failed: 1, created: 2, updated: 0 });
        // A column the importer does not know is kept in the result and named, never silently dropped.
        expect(status.ignoredColumns).toEqual(['favouriteColour']);

        const messages = (await api.webhooks()).filter((m) => m.meta.type === 'medical.bulk-patient-create');
        expect(messages.map((m) => m.bulkPatientCreate.status)).toEqual(['processing', 'completed']);
        for (const message of messages) {
          expect(message.meta).toMatchObject({ requestId: started.body.requestId, type: 'medical.bulk-patient-create' });
          expect(new Date(message.meta.when).toISOString()).toBe(message.meta.when);
          expect(message.bulkPatientCreate.requestId).toBe(started.body.requestId);
        }
        const completed = messages[1]!.bulkPatientCreate;
        expect(completed.result).toMatch(/^https?:\/\//);
        expect(completed).toMatchObject({ created: 2, updated: 0 });
        expect(messages[0]!.bulkPatientCreate).not.toHaveProperty('created');

        const rows = await api.resultRows({ ...status, result: completed.result });
        expect(rows[0]).toEqual([...HEADER.split(','), 'favouriteColour', 'metriportId', 'status', 'reason']);
        expect(rows).toHaveLength(4);
        const patients = await api.listAllPatients();
        expect(patients).toHaveLength(2);
        expect(rows[1]!.slice(-3)).toEqual([patients[0]!.id, 'succeeded', '']);
        expect(rows[2]!.slice(-3, -1)).toEqual(['', 'failed']);
        expect(rows[2]!.at(-1)).toMatch(/^zip-1: /);
        expect(rows[3]!.slice(-2)).toEqual(['succeeded', '']);
      });
    });

    test("the account's imports are listed newest first with their outcome; another account lists none of them", async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const other = await AccountApi.create(host, 'Other Clinic');
        await other.createFacility();
        expect((await api.call('GET', '/medical/v1/patient/bulk')).body).toEqual({ requests: [] });
        const first = await api.importCsv(csvOf([personRow(1), personRow(2, { zip: '123' })]));
        host.clock.advance(1_000);
        const dry = await api.importCsv(csvOf([personRow(3)]), { dryRun: true });
        host.clock.advance(1_000);
        const waiting = (await api.startBulk()).body;

        const listed = await api.call('GET', '/medical/v1/patient/bulk');
        expect(listed.status, listed.text).toBe(200);
        expect(listed.body.requests.map((r: { requestId: string }) => r.requestId)).toEqual([waiting.requestId, dry.requestId, first.requestId]);
        expect(listed.body.requests[0]).toMatchObject({ status: 'waiting', dryRun: false });
        expect(listed.body.requests[1]).toMatchObject({ status: 'completed', dryRun: true, created: 1, failed: 0 });
        expect(listed.body.requests[2]).toMatchObject({ status: 'completed', dryRun: false, succeeded: 1, failed: 1, created: 1 });
        expect(listed.body.requests[2].result).toMatch(/^https?:\/\//);
        expect((await api.call('GET', '/medical/v1/patient/bulk', { query: { limit: '1' } })).body.requests).toHaveLength(1);
        // Past its upload window the waiting one reads as expired, as its own status says.
        host.clock.advance(TEN_MINUTES + 1);
        expect((await api.call('GET', '/medical/v1/patient/bulk')).body.requests[0]).toMatchObject({ requestId: waiting.requestId, status: 'expired' });

        expect((await other.call('GET', '/medical/v1/patient/bulk')).body).toEqual({ requests: [] });
        const refused = await api.call('GET', '/medical/v1/patient/bulk', { query: { limit: '0' } });
        expect(refused.status).toBe(400);
        expect(refused.body.code).toBe('VALIDATION_FAILED');
      });
    });

    test('re-importing the same file creates nothing new and updates each patient once; the status counts created and updated', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const csv = csvOf([personRow(1), personRow(2), personRow(3)]);
        const first = await api.importCsv(csv);
        expect(first).toMatchObject({ status: 'completed', succeeded: 3, failed: 0, created: 3, updated: 0 });
        const firstRows = await api.resultRows(first);
        expect(await api.listAllPatients()).toHaveLength(3);

        const second = await api.importCsv(csv);
        expect(second).toMatchObject({ succeeded: 3, failed: 0, created: 0, updated: 3 });
        const secondRows = await api.resultRows(second);
        expect(secondRows.slice(1).map((r) => r.at(-3))).toEqual(firstRows.slice(1).map((r) => r.at(-3)));
        expect(await api.listAllPatients()).toHaveLength(3);
        const updatedHook = (await api.webhooks()).filter((m) => m.bulkPatientCreate?.requestId === second.requestId && m.bulkPatientCreate.status === 'completed');
        expect(updatedHook.map((m) => m.bulkPatientCreate)).toEqual([expect.objectContaining({ created: 0, updated: 3 })]);
      });
    });

    test('the same person twice in one file: the later row fails naming the earlier one, whose externalId and email stay', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        // Row 2 and row 4 are one person under two externalIds; only row 2 gives an email.
        const again = personRow(3, { externalId: 'emr-3-b' }).replace('p3@example.com', '');
        const csv = csvOf([personRow(1), personRow(3, { externalId: 'emr-3-a' }), personRow(2), again]);
        const status = await api.importCsv(csv);
        expect(status).toMatchObject({ status: 'completed', succeeded: 3, failed: 1, created: 3, updated: 0 });
        const rows = await api.resultRows(status);
        expect(rows[4]!.slice(-3, -1)).toEqual(['', 'failed']);
        expect(rows[4]!.at(-1)).toMatch(/^the same person as row 2 of this file/);
        // The reason names no value of either row.
        expect(rows[4]!.at(-1)).not.toMatch(/Jane|Doe3|1980|emr-3/);

        const kept = await api.call('GET', '/medical/v1/patient/external-id', { query: { externalId: 'emr-3-a' } });
        expect(kept.status, kept.text).toBe(200);
        expect(kept.body.id).toBe(rows[2]!.at(-3));
        expect(kept.body.contact).toEqual([expect.objectContaining({ email: 'p3@example.com' })]);
        expect((await api.call('GET', '/medical/v1/patient/external-id', { query: { externalId: 'emr-3-b' } })).status).toBe(404);
        expect(await api.listAllPatients()).toHaveLength(3);

        // A dry run of the same file tells the same story.
        const dry = await api.importCsv(csv, { dryRun: true });
        expect(dry).toMatchObject({ succeeded: 3, failed: 1, created: 0, updated: 3 });
        expect((await api.resultRows(dry))[4]!.at(-1)).toMatch(/^the same person as row 2 of this file/);
      });
    });

    test('a value beyond the tenth address group or phone fails its row, naming the column and the limit; unknown columns are listed', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const header = `${HEADER},addressLine1-11,city-11,state-11,zip-11,Phone-12,notes`;
        const csv = csvOf(
          [
            `${personRow(1)},9 Far Rd,Springfield,IL,62702,,seen`,
            `${personRow(2)},,,,,2175550199,`,
            `${personRow(3)},,,,,,`,
          ],
          header,
        );
        const status = await api.importCsv(csv);
        expect(status).toMatchObject({ status: 'completed', succeeded: 1, failed: 2, created: 1, updated: 0, ignoredColumns: ['notes'] });
        const rows = await api.resultRows(status);
        expect(rows[1]!.at(-2)).toBe('failed');
        expect(rows[1]!.at(-1)).toMatch(/^addressLine1-11: .*10 address/);
        expect(rows[2]!.at(-2)).toBe('failed');
        expect(rows[2]!.at(-1)).toMatch(/^phone-12: .*phone-10/);
        expect(rows[3]!.slice(-2)).toEqual(['succeeded', '']);
        expect(await api.listAllPatients()).toHaveLength(1);
      });
    });

    test('names differing in a vowel sign are different people; a full-width name is the same person', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        // Rām, then Ramā and Romī: the same consonants, dob, gender and zip.
        const person = (externalId: string, firstName: string, lastName = 'शर्मा') =>
          personRow(1, { externalId, firstName, lastName, dob: '1990-04-02', gender: 'F', zip: '10001', hieOptOut: 'true' });
        const first = await api.importCsv(csvOf([person('ram-1', 'राम')]));
        expect(first).toMatchObject({ status: 'completed', succeeded: 1, failed: 0 });
        const ram = (await api.resultRows(first))[1]!.at(-3)!;

        const second = await api.importCsv(csvOf([person('rama-1', 'रमा'), person('romi-1', 'रोमी')]));
        expect(second).toMatchObject({ status: 'completed', succeeded: 2, failed: 0 });
        const ids = (await api.resultRows(second)).slice(1).map((row) => row.at(-3));
        expect(new Set([ram, ...ids]).size).toBe(3);
        expect(await api.listAllPatients()).toHaveLength(3);
        const byExternalId = await api.call('GET', '/medical/v1/patient/external-id', { query: { externalId: 'ram-1' } });
        expect(byExternalId.status, byExternalId.text).toBe(200);
        expect(byExternalId.body).toMatchObject({ id: ram, firstName: 'राम', lastName: 'शर्मा', externalId: 'ram-1' });

        const latin = await api.importCsv(csvOf([person('jane-1', 'Jane', 'Doe')]));
        const fullWidth = await api.importCsv(csvOf([person('jane-1', 'Ｊａｎｅ', 'Ｄｏｅ')]));
        expect(fullWidth).toMatchObject({ succeeded: 1, failed: 0 });
        expect((await api.resultRows(fullWidth))[1]!.at(-3)).toBe((await api.resultRows(latin))[1]!.at(-3));
        expect(await api.listAllPatients()).toHaveLength(4);
      });
    });

    test('a row matching two existing patients fails with the count, never picking one', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const jane = (zip: string) => ({ firstName: 'Jane', lastName: 'Doe', dob: '1980-01-15', genderAtBirth: 'F', address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip } });
        // Two patients, told apart by where they live; a row living at both addresses is either of them.
        expect((await api.call('POST', '/medical/v1/patient', { body: jane('62702') })).status).toBe(201);
        expect((await api.call('POST', '/medical/v1/patient', { body: jane('62703') })).status).toBe(201);
        const header = 'externalId,firstName,lastName,dob,gender,addressLine1,city,state,zip,addressLine1-2,city-2,state-2,zip-2';
        const status = await api.importCsv(csvOf(['x1,JANE,doe,1980-01-15,F,1 Main St,Springfield,IL,62702,2 Oak St,Springfield,IL,62703'], header));
        expect(status).toMatchObject({ succeeded: 0, failed: 1 });
        expect((await api.resultRows(status))[1]!.at(-1)).toContain('matches 2 existing patients');
      });
    });

    test('dryRun validates every row and creates nothing', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const status = await api.importCsv(csvOf([personRow(1), personRow(2, { dob: '1980-02-30' })]), { dryRun: true });
        expect(status).toMatchObject({ status: 'completed', succeeded: 1, failed: 1 });
        const rows = await api.resultRows(status);
        expect(rows[1]!.slice(-3)).toEqual(['', 'succeeded', '']);
        expect(rows[2]!.at(-1)).toMatch(/^dob: /);
        expect(await api.listAllPatients()).toEqual([]);
      });
    });

    test('facility rules: unknown -> 404, several without facilityId -> 400, none -> 400', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const none = await api.startBulk();
        expect(none.status).toBe(400);
        expect(none.body.code).toBe('FACILITY_REQUIRED');
        const one = await api.createFacility('One');
        expect((await api.startBulk()).body.facilityId).toBe(one.id);
        await api.createFacility('Two');
        const several = await api.startBulk();
        expect(several.status).toBe(400);
        expect(several.body.code).toBe('FACILITY_REQUIRED');
        const unknown = await api.startBulk({ facilityId: '00000000-0000-4000-8000-000000000000' });
        expect(unknown.status).toBe(404);
        expect(unknown.body.code).toBe('FACILITY_NOT_FOUND');
        expect((await api.startBulk({ dryRun: 'perhaps' })).status).toBe(400);
      });
    });

    test('rows may name their own facility and cohorts; unknown ones fail the row', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        const main = await api.createFacility('Main');
        const other = await api.createFacility('Other');
        const cohort = await api.createCohort();
        const header = 'firstName,lastName,dob,gender,addressLine1-1,city-1,state-1,zip-1,facilityId,cohort-1,cohort-2';
        const base = 'Ann,Lee,1970-01-01,F,1 Main St,Springfield,IL,62701';
        const csv = [
          header,
          `${base},${other.id},${cohort.id},`,
          `Bo,Lee,1971-01-01,M,1 Main St,Springfield,IL,62701,,,`,
          `Cy,Lee,1972-01-01,M,1 Main St,Springfield,IL,62701,${'00000000-0000-4000-8000-000000000000'},,`,
          `Di,Lee,1973-01-01,F,1 Main St,Springfield,IL,62701,,${cohort.id},00000000-0000-4000-8000-000000000001`,
        ].join('\r\n');
        const status = await api.importCsv(csv, { facilityId: main.id });
        expect(status).toMatchObject({ succeeded: 2, failed: 2 });
        const rows = await api.resultRows(status);
        expect(rows[3]!.at(-1)).toContain('facilityId');
        expect(rows[4]!.at(-1)).toContain('cohort');
        const patients = await api.listAllPatients();
        expect(patients.find((p) => p.firstName === 'Ann')).toMatchObject({ facilityIds: [other.id], cohortIds: [cohort.id] });
        expect(patients.find((p) => p.firstName === 'Bo')).toMatchObject({ facilityIds: [main.id], cohortIds: [] });
      });
    });

    test('a file that is not CSV fails the request with a reason and a failed webhook; nothing is created', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const cases: [string | Uint8Array, string][] = [
          [new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00, 0xff, 0xfe]), 'CSV_INVALID'],
          ['', 'CSV_INVALID'],
          ['name,age\nBob,4\n', 'CSV_INVALID'],
          [HEADER + '\n', 'CSV_INVALID'],
          [new Uint8Array([...new TextEncoder().encode(HEADER + '\n'), 0xc3, 0x28, 0x0a]), 'CSV_INVALID'],
        ];
        for (const [body, code] of cases) {
          const started = await api.startBulk();
          const uploaded = await api.upload(started.body.uploadUrl, body);
          expect(uploaded.status, uploaded.text).toBe(400);
          expect(uploaded.body.code).toBe(code);
          const status = (await api.bulkStatus(started.body.requestId)).body;
          expect(status.status).toBe('failed');
          expect(status.reason).toBe(uploaded.body.detail);
        }
        await host.settle();
        const failed = (await api.webhooks()).filter((m) => m.bulkPatientCreate?.status === 'failed');
        expect(failed).toHaveLength(cases.length);
        for (const message of failed) expect(message.bulkPatientCreate.reason).toBeTruthy();
        expect(await api.listAllPatients()).toEqual([]);
      });
    });

    test('more than 100,000 rows fails the request and creates nothing', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const row = personRow(1);
        const csv = `${HEADER}\n${`${row}\n`.repeat(100_001)}`;
        const started = await api.startBulk();
        const uploaded = await api.upload(started.body.uploadUrl, csv);
        expect(uploaded.status).toBe(400);
        expect(uploaded.body.code).toBe('CSV_TOO_MANY_ROWS');
        await host.settle();
        expect(await api.listAllPatients()).toEqual([]);
      });
    });

    test('upload URL: single use, signed to its account and path, expires after 10 minutes', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const csv = csvOf([personRow(1)]);
        const started = await api.startBulk();
        const url = new URL(started.body.uploadUrl);

        const tampered = new URL(url);
        tampered.searchParams.set('exp', String(Number(url.searchParams.get('exp')) + 3600));
        expect((await api.upload(tampered.toString(), csv)).body.code).toBe('SIGNATURE_INVALID');
        const unsigned = new URL(url);
        unsigned.search = '';
        expect((await api.upload(unsigned.toString(), csv)).status).toBe(403);
        expect((await api.upload(url.toString(), csv, { apiKey: 'cb_wrong' })).status).toBe(401);
        expect((await api.upload(url.toString(), csv, { contentType: 'application/json' })).status).toBe(415);

        expect((await api.upload(url.toString(), csv)).status).toBe(200);
        const again = await api.upload(url.toString(), csv);
        expect(again.status).toBe(409);
        expect(again.body.code).toBe('UPLOAD_URL_USED');

        const late = await api.startBulk();
        host.clock.advance(TEN_MINUTES);
        await host.settle();
        expect((await api.bulkStatus(late.body.requestId)).body.status).toBe('expired');
        const expired = await api.upload(late.body.uploadUrl, csv);
        expect(expired.status).toBe(410);
        expect(expired.body.code).toBe('UPLOAD_URL_EXPIRED');
      });
    });

    test('real-world mess: BOM, CRLF, quoted commas and newlines, trailing blank lines, any column order and case', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        const csv =
          '\uFEFF Zip ,CITY,State,addressline1,Gender,DOB,LastName,FirstName,Notes\r\n' +
          '62701,Springfield,il,"1 Main St, Apt 2",f,1980-01-15,"O\'Neil, Smith","Mary\nAnn","said ""hi"""\r\n' +
          '10001,New York,NY,2 Broad St,M,1975-12-31,Müller,Jürgen,\r\n' +
          ',,,,,,,,\r\n\r\n\r\n';
        const status = await api.importCsv(csv);
        expect(status).toMatchObject({ status: 'completed', total: 2, succeeded: 2, failed: 0 });
        const rows = await api.resultRows(status);
        expect(rows[0]).toEqual([' Zip ', 'CITY', 'State', 'addressline1', 'Gender', 'DOB', 'LastName', 'FirstName', 'Notes', 'metriportId', 'status', 'reason']);
        expect(rows[1]![3]).toBe('1 Main St, Apt 2');
        expect(rows[1]![8]).toBe('said "hi"');
        const patients = await api.listAllPatients();
        expect(patients.map((p) => p.lastName).sort()).toEqual(['Müller', "O'Neil, Smith"]);
      });
    });

    test('1,000 rows through the host', async () => {
      await withHost(makeHost, async (host) => {
        const api = await AccountApi.create(host);
        await api.createFacility();
        // Opted out, so the test measures the import and not the thousand document queries it would start.
        const rows = Array.from({ length: 1_000 }, (_, i) => personRow(i, { dob: i % 50 === 0 ? 'bad' : '1980-01-15', hieOptOut: 'true' }));
        const status = await api.importCsv(csvOf(rows));
        expect(status).toMatchObject({ status: 'completed', total: 1_000, processed: 1_000, succeeded: 980, failed: 20 });
        expect(await api.listAllPatients()).toHaveLength(980);
        expect(await api.resultRows(status)).toHaveLength(1_001);
      });
    });
  });
}
