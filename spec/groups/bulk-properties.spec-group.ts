import fc from 'fast-check';
import { expect } from 'vitest';
import { brokenRow, columnsOf, layOut, toCsvText, validRow, type CellMap } from '../arbitraries/rows.js';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi } from '../support/api.js';
import type { HostDriver } from '../support/driver.js';

/** Rows may not name cohorts or facilities the account does not have: generated ids are random. */
function withoutReferences(cells: CellMap): CellMap {
  return Object.fromEntries(Object.entries(cells).filter(([column]) => !column.startsWith('cohort-') && column !== 'facilityId'));
}

function fileOf(rows: readonly CellMap[]): { header: string[]; rows: string[][]; text: string } {
  const header = columnsOf(rows);
  const laid = layOut(header, rows);
  return { header, rows: laid, text: toCsvText({ header, rows: laid }, { eol: '\r\n' }) };
}

/** Dates generated relative to the host's clock, so "not in the future" means the same on both sides. */
function todayOf(host: HostDriver): string {
  return host.clock.now().toISOString().slice(0, 10);
}

async function freshAccount(host: HostDriver): Promise<AccountApi> {
  const api = await AccountApi.create(host, 'Property Clinic');
  await api.createFacility();
  return api;
}

export function defineBulkPropertiesGroup({ describe, test, makeHost, numRuns = 15 }: HostSpecOptions): void {
  describe('bulk patient create: properties', () => {
    test('property: generated valid rows are all accepted and round-trip through the result CSV', async () => {
      await withHost(makeHost, async (host) => {
        await fc.assert(
          fc.asyncProperty(fc.array(validRow({ today: todayOf(host) }), { minLength: 1, maxLength: 12 }), async (generated) => {
            const api = await freshAccount(host);
            const file = fileOf(generated.map((g) => withoutReferences(g.cells)));
            const status = await api.importCsv(file.text);
            expect(status).toMatchObject({ status: 'completed', total: generated.length, succeeded: generated.length, failed: 0 });
            const result = await api.resultRows(status);
            expect(result[0]).toEqual([...file.header, 'metriportId', 'status', 'reason']);
            result.slice(1).forEach((row, i) => {
              expect(row.slice(0, file.header.length)).toEqual(file.rows[i]);
              expect(row.slice(-2)).toEqual(['succeeded', '']);
              expect(row.at(-3)).toMatch(/^[0-9a-f-]{36}$/);
            });
          }),
          { numRuns },
        );
      });
    });

    test('property: one broken rule fails that row only, with a reason naming the field and never its value', async () => {
      await withHost(makeHost, async (host) => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(validRow({ today: todayOf(host) }), { minLength: 0, maxLength: 4 }),
            brokenRow({ today: todayOf(host) }).filter((b) => b.columns.every((c) => !c.startsWith('cohort-') && c !== 'facilityId')),
            fc.nat(),
            async (valid, broken, at) => {
              const api = await freshAccount(host);
              const rows = valid.map((g) => withoutReferences(g.cells));
              const position = at % (rows.length + 1);
              rows.splice(position, 0, withoutReferences(broken.cells));
              const status = await api.importCsv(fileOf(rows).text);
              expect(status).toMatchObject({ status: 'completed', succeeded: rows.length - 1, failed: 1 });
              const result = await api.resultRows(status);
              result.slice(1).forEach((row, i) => {
                expect(row.at(-2)).toBe(i === position ? 'failed' : 'succeeded');
              });
              const reason = result[position + 1]!.at(-1)!;
              for (const column of broken.columns) expect(reason).toContain(`${column}:`);
              if (broken.value && broken.value.length > 3) expect(reason).not.toContain(broken.value);
            },
          ),
          { numRuns },
        );
      });
    });

    test('property: matching never merges people differing in dob, gender or every zip; re-import creates nothing new', async () => {
      await withHost(makeHost, async (host) => {
        const person = fc.record({
          firstName: fc.constantFrom('Ana', 'José', 'Li'),
          lastName: fc.constantFrom('García', 'Nguyen'),
          dob: fc.constantFrom('1980-01-01', '1981-02-02'),
          gender: fc.constantFrom('F', 'M'),
          zip: fc.constantFrom('10001', '62701'),
        });
        await fc.assert(
          fc.asyncProperty(fc.array(person, { minLength: 1, maxLength: 8 }), async (people) => {
            const api = await freshAccount(host);
            const rows = people.map((p) => ({ firstName: p.firstName, lastName: p.lastName, dob: p.dob, gender: p.gender, 'addressLine1-1': '1 Main St', 'city-1': 'Springfield', 'state-1': 'IL', 'zip-1': p.zip }));
            const text = fileOf(rows).text;
            const status = await api.importCsv(text);
            expect(status.failed).toBe(0);
            // With one zip per row, "same person" is equality of the folded tuple: the expected count is exact.
            const distinct = new Set(people.map((p) => [p.firstName, p.lastName, p.dob, p.gender, p.zip].join('|')));
            const patients = await api.listAllPatients();
            expect(patients).toHaveLength(distinct.size);
            await api.importCsv(text);
            expect(await api.listAllPatients()).toHaveLength(distinct.size);
          }),
          { numRuns },
        );
      });
    });
  });
}
