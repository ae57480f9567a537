import { expect } from 'vitest';
import { Router } from '../../core/api/router.js';
import { apiRoutes } from '../../core/api/routes/index.js';
import type { HostDriver, HostResponse } from './driver.js';

const router = new Router(apiRoutes);

/**
 * Every successful answer the behaviour suite receives is checked against the response schema its route
 * declares (the one the OpenAPI document publishes): the document cannot drift from what hosts send.
 */
export function checkDeclaredResponse(method: string, path: string, response: HostResponse): void {
  const match = router.match(method, path.split('?')[0]!);
  if (match.kind !== 'found') return;
  const declared = match.route.success;
  if (!declared?.schema || response.status !== declared.status) return;
  // The schema is that of the declared media type; a file answered in another of its formats is not JSON.
  const contentType = (response.headers['content-type'] ?? '').split(';')[0]!.trim();
  if (contentType !== '' && contentType !== (declared.mediaType ?? 'application/json')) return;
  const parsed = declared.schema.safeParse(response.body);
  if (!parsed.success) {
    throw new Error(`${method} ${match.route.path} answered ${response.status} with a body its declared response schema refuses: ${parsed.error.message}`);
  }
}

/** A valid NPI (Luhn over 80840 + digits). */
export const VALID_NPI = '1234567893';

export const SAMPLE_ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' };

/** Typed calls over a driver, for one account. Assertions on status live in the tests, not here. */
export class AccountApi {
  constructor(
    readonly host: HostDriver,
    readonly accountId: string,
    readonly apiKey: string,
  ) {}

  static async create(host: HostDriver, name = 'Acme Health'): Promise<AccountApi> {
    const { accountId, apiKey } = await host.createAccount(name);
    return new AccountApi(host, accountId, apiKey);
  }

  call(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    options: { query?: Record<string, string | readonly string[] | undefined>; body?: unknown; jsonText?: string; headers?: Record<string, string> } = {},
  ): Promise<HostResponse> {
    return this.host.call({ method, path, apiKey: this.apiKey, ...options }).then((response) => {
      checkDeclaredResponse(method, path, response);
      return response;
    });
  }

  async createFacility(name = 'Main Clinic'): Promise<{ id: string }> {
    const response = await this.call('POST', '/medical/v1/facility', { body: { name, npi: VALID_NPI, address: SAMPLE_ADDRESS } });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  async createCohort(name = 'Diabetes program'): Promise<{ id: string }> {
    const response = await this.call('POST', '/medical/v1/cohort', { body: { name } });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  startBulk(query: { facilityId?: string; dryRun?: string } = {}): Promise<HostResponse> {
    return this.call('POST', '/medical/v1/patient/bulk', { query });
  }

  upload(uploadUrl: string, csv: string | Uint8Array, options: { apiKey?: string; contentType?: string } = {}): Promise<HostResponse> {
    return this.host.fetchUrl(uploadUrl, { method: 'PUT', apiKey: options.apiKey ?? this.apiKey, contentType: options.contentType ?? 'text/csv', body: csv });
  }

  bulkStatus(requestId: string): Promise<HostResponse> {
    return this.call('GET', `/medical/v1/patient/bulk/${requestId}`);
  }

  /** Start, upload, settle; returns the final status body. */
  async importCsv(csv: string, options: { facilityId?: string; dryRun?: boolean } = {}) {
    const started = await this.startBulk({ facilityId: options.facilityId, dryRun: options.dryRun ? 'true' : undefined });
    expect(started.status, started.text).toBe(200);
    const uploaded = await this.upload(started.body.uploadUrl, csv);
    expect(uploaded.status, uploaded.text).toBe(200);
    await this.host.settle();
    const status = await this.bulkStatus(started.body.requestId);
    expect(status.status, status.text).toBe(200);
    return status.body as BulkStatusBody;
  }

  /** The result CSV of a completed request, parsed into rows of cells. */
  async resultRows(status: BulkStatusBody): Promise<string[][]> {
    expect(status.status).toBe('completed');
    const response = await this.host.fetchUrl(status.result!, { method: 'GET' });
    expect(response.status, response.text).toBe(200);
    const { parse } = await import('csv-parse/sync');
    return parse(response.text, { relax_column_count: true }) as string[][];
  }

  async listAllPatients(): Promise<{ id: string; firstName: string; lastName: string; hieOptOut: boolean; facilityIds: string[]; cohortIds: string[] }[]> {
    const patients = [];
    let cursor: string | undefined;
    do {
      const response = await this.call('GET', '/medical/v1/patient', { query: { count: '500', cursor } });
      expect(response.status, response.text).toBe(200);
      patients.push(...response.body.patients);
      cursor = response.body.meta.nextPage ? new URL(response.body.meta.nextPage).searchParams.get('cursor')! : undefined;
    } while (cursor);
    return patients;
  }

  webhooks() {
    return this.host.webhookMessages(this.accountId);
  }
}

export interface BulkStatusBody {
  requestId: string;
  facilityId: string;
  status: string;
  reason?: string;
  total: number | null;
  processed: number;
  succeeded: number;
  failed: number;
  created: number;
  updated: number;
  ignoredColumns?: string[];
  result?: string;
}

export const HEADER = 'externalId,firstName,lastName,dob,gender,addressLine1,city,state,zip,phone,email,hieOptOut';

/** A small valid file; `rows` are cells after the header above. */
export function csvOf(rows: readonly string[], header = HEADER): string {
  return [header, ...rows].join('\n') + '\n';
}

export function personRow(n: number, overrides: Partial<Record<'externalId' | 'firstName' | 'lastName' | 'dob' | 'gender' | 'zip' | 'hieOptOut', string>> = {}): string {
  const cells = {
    externalId: `ext-${n}`,
    firstName: `Jane${String.fromCharCode(97 + (n % 26))}`,
    lastName: `Doe${n}`,
    dob: '1980-01-15',
    gender: 'F',
    zip: '62701',
    hieOptOut: '',
    ...overrides,
  };
  return [cells.externalId, cells.firstName, cells.lastName, cells.dob, cells.gender, '1 Main St', 'Springfield', 'IL', cells.zip, '2175550100', `p${n}@example.com`, cells.hieOptOut].join(',');
}
