import type { Account, Address, BulkRequest, BulkRowOutcome, Cohort, ConsolidatedQuery, DocumentQuery, DocumentRecord, Facility, FhirResourceRecord, NetworkQuery, Organization, OutboxMessage, Patient, WebhookEndpoint, WebhookSettings } from '../../../core/domain/types.js';
import type { StoragePort } from '../../../core/ports/storage.port.js';

// ---------------------------------------------------------------------------------------------------------
// Fixtures: every builder gives a complete, valid record; ids and times come from a per-test sequence.

const BASE_TIME = Date.UTC(2024, 0, 1);

/** An instant `seconds` after the fixtures' epoch, ISO as the clock port gives it. */
export const at = (seconds: number): string => new Date(BASE_TIME + seconds * 1000).toISOString();

export function sequence() {
  let next = 0;
  /** UUID-shaped, increasing in generation order, like the ids port. */
  return () => `00000000-0000-7000-8000-${(++next).toString(16).padStart(12, '0')}`;
}

export const ACCOUNT_A = '0a000000-0000-7000-8000-00000000000a';
export const ACCOUNT_B = '0b000000-0000-7000-8000-00000000000b';

export const address = (overrides: Partial<Address> = {}): Address => ({
  addressLine1: '12 Rue de l’Église',
  addressLine2: 'Apt 3',
  city: 'São Paulo',
  state: 'CA',
  zip: '94110',
  country: 'USA',
  ...overrides,
});

export function builders() {
  const id = sequence();
  return {
    id,
    account: (overrides: Partial<Account> = {}): Account => {
      const accountId = overrides.id ?? id();
      return { id: accountId, name: 'Clinic Ñandú', apiKeyHash: `hash-${accountId}`, apiKeyPrefix: 'cb_1234', createdAt: at(0), ...overrides };
    },
    webhookSettings: (accountId: string, overrides: Partial<WebhookSettings> = {}): WebhookSettings => ({
      accountId,
      webhookUrl: 'https://example.com/hook',
      webhookKey: 'whsec_abc',
      webhookEnabled: true,
      webhookStatusDetail: null,
      updatedAt: at(0),
      ...overrides,
    }),
    webhookEndpoint: (accountId: string, overrides: Partial<WebhookEndpoint> = {}): WebhookEndpoint => ({
      id: id(),
      accountId,
      url: 'https://example.com/endpoint/ñ',
      description: 'Conversions to the EHR bridge',
      enabled: true,
      eventTypes: ['medical.document-conversion', 'network-query.*'],
      secret: 'whsec_c2VjcmV0LWJ5dGVzLW9mLWF0LWxlYXN0LTI0',
      statusDetail: null,
      createdAt: at(0),
      updatedAt: at(0),
      ...overrides,
    }),
    organization: (accountId: string, overrides: Partial<Organization> = {}): Organization => ({
      id: id(),
      accountId,
      oid: '2.16.840.1.113883.3.9621.1',
      name: 'Acme Health',
      type: 'healthcare_provider',
      location: address(),
      createdAt: at(0),
      updatedAt: at(0),
      ...overrides,
    }),
    facility: (accountId: string, overrides: Partial<Facility> = {}): Facility => ({
      id: id(),
      accountId,
      oid: '2.16.840.1.113883.3.9621.1.1',
      name: 'Downtown Clinic',
      npi: '1234567893',
      tin: '12-3456789',
      active: true,
      address: address(),
      createdAt: at(0),
      updatedAt: at(0),
      ...overrides,
    }),
    cohort: (accountId: string, overrides: Partial<Cohort> = {}): Cohort => ({
      id: id(),
      accountId,
      name: 'Diabetes',
      description: 'Type 2',
      createdAt: at(0),
      updatedAt: at(0),
      ...overrides,
    }),
    patient: (accountId: string, overrides: Partial<Patient> = {}): Patient => ({
      id: id(),
      accountId,
      facilityIds: ['f0000000-0000-7000-8000-000000000001'],
      cohortIds: [],
      externalId: 'ext-1',
      firstName: 'José María',
      lastName: 'Núñez',
      dob: '1980-02-29',
      genderAtBirth: 'M',
      address: [address(), address({ addressLine2: undefined, zip: '10001', state: 'NY' })],
      contact: [{ phone: '4155550100', email: 'jose@example.com' }, { email: 'other@example.com' }],
      personalIdentifiers: [
        { type: 'ssn', value: '123456789' },
        { type: 'driversLicense', value: 'D1234567', state: 'CA' },
      ],
      hieOptOut: false,
      matchKeys: ['1980-02-29|M|nunez'],
      version: 1,
      createdAt: at(0),
      updatedAt: at(0),
      ...overrides,
    }),
    bulkRequest: (accountId: string, overrides: Partial<BulkRequest> = {}): BulkRequest => ({
      id: id(),
      accountId,
      facilityId: 'f0000000-0000-7000-8000-000000000001',
      dryRun: false,
      status: 'waiting',
      processed: 0,
      succeeded: 0,
      failed: 0,
      created: 0,
      updated: 0,
      uploadKey: 'uploads/a.csv',
      expiresAt: at(600),
      metadata: { batch: 'north', 'clé': 'välue' },
      createdAt: at(0),
      updatedAt: at(0),
      ...overrides,
    }),
    document: (accountId: string, patientId: string, overrides: Partial<DocumentRecord> = {}): DocumentRecord => ({
      id: id(),
      accountId,
      patientId,
      queryId: 'q1',
      source: 'hie',
      fileName: `${id()}.xml`,
      description: 'Summary of care',
      status: 'current',
      indexed: at(0),
      mimeType: 'application/xml',
      size: 3_000_000_000,
      type: { coding: [{ system: 'http://loinc.org', code: '34133-9', display: 'Summarization of episode note' }], text: 'CCD' },
      organizationIdentifiers: [{ name: 'Hospital', identifierValues: ['1.2.3'] }],
      blobKey: 'documents/x.xml',
      conversionStatus: 'processing',
      createdAt: at(0),
      ...overrides,
    }),
    documentQuery: (accountId: string, patientId: string, overrides: Partial<DocumentQuery> = {}): DocumentQuery => ({
      id: id(),
      accountId,
      patientId,
      facilityId: 'f0000000-0000-7000-8000-000000000001',
      download: { status: 'processing', total: 3, successful: 1, errors: 0 },
      convert: { status: 'processing', total: 0, successful: 0, errors: 0 },
      metadata: { source: 'test' },
      createdAt: at(0),
      updatedAt: at(0),
      ...overrides,
    }),
    fhirResource: (accountId: string, patientId: string, overrides: Partial<FhirResourceRecord> = {}): FhirResourceRecord => {
      const resourceId = overrides.id ?? id();
      const resourceType = overrides.resourceType ?? 'Condition';
      return {
        accountId,
        patientId,
        resourceType,
        id: resourceId,
        resource: { resourceType, id: resourceId, code: { text: 'Hypertension' }, note: [{ text: 'élevée' }], onsetAge: { value: 42.5 } },
        sourceDocumentIds: ['d1'],
        updatedAt: at(0),
        ...overrides,
      };
    },
    consolidatedQuery: (accountId: string, patientId: string, overrides: Partial<ConsolidatedQuery> = {}): ConsolidatedQuery => ({
      id: id(),
      accountId,
      patientId,
      status: 'processing',
      filters: { resources: 'Condition,Observation', dateFrom: '2020-01-01' },
      conversionType: 'json',
      createdAt: at(0),
      updatedAt: at(0),
      ...overrides,
    }),
    networkQuery: (accountId: string, patientId: string, overrides: Partial<NetworkQuery> = {}): NetworkQuery => ({
      id: id(),
      accountId,
      patientId,
      facilityId: 'f1',
      sources: [
        { type: 'hie', status: 'processing', startedAt: at(0), documentQueryId: 'dq1' },
        { type: 'lab', status: 'completed', startedAt: at(0), completedAt: at(3) },
      ],
      createdAt: at(0),
      updatedAt: at(0),
      ...overrides,
    }),
    outbox: (accountId: string, overrides: Partial<OutboxMessage> = {}): OutboxMessage => {
      const messageId = overrides.id ?? id();
      return {
        id: messageId,
        accountId,
        type: 'medical.bulk-patient-create',
        body: '{"meta":{"type":"medical.bulk-patient-create"},"bulkPatientCreate":{"status":"processing"}}',
        streamKey: messageId,
        status: 'pending',
        attempts: 0,
        nextAttemptAt: at(0),
        createdAt: at(0),
        ...overrides,
      };
    },
  };
}

export const row = (requestId: string, rowIndex: number, overrides: Partial<BulkRowOutcome> = {}): BulkRowOutcome => ({
  requestId,
  rowIndex,
  status: 'succeeded',
  action: 'created',
  patientId: `p-${rowIndex}`,
  ...overrides,
});

export const ids = (records: readonly { id: string }[]) => records.map((record) => record.id);

/** How many outcomes of the request are stored and how many of them failed, read through `range`. */
export async function rowCounts(storage: Pick<StoragePort, 'bulkRows'>, requestId: string): Promise<{ total: number; failed: number }> {
  const rows = await storage.bulkRows.range(requestId, 0, await storage.bulkRows.nextRowIndex(requestId));
  return { total: rows.length, failed: rows.filter((outcome) => outcome.status === 'failed').length };
}

/** How many patients the account has, read through `list` (unpaged). */
export async function patientCount(storage: Pick<StoragePort, 'patients'>, accountId: string): Promise<number> {
  return (await storage.patients.list(accountId)).length;
}
