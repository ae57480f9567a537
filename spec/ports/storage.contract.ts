import fc from 'fast-check';
import { expect } from 'vitest';
import type {
  Account,
  Address,
  BulkRequest,
  BulkRowOutcome,
  Cohort,
  ConsolidatedQuery,
  Contact,
  DocumentQuery,
  DocumentRecord,
  Facility,
  FhirResourceRecord,
  NetworkQuery,
  Organization,
  OutboxMessage,
  Patient,
  PersonalIdentifier,
  WebhookAttempt,
  WebhookEndpoint,
  WebhookSettings,
} from '../../core/domain/types.js';
import type { StoragePort } from '../../core/ports/storage.port.js';
import { settleAll } from '../../core/settle.js';

/**
 * The contract of the storage port (core/ports/storage.port.ts), run against every adapter.
 * `make` returns a fresh, isolated storage per test; nothing is shared between tests.
 */
export interface StorageUnderTest {
  storage: StoragePort;
  /** Closes the storage and removes whatever `make` created (file, schema). */
  close(): Promise<void>;
}

export interface StorageContractOptions {
  /** vitest's `test` (or `it`). */
  test: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  make: () => Promise<StorageUnderTest>;
  /**
   * Transactions of one storage run one at a time (memory, SQLite), so a read-modify-write inside
   * concurrent transactions loses no update. PostgreSQL runs them concurrently (READ COMMITTED).
   */
  serialisesTransactions: boolean;
  /**
   * Writes of an unfinished transaction are invisible to reads outside it. Not so for SQLite in memory,
   * where every query shares the one connection that holds the database.
   */
  isolatesUncommittedWrites: boolean;
  /** fast-check runs per property; fewer for slow backends. */
  numRuns?: number;
}

// ---------------------------------------------------------------------------------------------------------
// Fixtures: every builder gives a complete, valid record; ids and times come from a per-test sequence.

const BASE_TIME = Date.UTC(2024, 0, 1);

/** An instant `seconds` after the fixtures' epoch, ISO as the clock port gives it. */
const at = (seconds: number): string => new Date(BASE_TIME + seconds * 1000).toISOString();

function sequence() {
  let next = 0;
  /** UUID-shaped, increasing in generation order, like the ids port. */
  return () => `00000000-0000-7000-8000-${(++next).toString(16).padStart(12, '0')}`;
}

const ACCOUNT_A = '0a000000-0000-7000-8000-00000000000a';
const ACCOUNT_B = '0b000000-0000-7000-8000-00000000000b';

const address = (overrides: Partial<Address> = {}): Address => ({
  addressLine1: '12 Rue de l’Église',
  addressLine2: 'Apt 3',
  city: 'São Paulo',
  state: 'CA',
  zip: '94110',
  country: 'USA',
  ...overrides,
});

function builders() {
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

const row = (requestId: string, rowIndex: number, overrides: Partial<BulkRowOutcome> = {}): BulkRowOutcome => ({
  requestId,
  rowIndex,
  status: 'succeeded',
  action: 'created',
  patientId: `p-${rowIndex}`,
  ...overrides,
});

const ids = (records: readonly { id: string }[]) => records.map((record) => record.id);

// ---------------------------------------------------------------------------------------------------------
// Arbitraries for the property tests.

const LETTERS = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéèêëàâäåçñøßœæÉÈÀÇÑØÅÆíóúüÜ'];
/** Printable, no control characters: what a person's name, city or note can hold. */
const printable = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }).filter((s) => !/[\u0000-\u001f\u007f]/.test(s));
const word = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: fc.constantFrom(...LETTERS), minLength: 1, maxLength: 12 }) },
  { weight: 1, arbitrary: printable },
);
const names = fc
  .tuple(fc.array(word, { minLength: 1, maxLength: 3 }), fc.constantFrom(' ', ',', ', '))
  .map(([parts, separator]) => parts.join(separator));
const digits = (length: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: length, maxLength: length });
const isoInstant = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2030, 0, 1) }).map((ms) => new Date(ms).toISOString());
const isoDay = fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2024, 11, 31) }).map((ms) => new Date(ms).toISOString().slice(0, 10));
const state = fc.constantFrom('CA', 'NY', 'TX', 'PR', 'DC', 'WA');

const addressArb: fc.Arbitrary<Address> = fc.record(
  {
    addressLine1: names,
    addressLine2: names,
    city: names,
    state,
    zip: digits(5),
    country: fc.constant('USA'),
  },
  { requiredKeys: ['addressLine1', 'city', 'state', 'zip', 'country'] },
);
const contactArb: fc.Arbitrary<Contact> = fc.record({ phone: digits(10), email: fc.emailAddress() }, { requiredKeys: [] });
const identifierArb: fc.Arbitrary<PersonalIdentifier> = fc.oneof(
  digits(9).map((value) => ({ type: 'ssn' as const, value })),
  fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), state).map(([value, st]) => ({ type: 'driversLicense' as const, value, state: st })),
);
const uuidArb = fc.uuid();

/** Everything of a patient but its identity (id, account, creation time) and the version the storage counts. */
type Demographics = Omit<Patient, 'id' | 'accountId' | 'createdAt' | 'version'>;

const demographicsArb: fc.Arbitrary<Demographics> = fc.record(
  {
    facilityIds: fc.uniqueArray(uuidArb, { minLength: 1, maxLength: 3 }),
    cohortIds: fc.uniqueArray(uuidArb, { maxLength: 3 }),
    externalId: fc.oneof(fc.constantFrom('ext-1', 'ext-2'), printable),
    firstName: names,
    lastName: names,
    dob: isoDay,
    genderAtBirth: fc.constantFrom('M', 'F', 'O', 'U'),
    address: fc.array(addressArb, { minLength: 1, maxLength: 10 }),
    contact: fc.array(contactArb, { maxLength: 10 }),
    personalIdentifiers: fc.array(identifierArb, { maxLength: 2 }),
    hieOptOut: fc.boolean(),
    // A small key space, so generated patients share keys and lookups have something to find.
    matchKeys: fc.array(fc.constantFrom('k1', 'k2', 'k3', 'k4', '1980-01-01|F|müller'), { maxLength: 4 }),
    updatedAt: isoInstant,
  },
  { requiredKeys: ['facilityIds', 'cohortIds', 'firstName', 'lastName', 'dob', 'genderAtBirth', 'address', 'contact', 'personalIdentifiers', 'hieOptOut', 'matchKeys', 'updatedAt'] },
);

// ---------------------------------------------------------------------------------------------------------

export function defineStorageContract(options: StorageContractOptions): void {
  const { make } = options;
  const numRuns = options.numRuns ?? 30;

  /** Registers a test that gets a fresh storage and always closes it. */
  const test = (name: string, body: (storage: StoragePort, build: ReturnType<typeof builders>) => Promise<void>, timeout?: number) =>
    options.test(
      name,
      async () => {
        const subject = await make();
        try {
          await body(subject.storage, builders());
        } finally {
          await subject.close();
        }
      },
      timeout,
    );

  // ----- accounts

  test('accounts: a missing account is undefined', async (storage) => {
    expect(await storage.accounts.get(ACCOUNT_A)).toBeUndefined();
    expect(await storage.accounts.getByApiKeyHash('nope')).toBeUndefined();
    expect(await storage.accounts.list()).toEqual([]);
  });

  test('accounts: insert, get, look up by key hash, list oldest first (ties by id)', async (storage, build) => {
    const later = build.account({ id: ACCOUNT_B, createdAt: at(10) });
    const earlier = build.account({ id: ACCOUNT_A, createdAt: at(5) });
    const tieLow = build.account({ id: '00000000-0000-7000-8000-0000000000f1', createdAt: at(7) });
    const tieHigh = build.account({ id: '00000000-0000-7000-8000-0000000000f2', createdAt: at(7) });
    for (const account of [later, tieHigh, earlier, tieLow]) await storage.accounts.insert(account);
    expect(await storage.accounts.get(ACCOUNT_A)).toEqual(earlier);
    expect(await storage.accounts.getByApiKeyHash(later.apiKeyHash)).toEqual(later);
    expect(ids(await storage.accounts.list())).toEqual([earlier.id, tieLow.id, tieHigh.id, later.id]);
  });

  test('accounts: replaceApiKey moves the account to a new key hash; the old one finds nothing; missing is false; a taken hash conflicts', async (storage, build) => {
    const account = build.account({ id: ACCOUNT_A });
    const other = build.account({ id: ACCOUNT_B });
    await storage.accounts.insert(account);
    await storage.accounts.insert(other);
    expect(await storage.accounts.replaceApiKey(ACCOUNT_A, 'new-hash', 'cb_newkey')).toBe(true);
    expect(await storage.accounts.getByApiKeyHash(account.apiKeyHash)).toBeUndefined();
    expect(await storage.accounts.getByApiKeyHash('new-hash')).toEqual({ ...account, apiKeyHash: 'new-hash', apiKeyPrefix: 'cb_newkey' });
    expect(await storage.accounts.replaceApiKey('00000000-0000-7000-8000-00000000dead', 'x-hash', 'cb_x')).toBe(false);
    await expect(storage.accounts.replaceApiKey(ACCOUNT_A, other.apiKeyHash, 'cb_other')).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await storage.accounts.get(ACCOUNT_B)).toEqual(other);
  });

  test('accounts: inserting an existing id throws and keeps the first', async (storage, build) => {
    const account = build.account({ id: ACCOUNT_A });
    await storage.accounts.insert(account);
    await expect(storage.accounts.insert({ ...account, name: 'Other', apiKeyHash: 'other-hash' })).rejects.toThrow();
    expect(await storage.accounts.get(ACCOUNT_A)).toEqual(account);
  });

  test('accounts: records are copies, in and out', async (storage, build) => {
    const account = build.account({ id: ACCOUNT_A });
    await storage.accounts.insert(account);
    account.name = 'changed after insert';
    const read = await storage.accounts.get(ACCOUNT_A);
    read!.name = 'changed after get';
    expect((await storage.accounts.get(ACCOUNT_A))!.name).toBe('Clinic Ñandú');
  });

  // ----- webhook settings

  test('webhookSettings: missing is undefined; put inserts then replaces; scoped by account', async (storage, build) => {
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toBeUndefined();
    const first = build.webhookSettings(ACCOUNT_A);
    await storage.webhookSettings.put(first);
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual(first);
    const second = build.webhookSettings(ACCOUNT_A, { webhookUrl: null, webhookEnabled: false, webhookStatusDetail: 'timed out', updatedAt: at(9) });
    await storage.webhookSettings.put(second);
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual(second);
    expect(await storage.webhookSettings.get(ACCOUNT_B)).toBeUndefined();
  });

  // ----- organizations

  test('organizations: one per account, scoped, updated whole', async (storage, build) => {
    expect(await storage.organizations.getByAccount(ACCOUNT_A)).toBeUndefined();
    const org = build.organization(ACCOUNT_A);
    await storage.organizations.insert(org);
    expect(await storage.organizations.getByAccount(ACCOUNT_A)).toEqual(org);
    expect(await storage.organizations.getByAccount(ACCOUNT_B)).toBeUndefined();
    await expect(storage.organizations.insert(build.organization(ACCOUNT_A))).rejects.toThrow();

    const renamed = { ...org, name: 'Acme Santé', location: address({ city: 'Montréal' }), updatedAt: at(3) };
    expect(await storage.organizations.update(renamed)).toEqual(renamed);
    expect(await storage.organizations.getByAccount(ACCOUNT_A)).toEqual(renamed);
    expect(await storage.organizations.update({ ...renamed, accountId: ACCOUNT_B, name: 'stolen' })).toBeUndefined();
    expect(await storage.organizations.update(build.organization(ACCOUNT_A))).toBeUndefined();
    expect(await storage.organizations.getByAccount(ACCOUNT_A)).toEqual(renamed);
  });

  // ----- facilities

  test('facilities: insert, get, list oldest first, count, scoped by account', async (storage, build) => {
    const second = build.facility(ACCOUNT_A, { createdAt: at(2), tin: undefined });
    const first = build.facility(ACCOUNT_A, { createdAt: at(1) });
    const foreign = build.facility(ACCOUNT_B);
    for (const facility of [second, first, foreign]) await storage.facilities.insert(facility);
    expect(await storage.facilities.get(ACCOUNT_A, first.id)).toEqual(first);
    const { tin: _absent, ...withoutTin } = second;
    expect(await storage.facilities.get(ACCOUNT_A, second.id)).toEqual(withoutTin);
    expect(ids(await storage.facilities.list(ACCOUNT_A))).toEqual([first.id, second.id]);
    expect(await storage.facilities.count(ACCOUNT_A)).toBe(2);
    expect(await storage.facilities.count(ACCOUNT_B)).toBe(1);
    expect(await storage.facilities.get(ACCOUNT_B, first.id)).toBeUndefined();
    expect(await storage.facilities.get(ACCOUNT_A, foreign.id)).toBeUndefined();
    expect(await storage.facilities.list('no-such-account')).toEqual([]);
    expect(await storage.facilities.count('no-such-account')).toBe(0);
  });

  test('facilities: update replaces; missing or foreign is undefined and changes nothing', async (storage, build) => {
    const facility = build.facility(ACCOUNT_A);
    await storage.facilities.insert(facility);
    const updated = { ...facility, name: 'Uptown', active: false, address: address({ zip: '02139' }), updatedAt: at(5) };
    expect(await storage.facilities.update(updated)).toEqual(updated);
    expect(await storage.facilities.get(ACCOUNT_A, facility.id)).toEqual(updated);
    expect(await storage.facilities.update({ ...updated, accountId: ACCOUNT_B, name: 'stolen' })).toBeUndefined();
    expect(await storage.facilities.update(build.facility(ACCOUNT_A))).toBeUndefined();
    expect(await storage.facilities.get(ACCOUNT_A, facility.id)).toEqual(updated);
    expect(await storage.facilities.count(ACCOUNT_A)).toBe(1);
  });

  test('facilities: remove is true once, false when missing or foreign', async (storage, build) => {
    const facility = build.facility(ACCOUNT_A);
    await storage.facilities.insert(facility);
    expect(await storage.facilities.remove(ACCOUNT_B, facility.id)).toBe(false);
    expect(await storage.facilities.get(ACCOUNT_A, facility.id)).toEqual(facility);
    expect(await storage.facilities.remove(ACCOUNT_A, facility.id)).toBe(true);
    expect(await storage.facilities.remove(ACCOUNT_A, facility.id)).toBe(false);
    expect(await storage.facilities.get(ACCOUNT_A, facility.id)).toBeUndefined();
  });

  test('facilities: nested values are copies', async (storage, build) => {
    const facility = build.facility(ACCOUNT_A);
    await storage.facilities.insert(facility);
    facility.address.city = 'mutated input';
    const read = await storage.facilities.get(ACCOUNT_A, facility.id);
    read!.address.city = 'mutated output';
    expect((await storage.facilities.get(ACCOUNT_A, facility.id))!.address.city).toBe('São Paulo');
  });

  // ----- cohorts

  test('cohorts: insert, get, list oldest first, update, remove, scoped', async (storage, build) => {
    const later = build.cohort(ACCOUNT_A, { createdAt: at(2), description: undefined });
    const earlier = build.cohort(ACCOUNT_A, { createdAt: at(1) });
    await storage.cohorts.insert(later);
    await storage.cohorts.insert(earlier);
    await storage.cohorts.insert(build.cohort(ACCOUNT_B));
    expect(await storage.cohorts.get(ACCOUNT_A, earlier.id)).toEqual(earlier);
    expect(await storage.cohorts.get(ACCOUNT_B, earlier.id)).toBeUndefined();
    expect(ids(await storage.cohorts.list(ACCOUNT_A))).toEqual([earlier.id, later.id]);
    const renamed = { ...earlier, name: 'Hypertension', description: undefined, updatedAt: at(4) };
    expect(await storage.cohorts.update(renamed)).toEqual(renamed);
    expect(await storage.cohorts.get(ACCOUNT_A, earlier.id)).toEqual(renamed);
    expect(await storage.cohorts.update({ ...renamed, accountId: ACCOUNT_B })).toBeUndefined();
    expect(await storage.cohorts.remove(ACCOUNT_B, earlier.id)).toBe(false);
    expect(await storage.cohorts.remove(ACCOUNT_A, earlier.id)).toBe(true);
    expect(ids(await storage.cohorts.list(ACCOUNT_A))).toEqual([later.id]);
  });

  test('cohorts: existingIds gives the account’s own ids among those asked, once each', async (storage, build) => {
    const mine = build.cohort(ACCOUNT_A);
    const alsoMine = build.cohort(ACCOUNT_A);
    const theirs = build.cohort(ACCOUNT_B);
    for (const cohort of [mine, alsoMine, theirs]) await storage.cohorts.insert(cohort);
    const found = await storage.cohorts.existingIds(ACCOUNT_A, [mine.id, theirs.id, 'missing', mine.id, alsoMine.id]);
    expect([...found].sort()).toEqual([mine.id, alsoMine.id].sort());
    expect(await storage.cohorts.existingIds(ACCOUNT_A, [])).toEqual([]);
  });

  // ----- patients

  test('patients: round-trip with every optional field, and with none', async (storage, build) => {
    const full = build.patient(ACCOUNT_A);
    const { externalId: _absent, ...minimalFields } = build.patient(ACCOUNT_A, {
      address: [address({ addressLine2: undefined })],
      contact: [],
      personalIdentifiers: [],
      cohortIds: [],
      matchKeys: [],
    });
    const minimal: Patient = minimalFields;
    await storage.patients.insert(full);
    await storage.patients.insert(minimal);
    expect(await storage.patients.get(ACCOUNT_A, full.id)).toEqual(full);
    expect(await storage.patients.get(ACCOUNT_A, minimal.id)).toEqual(minimal);
    expect(await storage.patients.get(ACCOUNT_A, 'missing')).toBeUndefined();
    expect(await storage.patients.get(ACCOUNT_B, full.id)).toBeUndefined();
  });

  test('patients: nested values are copies', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A);
    await storage.patients.insert(patient);
    patient.address[0]!.zip = '00000';
    patient.matchKeys.push('injected');
    const read = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    read.contact.pop();
    read.facilityIds.push('injected');
    const again = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    expect(again.address[0]!.zip).toBe('94110');
    expect(again.matchKeys).toEqual(['1980-02-29|M|nunez']);
    expect(again.contact).toHaveLength(2);
    expect(again.facilityIds).toHaveLength(1);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['injected'])).toEqual([]);
  });

  test('patients: inserting an existing id throws and keeps the first', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A);
    await storage.patients.insert(patient);
    await expect(storage.patients.insert({ ...patient, firstName: 'Other', matchKeys: ['other'] })).rejects.toThrow();
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual(patient);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['other'])).toEqual([]);
  });

  test('patients: a failed write’s error shows no PHI where loggers look (message, causes’ messages, enumerable fields)', async (storage, build) => {
    const secret = 'Zébulon-Secretname';
    const patient = build.patient(ACCOUNT_A, { firstName: secret, lastName: secret, matchKeys: [secret] });
    await storage.patients.insert(patient);
    const error = await storage.patients.insertMany([build.patient(ACCOUNT_A), { ...patient }]).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(Error);
    for (const [key, value] of Object.entries(error as object)) expect(`${key}: ${JSON.stringify(value)}`).not.toContain('Secretname');
    for (let current: unknown = error; current instanceof Error; current = current.cause) expect(current.message).not.toContain('Secretname');
  });

  test('patients: insertMany inserts all, keeping each id', async (storage, build) => {
    const batch = Array.from({ length: 25 }, (_, i) => build.patient(ACCOUNT_A, { createdAt: at(i), matchKeys: [`k${i % 3}`] }));
    await storage.patients.insertMany(batch);
    await storage.patients.insertMany([]);
    expect(await storage.patients.list(ACCOUNT_A)).toEqual(batch);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k1']))).toEqual(ids(batch.filter((_, i) => i % 3 === 1)));
  });

  test('patients: insertMany is all or none (an existing id, or one repeated in the batch)', async (storage, build) => {
    const existing = build.patient(ACCOUNT_A, { matchKeys: ['shared'] });
    await storage.patients.insert(existing);
    const fresh = build.patient(ACCOUNT_A, { matchKeys: ['shared', 'fresh'] });
    const alsoFresh = build.patient(ACCOUNT_A, { matchKeys: ['fresh'] });
    await expect(storage.patients.insertMany([fresh, { ...existing, firstName: 'Again' }, alsoFresh])).rejects.toThrow();
    const twice = build.patient(ACCOUNT_A, { matchKeys: ['fresh'] });
    await expect(storage.patients.insertMany([twice, alsoFresh, twice])).rejects.toThrow();
    expect(await storage.patients.get(ACCOUNT_A, fresh.id)).toBeUndefined();
    expect(await storage.patients.get(ACCOUNT_A, alsoFresh.id)).toBeUndefined();
    expect(await storage.patients.get(ACCOUNT_A, twice.id)).toBeUndefined();
    expect(await storage.patients.count(ACCOUNT_A)).toBe(1);
    expect(await storage.patients.get(ACCOUNT_A, existing.id)).toEqual(existing);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['fresh'])).toEqual([]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['shared']))).toEqual([existing.id]);
  });

  test('patients: a large insertMany failing at its end leaves none of its earlier patients', async (storage, build) => {
    const existing = build.patient(ACCOUNT_A);
    await storage.patients.insert(existing);
    const batch = Array.from({ length: 2_499 }, () => build.patient(ACCOUNT_A, { matchKeys: ['large'] }));
    await expect(storage.patients.insertMany([...batch, existing])).rejects.toThrow();
    expect(await storage.patients.count(ACCOUNT_A)).toBe(1);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['large'])).toEqual([]);
  });

  test('patients: findByExternalId gives the account’s matches, oldest first', async (storage, build) => {
    const later = build.patient(ACCOUNT_A, { externalId: 'MRN-1', createdAt: at(9) });
    const earlier = build.patient(ACCOUNT_A, { externalId: 'MRN-1', createdAt: at(3) });
    const other = build.patient(ACCOUNT_A, { externalId: 'MRN-2' });
    const foreign = build.patient(ACCOUNT_B, { externalId: 'MRN-1' });
    await storage.patients.insertMany([later, earlier, other, foreign]);
    expect(ids(await storage.patients.findByExternalId(ACCOUNT_A, 'MRN-1'))).toEqual([earlier.id, later.id]);
    expect(await storage.patients.findByExternalId(ACCOUNT_A, 'MRN-3')).toEqual([]);
    expect(ids(await storage.patients.findByExternalId(ACCOUNT_B, 'MRN-1'))).toEqual([foreign.id]);
  });

  test('patients: findByMatchKeys gives patients sharing a key, each once, oldest first, in the account', async (storage, build) => {
    const both = build.patient(ACCOUNT_A, { matchKeys: ['k1', 'k2', 'k1'], createdAt: at(5) });
    const onlyK2 = build.patient(ACCOUNT_A, { matchKeys: ['k2'], createdAt: at(1) });
    const tieLow = build.patient(ACCOUNT_A, { matchKeys: ['k1'], createdAt: at(7) });
    const tieHigh = build.patient(ACCOUNT_A, { matchKeys: ['k1'], createdAt: at(7) });
    const unrelated = build.patient(ACCOUNT_A, { matchKeys: ['k3'] });
    const foreign = build.patient(ACCOUNT_B, { matchKeys: ['k1', 'k2'] });
    await storage.patients.insertMany([tieHigh, both, unrelated, onlyK2, foreign, tieLow]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k1', 'k2', 'k1']))).toEqual([onlyK2.id, both.id, tieLow.id, tieHigh.id]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k2']))).toEqual([onlyK2.id, both.id]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k9'])).toEqual([]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, [])).toEqual([]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_B, ['k1', 'k3']))).toEqual([foreign.id]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k1'])).toContainEqual(both);
  });

  test('patients: findByMatchKeys takes many keys at once', async (storage, build) => {
    const keys = Array.from({ length: 1_200 }, (_, i) => `key-${i}`);
    const patients = [0, 599, 600, 1_199].map((i, n) => build.patient(ACCOUNT_A, { matchKeys: [keys[i]!], createdAt: at(10 - n) }));
    await storage.patients.insertMany(patients);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, keys))).toEqual(ids([...patients].reverse()));
  });

  test('patients: list orders by id, pages with after and limit, filters by facility and cohort', async (storage, build) => {
    const facility = 'f0000000-0000-7000-8000-0000000000ff';
    const cohort = 'c0000000-0000-7000-8000-0000000000cc';
    const patients = Array.from({ length: 7 }, (_, i) =>
      build.patient(ACCOUNT_A, {
        // Creation order differs from id order: list follows ids.
        createdAt: at(100 - i),
        facilityIds: i % 2 === 0 ? [facility] : ['f-other', facility.toUpperCase()],
        cohortIds: i % 3 === 0 ? [cohort, 'c-other'] : [],
      }),
    );
    await storage.patients.insertMany([...patients].reverse());
    await storage.patients.insert(build.patient(ACCOUNT_B, { facilityIds: [facility] }));
    expect(ids(await storage.patients.list(ACCOUNT_A))).toEqual(ids(patients));
    expect(ids(await storage.patients.list(ACCOUNT_A, { limit: 3 }))).toEqual(ids(patients.slice(0, 3)));
    expect(ids(await storage.patients.list(ACCOUNT_A, { after: patients[2]!.id, limit: 3 }))).toEqual(ids(patients.slice(3, 6)));
    expect(ids(await storage.patients.list(ACCOUNT_A, { after: patients[6]!.id }))).toEqual([]);
    expect(ids(await storage.patients.list(ACCOUNT_A, { facilityId: facility }))).toEqual(ids(patients.filter((_, i) => i % 2 === 0)));
    expect(ids(await storage.patients.list(ACCOUNT_A, { cohortId: cohort }))).toEqual(ids(patients.filter((_, i) => i % 3 === 0)));
    expect(ids(await storage.patients.list(ACCOUNT_A, { facilityId: facility, cohortId: cohort, after: patients[0]!.id }))).toEqual([
      patients[6]!.id,
    ]);
    expect(await storage.patients.list(ACCOUNT_A, { facilityId: 'f-none' })).toEqual([]);
    expect(await storage.patients.count(ACCOUNT_A)).toBe(7);
    expect(await storage.patients.count(ACCOUNT_B)).toBe(1);
  });

  test('patients: update replaces the whole record, blocking keys included', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { matchKeys: ['old', 'kept'] });
    await storage.patients.insert(patient);
    const { externalId: _dropped, ...rest } = patient;
    const updated: Patient = { ...rest, firstName: 'Zoë', hieOptOut: true, matchKeys: ['kept', 'new'], address: [address({ zip: '73301' })], updatedAt: at(8) };
    // Stored as given, one version on from the one it was read at.
    expect(await storage.patients.update(updated)).toEqual({ ...updated, version: 2 });
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual({ ...updated, version: 2 });
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['old'])).toEqual([]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['new']))).toEqual([patient.id]);
    expect(await storage.patients.findByExternalId(ACCOUNT_A, 'ext-1')).toEqual([]);
  });

  test('patients: update of a missing or foreign patient is undefined and changes nothing', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A);
    await storage.patients.insert(patient);
    expect(await storage.patients.update(build.patient(ACCOUNT_A))).toBeUndefined();
    expect(await storage.patients.update({ ...patient, accountId: ACCOUNT_B, matchKeys: ['stolen'] })).toBeUndefined();
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual(patient);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_B, ['stolen'])).toEqual([]);
    expect(await storage.patients.count(ACCOUNT_A)).toBe(1);
  });

  test('patients: updateMany replaces each one', async (storage, build) => {
    const batch = Array.from({ length: 5 }, (_, i) => build.patient(ACCOUNT_A, { matchKeys: [`before-${i}`] }));
    await storage.patients.insertMany(batch);
    const updated = batch.map((patient, i) => ({ ...patient, lastName: `Æsir ${i}`, matchKeys: [`after-${i}`], cohortIds: ['c1'] }));
    expect(await storage.patients.updateMany(updated)).toEqual([]);
    expect(await storage.patients.updateMany([])).toEqual([]);
    const stored = updated.map((patient) => ({ ...patient, version: 2 }));
    expect(await storage.patients.list(ACCOUNT_A)).toEqual(stored);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['before-2'])).toEqual([]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['after-2'])).toEqual([stored[2]]);
  });

  test('patients: updateMany is all or none when one is missing or foreign', async (storage, build) => {
    const first = build.patient(ACCOUNT_A);
    const second = build.patient(ACCOUNT_A);
    await storage.patients.insertMany([first, second]);
    const foreign = build.patient(ACCOUNT_B);
    await storage.patients.insert(foreign);
    await expect(storage.patients.updateMany([{ ...first, firstName: 'Changed' }, build.patient(ACCOUNT_A)])).rejects.toThrow();
    await expect(storage.patients.updateMany([{ ...second, firstName: 'Changed' }, { ...foreign, accountId: ACCOUNT_A }])).rejects.toThrow();
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([first, second]);
    expect(await storage.patients.get(ACCOUNT_B, foreign.id)).toEqual(foreign);
  });

  test('patients: remove deletes the patient and its keys; missing or foreign is false', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { matchKeys: ['k'] });
    await storage.patients.insert(patient);
    expect(await storage.patients.remove(ACCOUNT_B, patient.id)).toBe(false);
    expect(await storage.patients.remove(ACCOUNT_A, patient.id)).toBe(true);
    expect(await storage.patients.remove(ACCOUNT_A, patient.id)).toBe(false);
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toBeUndefined();
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k'])).toEqual([]);
    expect(await storage.patients.count(ACCOUNT_A)).toBe(0);
    // The id is free again: nothing of the patient was left behind.
    await storage.patients.insert(patient);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k']))).toEqual([patient.id]);
  });

  test('patients: of two writers that read the same version (read A, read B, write A, write B), the second is refused as stale; its retry keeps both changes', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { cohortIds: [], hieOptOut: false });
    await storage.patients.insert(patient);
    const readByA = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    const readByB = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    expect(await storage.patients.update({ ...readByA, hieOptOut: true, updatedAt: at(1) })).toEqual({ ...patient, hieOptOut: true, updatedAt: at(1), version: 2 });
    // B's change was made from version 1: writing it would undo A's opt-out.
    expect(await storage.patients.update({ ...readByB, cohortIds: ['c-1'], updatedAt: at(2) })).toBe('stale');
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual({ ...patient, hieOptOut: true, updatedAt: at(1), version: 2 });
    const reread = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    const both = { ...patient, hieOptOut: true, cohortIds: ['c-1'], updatedAt: at(2), version: 3 };
    expect(await storage.patients.update({ ...reread, cohortIds: ['c-1'], updatedAt: at(2) })).toEqual(both);
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual(both);
    // A version from the future is no better than one from the past.
    expect(await storage.patients.update({ ...both, version: 7 })).toBe('stale');
  });

  test('patients: updateMany with one stale patient writes none of them and names it', async (storage, build) => {
    const [first, second, third] = [build.patient(ACCOUNT_A), build.patient(ACCOUNT_A), build.patient(ACCOUNT_A)];
    await storage.patients.insertMany([first!, second!, third!]);
    const changedMeanwhile = await storage.patients.update({ ...second!, hieOptOut: true });
    expect(changedMeanwhile).toMatchObject({ version: 2 });
    const page = [first!, second!, third!].map((patient) => ({ ...patient, cohortIds: ['c-1'] }));
    expect(await storage.patients.updateMany(page)).toEqual([second!.id]);
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([first, changedMeanwhile, third]);
    // Redone from what is stored now, every change lands and the opt-out stays.
    const redone = (await storage.patients.list(ACCOUNT_A)).map((patient) => ({ ...patient, cohortIds: ['c-1'] }));
    expect(await storage.patients.updateMany(redone)).toEqual([]);
    expect((await storage.patients.list(ACCOUNT_A)).map((patient) => [patient.version, patient.cohortIds, patient.hieOptOut])).toEqual([
      [2, ['c-1'], false],
      [3, ['c-1'], true],
      [2, ['c-1'], false],
    ]);
  });

  test('patients: the revision counts the committed transactions that wrote the account’s patients, one each; not rolled-back ones, not other accounts’', async (storage, build) => {
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(0);
    const patient = build.patient(ACCOUNT_A);
    await storage.patients.insert(patient);
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(1);
    await storage.patients.insertMany([build.patient(ACCOUNT_A), build.patient(ACCOUNT_A)]);
    await storage.patients.update({ ...patient, firstName: 'Changed' });
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(3);
    // Several writes in one transaction count once; lockAccount in it returns what it started from.
    await storage.transaction(async (tx) => {
      expect(await tx.patients.lockAccount(ACCOUNT_A)).toBe(3);
      await tx.patients.insert(build.patient(ACCOUNT_A));
      await tx.patients.updateMany([{ ...(await tx.patients.get(ACCOUNT_A, patient.id))!, lastName: 'Other' }]);
      expect(await tx.patients.lockAccount(ACCOUNT_A)).toBe(3);
    });
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(4);
    await expect(
      storage.transaction(async (tx) => {
        await tx.patients.insert(build.patient(ACCOUNT_A));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(4);
    await storage.patients.insert(build.patient(ACCOUNT_B));
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(4);
    expect(await storage.patients.revision(ACCOUNT_B)).toBe(1);
    // Holding the account without writing counts too: the holder may have looked and decided to write nothing.
    await storage.transaction((tx) => tx.patients.lockAccount(ACCOUNT_A));
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(5);
    await expect(storage.patients.lockAccount(ACCOUNT_A)).rejects.toThrow();
  });

  test('patients: with the account locked, look-up-then-create by many writers at once leaves one patient per person (many trials)', async (storage, build) => {
    for (let trial = 0; trial < 25; trial++) {
      const key = `person-${trial}`;
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () =>
          storage.transaction(async (tx) => {
            await tx.patients.lockAccount(ACCOUNT_A);
            const [found] = await tx.patients.findByMatchKeys(ACCOUNT_A, [key]);
            if (found) return 'found';
            await tx.patients.insert(build.patient(ACCOUNT_A, { matchKeys: [key] }));
            return 'created';
          }),
        ),
      );
      expect(outcomes.filter((outcome) => outcome === 'created')).toHaveLength(1);
      expect(await storage.patients.findByMatchKeys(ACCOUNT_A, [key])).toHaveLength(1);
    }
  });

  test('patients: an update from outside waits for the transaction holding the account, and is refused when that transaction changed the patient', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { hieOptOut: false });
    await storage.patients.insert(patient);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => {
      wrote = resolve;
    });
    const holder = storage.transaction(async (tx) => {
      await tx.patients.update({ ...patient, hieOptOut: true });
      wrote();
      await gate;
    });
    await written;
    // Read before the holder commits (version 1), written while it still holds the account.
    const outside = storage.patients.update({ ...patient, cohortIds: ['c-1'] });
    release();
    await holder;
    expect(await outside).toBe('stale');
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual({ ...patient, hieOptOut: true, version: 2 });
  });

  test('patients: a revision noted before a look-up tells, once the account is locked, whether anyone wrote its patients since', async (storage, build) => {
    const noted = await storage.patients.revision(ACCOUNT_A);
    expect(await storage.transaction((tx) => tx.patients.lockAccount(ACCOUNT_A))).toBe(noted);
    // The transaction above committed: a reader that noted the revision before it sees it moved.
    await storage.patients.insert(build.patient(ACCOUNT_A));
    const later = await storage.transaction((tx) => tx.patients.lockAccount(ACCOUNT_A));
    expect(later).toBe(noted + 2);
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(noted + 3);
  });

  // ----- bulk requests

  test('bulkRequests: insert, get (scoped), getById, update replaces whole', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A);
    await storage.bulkRequests.insert(request);
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(request);
    expect(await storage.bulkRequests.get(ACCOUNT_B, request.id)).toBeUndefined();
    expect(await storage.bulkRequests.getById(request.id)).toEqual(request);
    expect(await storage.bulkRequests.getById('missing')).toBeUndefined();
    await expect(storage.bulkRequests.insert(request)).rejects.toThrow();

    const { metadata: _dropped, ...rest } = request;
    const completed: BulkRequest = {
      ...rest,
      status: 'completed',
      total: 0,
      resultKey: 'results/r.csv',
      processed: 3,
      succeeded: 2,
      failed: 1,
      created: 1,
      updated: 1,
      ignoredColumns: ['notes', 'Favourite "colour"', 'ünïcode'],
      updatedAt: at(60),
    };
    expect(await storage.bulkRequests.update(completed)).toEqual(completed);
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(completed);
    expect(await storage.bulkRequests.update({ ...completed, accountId: ACCOUNT_B })).toBeUndefined();
    expect(await storage.bulkRequests.update(build.bulkRequest(ACCOUNT_A))).toBeUndefined();
    expect(await storage.bulkRequests.getById(request.id)).toEqual(completed);
  });

  test('bulkRequests: updateIfStatus replaces only from the expected status', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A);
    await storage.bulkRequests.insert(request);
    const processing: BulkRequest = { ...request, status: 'processing', total: 10, ignoredColumns: [], updatedAt: at(1) };
    expect(await storage.bulkRequests.updateIfStatus(processing, 'waiting')).toEqual(processing);
    expect(await storage.bulkRequests.updateIfStatus({ ...processing, status: 'expired' }, 'waiting')).toBeUndefined();
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(processing);
    expect(await storage.bulkRequests.updateIfStatus({ ...processing, accountId: ACCOUNT_B, status: 'failed' }, 'processing')).toBeUndefined();
    expect(await storage.bulkRequests.updateIfStatus(build.bulkRequest(ACCOUNT_A), 'waiting')).toBeUndefined();
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(processing);
    // A pause is kept with the request, and a write without one ends it.
    const paused: BulkRequest = { ...processing, paused: { code: 'STORAGE_FULL', since: at(2) }, updatedAt: at(2) };
    expect(await storage.bulkRequests.updateIfStatus(paused, 'processing')).toEqual(paused);
    expect(await storage.bulkRequests.getById(request.id)).toEqual(paused);
    const resumed: BulkRequest = { ...processing, processed: 5, updatedAt: at(3) };
    expect(await storage.bulkRequests.updateIfStatus(resumed, 'processing')).toEqual(resumed);
    expect(await storage.bulkRequests.getById(request.id)).toEqual(resumed);
  });

  test('bulkRequests: of racing updateIfStatus calls from one status, exactly one wins', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A);
    await storage.bulkRequests.insert(request);
    const outcomes = ['processing', 'expired', 'failed', 'processing', 'expired'] as const;
    const results = await Promise.all(
      outcomes.map((status, i) => storage.bulkRequests.updateIfStatus({ ...request, status, reason: `racer ${i}` }, 'waiting')),
    );
    const winners = results.filter((result) => result !== undefined);
    expect(winners).toHaveLength(1);
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(winners[0]);
  });

  test('bulkRequests: listByStatus spans accounts, oldest first, limited; list is the account’s, newest first', async (storage, build) => {
    const a1 = build.bulkRequest(ACCOUNT_A, { status: 'processing', createdAt: at(3) });
    const b1 = build.bulkRequest(ACCOUNT_B, { status: 'processing', createdAt: at(1) });
    const a2 = build.bulkRequest(ACCOUNT_A, { status: 'waiting', createdAt: at(2) });
    const a3 = build.bulkRequest(ACCOUNT_A, { status: 'processing', createdAt: at(5) });
    for (const request of [a1, b1, a2, a3]) await storage.bulkRequests.insert(request);
    expect(ids(await storage.bulkRequests.listByStatus('processing', 10))).toEqual([b1.id, a1.id, a3.id]);
    expect(ids(await storage.bulkRequests.listByStatus('processing', 2))).toEqual([b1.id, a1.id]);
    expect(await storage.bulkRequests.listByStatus('expired', 10)).toEqual([]);
    expect(ids(await storage.bulkRequests.list(ACCOUNT_A))).toEqual([a3.id, a1.id, a2.id]);
    expect(ids(await storage.bulkRequests.list(ACCOUNT_A, 2))).toEqual([a3.id, a1.id]);
    expect(ids(await storage.bulkRequests.list(ACCOUNT_B))).toEqual([b1.id]);
  });

  // ----- bulk rows

  test('bulkRows: empty request has no rows, zero counts, next index 0', async (storage) => {
    expect(await storage.bulkRows.range('r', 0, 100)).toEqual([]);
    expect(await storage.bulkRows.counts('r')).toEqual({ total: 0, failed: 0 });
    expect(await storage.bulkRows.nextRowIndex('r')).toBe(0);
  });

  test('bulkRows: range is [from, to) by rowIndex; counts and nextRowIndex per request', async (storage) => {
    const outcomes = [4, 0, 2, 1, 3].map((i) =>
      row('r1', i, i % 2 === 1 ? { status: 'failed', action: undefined, patientId: undefined, reason: 'zip-1: must be 5 digits; dob: required' } : {}),
    );
    await storage.bulkRows.putMany(outcomes);
    await storage.bulkRows.putMany([row('r2', 0), row('r2', 9)]);
    await storage.bulkRows.putMany([]);
    const sorted = [...outcomes].sort((a, b) => a.rowIndex - b.rowIndex);
    expect(await storage.bulkRows.range('r1', 0, 5)).toEqual(sorted);
    expect(await storage.bulkRows.range('r1', 1, 3)).toEqual(sorted.slice(1, 3));
    expect(await storage.bulkRows.range('r1', 3, 1_000_000)).toEqual(sorted.slice(3));
    expect(await storage.bulkRows.range('r1', 5, 10)).toEqual([]);
    expect(await storage.bulkRows.counts('r1')).toEqual({ total: 5, failed: 2 });
    expect(await storage.bulkRows.nextRowIndex('r1')).toBe(5);
    expect(await storage.bulkRows.counts('r2')).toEqual({ total: 2, failed: 0 });
    expect(await storage.bulkRows.nextRowIndex('r2')).toBe(10);
    const failed = (await storage.bulkRows.range('r1', 1, 2))[0]!;
    expect(failed).toEqual({ requestId: 'r1', rowIndex: 1, status: 'failed', reason: 'zip-1: must be 5 digits; dob: required' });
  });

  test('bulkRows: putMany replaces a stored outcome, so replaying a batch is harmless', async (storage) => {
    await storage.bulkRows.putMany([row('r', 0), row('r', 1, { status: 'failed', action: undefined, patientId: undefined, reason: 'first' })]);
    const replay = [row('r', 0, { action: 'updated', patientId: 'p-x' }), row('r', 1)];
    await storage.bulkRows.putMany(replay);
    await storage.bulkRows.putMany(replay);
    expect(await storage.bulkRows.range('r', 0, 2)).toEqual(replay);
    expect(await storage.bulkRows.counts('r')).toEqual({ total: 2, failed: 0 });
    // A batch naming one row twice keeps the last, as two sequential puts would.
    await storage.bulkRows.putMany([row('r', 2, { reason: 'first' }), row('r', 2, { status: 'failed', reason: 'second' })]);
    expect((await storage.bulkRows.range('r', 2, 3))[0]).toMatchObject({ status: 'failed', reason: 'second' });
    expect(await storage.bulkRows.counts('r')).toEqual({ total: 3, failed: 1 });
  });

  test('bulkRows: a large batch is stored whole', async (storage) => {
    const outcomes = Array.from({ length: 2_500 }, (_, i) => row('big', i, i % 7 === 0 ? { status: 'failed', reason: 'bad' } : {}));
    await storage.bulkRows.putMany(outcomes);
    expect(await storage.bulkRows.counts('big')).toEqual({ total: 2_500, failed: outcomes.filter((o) => o.status === 'failed').length });
    expect(await storage.bulkRows.nextRowIndex('big')).toBe(2_500);
    expect(await storage.bulkRows.range('big', 1_000, 1_003)).toEqual(outcomes.slice(1_000, 1_003));
  });

  // ----- documents

  test('documents: insert, get, by file name, list by patient oldest first, update, scoped', async (storage, build) => {
    const later = build.document(ACCOUNT_A, 'p1', { createdAt: at(5) });
    const { queryId: _q, ...upload } = build.document(ACCOUNT_A, 'p1', { source: 'upload', conversionStatus: 'waiting-upload', createdAt: at(1) });
    const otherPatient = build.document(ACCOUNT_A, 'p2');
    const foreign = build.document(ACCOUNT_B, 'p1', { fileName: later.fileName });
    for (const document of [later, upload, otherPatient, foreign]) await storage.documents.insert(document);
    expect(await storage.documents.get(ACCOUNT_A, later.id)).toEqual(later);
    expect(await storage.documents.get(ACCOUNT_A, upload.id)).toEqual(upload);
    expect(await storage.documents.get(ACCOUNT_B, later.id)).toBeUndefined();
    expect(await storage.documents.getByFileName(ACCOUNT_A, later.fileName)).toEqual(later);
    expect(await storage.documents.getByFileName(ACCOUNT_B, later.fileName)).toEqual(foreign);
    expect(await storage.documents.getByFileName(ACCOUNT_A, 'missing.xml')).toBeUndefined();
    expect(ids(await storage.documents.listByPatient(ACCOUNT_A, 'p1'))).toEqual([upload.id, later.id]);
    expect(await storage.documents.listByPatient(ACCOUNT_B, 'p2')).toEqual([]);

    const converted: DocumentRecord = { ...later, conversionStatus: 'failed', conversionError: 'CCDA_INVALID', size: 12 };
    expect(await storage.documents.update(converted)).toEqual(converted);
    expect(await storage.documents.get(ACCOUNT_A, later.id)).toEqual(converted);
    expect(await storage.documents.update({ ...converted, accountId: ACCOUNT_B })).toBeUndefined();
    expect(await storage.documents.update(build.document(ACCOUNT_A, 'p1'))).toBeUndefined();
  });

  // ----- document queries

  test('documentQueries: insert, get, latest for patient, update, scoped', async (storage, build) => {
    expect(await storage.documentQueries.latestForPatient(ACCOUNT_A, 'p1')).toBeUndefined();
    const older = build.documentQuery(ACCOUNT_A, 'p1', { createdAt: at(1) });
    const { metadata: _m, ...newer } = build.documentQuery(ACCOUNT_A, 'p1', { createdAt: at(2) });
    const otherPatient = build.documentQuery(ACCOUNT_A, 'p2', { createdAt: at(3) });
    for (const query of [newer, older, otherPatient]) await storage.documentQueries.insert(query);
    expect(await storage.documentQueries.get(ACCOUNT_A, older.id)).toEqual(older);
    expect(await storage.documentQueries.get(ACCOUNT_B, older.id)).toBeUndefined();
    expect(await storage.documentQueries.latestForPatient(ACCOUNT_A, 'p1')).toEqual(newer);
    expect(await storage.documentQueries.latestForPatient(ACCOUNT_B, 'p1')).toBeUndefined();
    const done: DocumentQuery = { ...older, download: { status: 'completed', total: 3, successful: 3, errors: 0 }, updatedAt: at(9) };
    expect(await storage.documentQueries.update(done)).toEqual(done);
    expect(await storage.documentQueries.get(ACCOUNT_A, older.id)).toEqual(done);
    expect(await storage.documentQueries.update({ ...done, accountId: ACCOUNT_B })).toBeUndefined();
    expect(await storage.documentQueries.update(build.documentQuery(ACCOUNT_A, 'p1'))).toBeUndefined();
  });

  test('documentQueries: the progress of a bulk import counts its queries by state, in its account only', async (storage, build) => {
    const none = { total: 0, processing: 0, completed: 0, failed: 0 };
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_A, 'bulk-1')).toEqual(none);
    const ended = (status: 'completed' | 'failed') => ({ status, total: 1, successful: status === 'completed' ? 1 : 0, errors: status === 'failed' ? 1 : 0 });
    const queries = ['p1', 'p2', 'p3', 'p4'].map((patientId) => ({ ...build.documentQuery(ACCOUNT_A, patientId), bulkRequestId: 'bulk-1' }));
    const unrelated = build.documentQuery(ACCOUNT_A, 'p5');
    const otherImport = { ...build.documentQuery(ACCOUNT_A, 'p6'), bulkRequestId: 'bulk-2' };
    for (const query of [...queries, unrelated, otherImport]) await storage.documentQueries.insert(query);
    expect(await storage.documentQueries.get(ACCOUNT_A, queries[0]!.id)).toEqual(queries[0]);
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_A, 'bulk-1')).toEqual({ total: 4, processing: 4, completed: 0, failed: 0 });
    await storage.documentQueries.update({ ...queries[0]!, download: ended('completed'), convert: ended('completed') });
    await storage.documentQueries.update({ ...queries[1]!, download: ended('failed'), convert: ended('failed') });
    // One step ended, the other still running: the query is still processing.
    await storage.documentQueries.update({ ...queries[2]!, download: ended('completed') });
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_A, 'bulk-1')).toEqual({ total: 4, processing: 2, completed: 1, failed: 1 });
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_B, 'bulk-1')).toEqual(none);
    expect(await storage.documentQueries.progressOfBulkRequest(ACCOUNT_A, 'bulk-2')).toEqual({ total: 1, processing: 1, completed: 0, failed: 0 });
  });

  // ----- FHIR resources

  test('fhirResources: putMany inserts or replaces; listByPatient orders by type then id, optionally filtered', async (storage, build) => {
    const condition2 = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Condition', id: 'c2' });
    const condition1 = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Condition', id: 'c1' });
    const allergy = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'AllergyIntolerance', id: 'z9' });
    const observation = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Observation', id: 'a0' });
    await storage.fhirResources.putMany([condition2, observation, condition1, allergy]);
    await storage.fhirResources.putMany([build.fhirResource(ACCOUNT_A, 'p2', { id: 'c1' }), build.fhirResource(ACCOUNT_B, 'p1', { id: 'c1' })]);
    await storage.fhirResources.putMany([]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1')).toEqual([allergy, condition1, condition2, observation]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1', ['Observation', 'Condition'])).toEqual([condition1, condition2, observation]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1', [])).toEqual([]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p3')).toEqual([]);

    const merged = { ...condition1, resource: { ...condition1.resource, note: [{ text: 'merged' }] }, sourceDocumentIds: ['d1', 'd2'], updatedAt: at(4) };
    await storage.fhirResources.putMany([merged, { ...condition2, sourceDocumentIds: ['x'] }, condition2]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1', ['Condition'])).toEqual([merged, condition2]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p2')).toHaveLength(1);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_B, 'p1')).toHaveLength(1);
  });

  test('fhirResources: resources come back exactly as written, key order included', async (storage, build) => {
    const resource = build.fhirResource(ACCOUNT_A, 'p1', { id: 'r1' });
    resource.resource = { resourceType: 'Observation', id: 'r1', status: 'final', valueQuantity: { value: 7.25, unit: 'mmol/L' }, zeta: null, alpha: [1, 'two', { three: true }] };
    await storage.fhirResources.putMany([resource]);
    const [read] = await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1');
    expect(JSON.stringify(read!.resource)).toBe(JSON.stringify(resource.resource));
    (read!.resource as { status: string }).status = 'mutated';
    expect((await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1'))[0]!.resource.status).toBe('final');
  });

  test('fhirResources: removeMany removes the patient’s given keys only; missing ones are ignored', async (storage, build) => {
    const keep = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Condition', id: 'keep' });
    const drop = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Condition', id: 'drop' });
    const sameIdOtherType = build.fhirResource(ACCOUNT_A, 'p1', { resourceType: 'Observation', id: 'drop' });
    const otherPatient = build.fhirResource(ACCOUNT_A, 'p2', { resourceType: 'Condition', id: 'drop' });
    const foreign = build.fhirResource(ACCOUNT_B, 'p1', { resourceType: 'Condition', id: 'drop' });
    await storage.fhirResources.putMany([keep, drop, sameIdOtherType, otherPatient, foreign]);
    await storage.fhirResources.removeMany(ACCOUNT_A, 'p1', [
      { resourceType: 'Condition', id: 'drop' },
      { resourceType: 'Condition', id: 'never-existed' },
    ]);
    await storage.fhirResources.removeMany(ACCOUNT_A, 'p1', []);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p1')).toEqual([keep, sameIdOtherType]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, 'p2')).toEqual([otherPatient]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_B, 'p1')).toEqual([foreign]);
  });

  // ----- consolidated queries

  test('consolidatedQueries: insert, get, processing oldest first, by patient newest first, update, scoped', async (storage, build) => {
    const first = build.consolidatedQuery(ACCOUNT_A, 'p1', { createdAt: at(1), metadata: { k: 'v' } });
    const second = build.consolidatedQuery(ACCOUNT_A, 'p1', { createdAt: at(2) });
    const done = build.consolidatedQuery(ACCOUNT_A, 'p1', { createdAt: at(3), status: 'completed', conversionType: 'pdf', filters: {} });
    const otherPatient = build.consolidatedQuery(ACCOUNT_A, 'p2');
    for (const query of [done, second, otherPatient, first]) await storage.consolidatedQueries.insert(query);
    expect(await storage.consolidatedQueries.get(ACCOUNT_A, first.id)).toEqual(first);
    expect(await storage.consolidatedQueries.get(ACCOUNT_B, first.id)).toBeUndefined();
    expect(ids(await storage.consolidatedQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([first.id, second.id]);
    expect(ids(await storage.consolidatedQueries.listByPatient(ACCOUNT_A, 'p1'))).toEqual([done.id, second.id, first.id]);
    expect(await storage.consolidatedQueries.listByPatient(ACCOUNT_B, 'p1')).toEqual([]);
    const failed: ConsolidatedQuery = { ...first, status: 'failed', updatedAt: at(7) };
    expect(await storage.consolidatedQueries.update(failed)).toEqual(failed);
    expect(ids(await storage.consolidatedQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([second.id]);
    expect(await storage.consolidatedQueries.update({ ...failed, accountId: ACCOUNT_B, status: 'processing' })).toBeUndefined();
    expect(await storage.consolidatedQueries.get(ACCOUNT_A, first.id)).toEqual(failed);
  });

  // ----- network queries

  test('networkQueries: insert, get (scoped), processing oldest first, update, pruneFinished takes only ended ones past the cut, oldest first', async (storage, build) => {
    const first = build.networkQuery(ACCOUNT_A, 'p1', { createdAt: at(1), metadata: { k: 'v' } });
    const second = build.networkQuery(ACCOUNT_A, 'p1', { createdAt: at(2) });
    const ended = build.networkQuery(ACCOUNT_A, 'p1', { sources: [{ type: 'pharmacy', status: 'failed', startedAt: at(0), completedAt: at(1) }], updatedAt: at(1) });
    const otherPatient = build.networkQuery(ACCOUNT_A, 'p2');
    for (const query of [ended, second, otherPatient, first]) await storage.networkQueries.insert(query);
    expect(await storage.networkQueries.get(ACCOUNT_A, first.id)).toEqual(first);
    expect(await storage.networkQueries.get(ACCOUNT_B, first.id)).toBeUndefined();
    expect(ids(await storage.networkQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([first.id, second.id]);
    expect(await storage.networkQueries.listProcessing(ACCOUNT_B, 'p1')).toEqual([]);

    const done: NetworkQuery = { ...first, sources: first.sources.map((source) => ({ ...source, status: 'completed', completedAt: at(5) })), updatedAt: at(5) };
    expect(await storage.networkQueries.update(done)).toEqual(done);
    expect(ids(await storage.networkQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([second.id]);
    expect(await storage.networkQueries.update({ ...done, accountId: ACCOUNT_B })).toBeUndefined();

    // Ended at 1 and 5; running ones never go.
    expect(await storage.networkQueries.pruneFinished(at(6), 1)).toBe(1);
    expect(await storage.networkQueries.get(ACCOUNT_A, ended.id)).toBeUndefined();
    expect(await storage.networkQueries.pruneFinished(at(5), 10)).toBe(0);
    expect(await storage.networkQueries.pruneFinished(at(6), 10)).toBe(1);
    expect(ids(await storage.networkQueries.listProcessing(ACCOUNT_A, 'p1'))).toEqual([second.id]);
    expect(await storage.networkQueries.get(ACCOUNT_A, otherPatient.id)).toEqual(otherPatient);
  });

  test('networkQueries: two sources ending at once in two transactions (getForUpdate, then update) both land', async (storage, build) => {
    const query = build.networkQuery(ACCOUNT_A, 'p1', {
      sources: [
        { type: 'pharmacy', status: 'processing', startedAt: at(1) },
        { type: 'lab', status: 'processing', startedAt: at(1) },
      ],
    });
    await storage.networkQueries.insert(query);
    const end = (type: 'pharmacy' | 'lab') =>
      storage.transaction(async (tx) => {
        const held = (await tx.networkQueries.getForUpdate(ACCOUNT_A, query.id))!;
        // Let the other transaction read too, as two workers would, before either writes.
        await new Promise<void>((resume) => setTimeout(resume, 20));
        await tx.networkQueries.update({ ...held, sources: held.sources.map((source) => (source.type === type ? { ...source, status: 'completed', completedAt: at(2) } : source)) });
      });
    await Promise.all([end('pharmacy'), end('lab')]);
    const stored = (await storage.networkQueries.get(ACCOUNT_A, query.id))!;
    expect(stored.sources.map((source) => [source.type, source.status])).toEqual([
      ['pharmacy', 'completed'],
      ['lab', 'completed'],
    ]);
    expect(await storage.networkQueries.getForUpdate(ACCOUNT_B, query.id)).toBeUndefined();
  });

  // ----- webhook endpoints

  test('webhook endpoints: insert, get and list scoped to the account, oldest first (ties by id), count', async (storage, build) => {
    const later = build.webhookEndpoint(ACCOUNT_A, { createdAt: at(5), eventTypes: [] });
    const first = build.webhookEndpoint(ACCOUNT_A, { createdAt: at(1), statusDetail: 'Ping answered' });
    const sameTime = build.webhookEndpoint(ACCOUNT_A, { createdAt: at(1), enabled: false });
    const other = build.webhookEndpoint(ACCOUNT_B);
    for (const endpoint of [later, sameTime, other, first]) await storage.webhookEndpoints.insert(endpoint);
    await expect(storage.webhookEndpoints.insert(first)).rejects.toThrow();
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, first.id)).toEqual(first);
    expect(await storage.webhookEndpoints.get(ACCOUNT_B, first.id)).toBeUndefined();
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, 'missing')).toBeUndefined();
    expect(await storage.webhookEndpoints.list(ACCOUNT_A)).toEqual([first, sameTime, later]);
    expect(await storage.webhookEndpoints.list(ACCOUNT_B)).toEqual([other]);
    expect(await storage.webhookEndpoints.list('nobody')).toEqual([]);
    expect(await storage.webhookEndpoints.count(ACCOUNT_A)).toBe(3);
    expect(await storage.webhookEndpoints.count('nobody')).toBe(0);
  });

  test('webhook endpoints: update replaces (not another account\'s), remove is scoped and idempotent', async (storage, build) => {
    const endpoint = build.webhookEndpoint(ACCOUNT_A);
    await storage.webhookEndpoints.insert(endpoint);
    const changed: WebhookEndpoint = { ...endpoint, url: 'https://example.org/x', enabled: false, eventTypes: ['medical.*'], statusDetail: 'Disabled', previousSecret: 'whsec_b2xk', previousSecretUntil: at(90), updatedAt: at(9) };
    expect(await storage.webhookEndpoints.update(changed)).toEqual(changed);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual(changed);
    expect(await storage.webhookEndpoints.update({ ...changed, accountId: ACCOUNT_B, description: 'stolen' })).toBeUndefined();
    expect(await storage.webhookEndpoints.update(build.webhookEndpoint(ACCOUNT_A))).toBeUndefined();
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual(changed);
    expect(await storage.webhookEndpoints.remove(ACCOUNT_B, endpoint.id)).toBe(false);
    expect(await storage.webhookEndpoints.remove(ACCOUNT_A, endpoint.id)).toBe(true);
    expect(await storage.webhookEndpoints.remove(ACCOUNT_A, endpoint.id)).toBe(false);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toBeUndefined();
  });

  test('webhook endpoints: the failure clock is set once (the first failure kept), cleared, never written by update, and scoped', async (storage, build) => {
    const endpoint = build.webhookEndpoint(ACCOUNT_A);
    await storage.webhookEndpoints.insert(endpoint);
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, at(5))).toBe(at(5));
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, at(9))).toBe(at(5));
    expect((await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id))!.failingSince).toBe(at(5));
    // update writes everything but the clock, and answers the endpoint as stored.
    const renamed = await storage.webhookEndpoints.update({ ...endpoint, description: 'renamed', updatedAt: at(10) });
    expect(renamed).toEqual({ ...endpoint, description: 'renamed', updatedAt: at(10), failingSince: at(5) });
    await storage.webhookEndpoints.update({ ...endpoint, description: 'renamed', updatedAt: at(10), failingSince: at(1) });
    expect((await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id))!.failingSince).toBe(at(5));
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_B, endpoint.id, at(1))).toBeUndefined();
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, 'missing', null)).toBeUndefined();
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, null)).toBeNull();
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual({ ...endpoint, description: 'renamed', updatedAt: at(10) });
    expect(await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, at(20))).toBe(at(20));
    // Inserted with a clock, it keeps it.
    const failing = build.webhookEndpoint(ACCOUNT_A, { failingSince: at(3) });
    await storage.webhookEndpoints.insert(failing);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, failing.id)).toEqual(failing);
  });

  test('webhook endpoints: setStatusDetail writes an enabled endpoint only; disable turns an enabled one off once, with its condition on the failure clock', async (storage, build) => {
    const endpoint = build.webhookEndpoint(ACCOUNT_A, { statusDetail: 'Ping answered' });
    await storage.webhookEndpoints.insert(endpoint);
    expect(await storage.webhookEndpoints.setStatusDetail(ACCOUNT_A, endpoint.id, 'Unhealthy: parked', at(3))).toBe(true);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual({ ...endpoint, statusDetail: 'Unhealthy: parked', updatedAt: at(3) });
    expect(await storage.webhookEndpoints.setStatusDetail(ACCOUNT_B, endpoint.id, 'x', at(4))).toBe(false);

    // Not failing, or not failing long enough: stays on.
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: 'Disabled: failing', updatedAt: at(6), failingSinceAtMost: at(5) })).toBeUndefined();
    await storage.webhookEndpoints.setFailingSince(ACCOUNT_A, endpoint.id, at(5));
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: 'Disabled: failing', updatedAt: at(6), failingSinceAtMost: at(4) })).toBeUndefined();
    expect(await storage.webhookEndpoints.disable(ACCOUNT_B, endpoint.id, { statusDetail: 'Disabled: failing', updatedAt: at(6) })).toBeUndefined();
    const off = { ...endpoint, enabled: false, statusDetail: 'Disabled: failing', updatedAt: at(6), failingSince: at(5) };
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: 'Disabled: failing', updatedAt: at(6), failingSinceAtMost: at(5) })).toEqual(off);
    // Off already: neither turned off again nor given another detail by the delivery pass.
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: 'Disabled: gone', updatedAt: at(7) })).toBeUndefined();
    expect(await storage.webhookEndpoints.setStatusDetail(ACCOUNT_A, endpoint.id, null, at(8))).toBe(false);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual(off);
    // Without a condition, an enabled endpoint is turned off whatever its clock.
    const other = build.webhookEndpoint(ACCOUNT_A);
    await storage.webhookEndpoints.insert(other);
    expect(await storage.webhookEndpoints.disable(ACCOUNT_A, other.id, { statusDetail: 'Disabled: gone', updatedAt: at(9) })).toEqual({ ...other, enabled: false, statusDetail: 'Disabled: gone', updatedAt: at(9) });
  });

  test('webhook endpoints: of several disables at once, exactly one turns the endpoint off', async (storage, build) => {
    const endpoint = build.webhookEndpoint(ACCOUNT_A, { failingSince: at(1) });
    await storage.webhookEndpoints.insert(endpoint);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, index) => storage.webhookEndpoints.disable(ACCOUNT_A, endpoint.id, { statusDetail: `Disabled by ${index}`, updatedAt: at(10), failingSinceAtMost: at(5) })),
    );
    const winners = results.filter((result) => result !== undefined);
    expect(winners).toHaveLength(1);
    expect(await storage.webhookEndpoints.get(ACCOUNT_A, endpoint.id)).toEqual(winners[0]);
  });

  test('webhookSettings: put keeps the stored failure clock; the default endpoint\'s clock, status detail and disable work like an endpoint\'s', async (storage, build) => {
    expect(await storage.webhookSettings.setFailingSince(ACCOUNT_A, at(1))).toBeUndefined();
    expect(await storage.webhookSettings.setStatusDetail(ACCOUNT_A, 'x', at(1))).toBe(false);
    expect(await storage.webhookSettings.disable(ACCOUNT_A, { statusDetail: 'Disabled', updatedAt: at(1) })).toBeUndefined();
    const settings = build.webhookSettings(ACCOUNT_A);
    await storage.webhookSettings.put({ ...settings, failingSince: at(2) });
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual({ ...settings, failingSince: at(2) });
    expect(await storage.webhookSettings.setFailingSince(ACCOUNT_A, at(4))).toBe(at(2));
    await storage.webhookSettings.put({ ...settings, webhookStatusDetail: 'Ping answered', updatedAt: at(3) });
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual({ ...settings, webhookStatusDetail: 'Ping answered', updatedAt: at(3), failingSince: at(2) });
    expect(await storage.webhookSettings.setFailingSince(ACCOUNT_A, null)).toBeNull();
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual({ ...settings, webhookStatusDetail: 'Ping answered', updatedAt: at(3) });
    expect(await storage.webhookSettings.setFailingSince(ACCOUNT_A, at(6))).toBe(at(6));

    expect(await storage.webhookSettings.setStatusDetail(ACCOUNT_A, 'Unhealthy: parked', at(7))).toBe(true);
    expect(await storage.webhookSettings.disable(ACCOUNT_A, { statusDetail: 'Disabled: failing', updatedAt: at(8), failingSinceAtMost: at(5) })).toBeUndefined();
    const off = { ...settings, webhookEnabled: false, webhookStatusDetail: 'Disabled: failing', updatedAt: at(8), failingSince: at(6) };
    const results = await Promise.all([1, 2, 3].map(() => storage.webhookSettings.disable(ACCOUNT_A, { statusDetail: 'Disabled: failing', updatedAt: at(8), failingSinceAtMost: at(6) })));
    expect(results.filter((result) => result !== undefined)).toEqual([off]);
    expect(await storage.webhookSettings.setStatusDetail(ACCOUNT_A, null, at(9))).toBe(false);
    expect(await storage.webhookSettings.get(ACCOUNT_A)).toEqual(off);
    expect(await storage.webhookSettings.get(ACCOUNT_B)).toBeUndefined();
  });

  test('outbox: a claim may take one endpoint\'s messages only (null: the default one), and at most so many of each endpoint, the oldest', async (storage, build) => {
    const rows = [
      build.outbox(ACCOUNT_A, { createdAt: at(1), nextAttemptAt: at(1) }),
      build.outbox(ACCOUNT_A, { createdAt: at(2), nextAttemptAt: at(2), endpointId: 'e1', messageId: 'm1' }),
      build.outbox(ACCOUNT_A, { createdAt: at(3), nextAttemptAt: at(3) }),
      build.outbox(ACCOUNT_A, { createdAt: at(4), nextAttemptAt: at(4), endpointId: 'e1', messageId: 'm2' }),
      build.outbox(ACCOUNT_A, { createdAt: at(5), nextAttemptAt: at(5), endpointId: 'e2', messageId: 'm3' }),
      build.outbox(ACCOUNT_A, { createdAt: at(6), nextAttemptAt: at(6) }),
      build.outbox(ACCOUNT_B, { createdAt: at(7), nextAttemptAt: at(7) }),
      build.outbox(ACCOUNT_B, { createdAt: at(8), nextAttemptAt: at(8), endpointId: 'e1', messageId: 'm4' }),
    ];
    for (const message of rows) await storage.outbox.add(message);
    const [a1, e1a, a2, e1b, e2, a3, b1, b1e1] = rows.map((message) => message.id);
    const lease = (owner: string, extra: { accountId?: string; endpointId?: string | null; perEndpoint?: number } = {}) => ({ owner, leaseMs: 60_000, ...extra });
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w1', { accountId: ACCOUNT_A, endpointId: 'e1' })))).toEqual([e1a, e1b]);
    await storage.outbox.releaseClaims('w1');
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w1', { accountId: ACCOUNT_A, endpointId: null, perEndpoint: 2 })))).toEqual([a1, a2]);
    await storage.outbox.releaseClaims('w1');
    // One of each endpoint, the default endpoints of A and B told apart.
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w2', { perEndpoint: 1 })))).toEqual([a1, e1a, e2, b1, b1e1]);
    expect(ids(await storage.outbox.claim(at(50), 2, lease('w3', { perEndpoint: 1 })))).toEqual([a2, e1b]);
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w4', { perEndpoint: 5 })))).toEqual([a3]);
  });

  test('outbox: deliveries keep their endpoint and message id; removeEndpointDeliveries deletes one endpoint\'s only', async (storage, build) => {
    const message = build.outbox(ACCOUNT_A);
    const toE1 = build.outbox(ACCOUNT_A, { id: `${message.id}:e1`, messageId: message.id, endpointId: 'e1', streamKey: `${message.streamKey}@e1` });
    const parkedE1 = build.outbox(ACCOUNT_A, { endpointId: 'e1', messageId: 'm0', status: 'parked', attempts: 8 });
    const toE2 = build.outbox(ACCOUNT_A, { id: `${message.id}:e2`, messageId: message.id, endpointId: 'e2' });
    const otherAccount = build.outbox(ACCOUNT_B, { endpointId: 'e1', messageId: 'm9' });
    for (const row of [message, toE1, parkedE1, toE2, otherAccount]) await storage.outbox.add(row);
    expect(await storage.outbox.get(ACCOUNT_A, toE1.id)).toEqual(toE1);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(message);
    const claimed = await storage.outbox.claim(at(10), 10, { owner: 'w', leaseMs: 60_000, accountId: ACCOUNT_A });
    expect(claimed.find((m) => m.id === toE1.id)).toEqual(toE1);
    expect(await storage.outbox.removeEndpointDeliveries(ACCOUNT_B, 'e2')).toBe(0);
    expect(await storage.outbox.removeEndpointDeliveries(ACCOUNT_A, 'e1')).toBe(2);
    expect(await storage.outbox.removeEndpointDeliveries(ACCOUNT_A, 'e1')).toBe(0);
    expect((await storage.outbox.list(ACCOUNT_A)).map((m) => m.id).sort()).toEqual([message.id, toE2.id].sort());
    expect(await storage.outbox.get(ACCOUNT_B, otherAccount.id)).toEqual(otherAccount);
  });

  test('outbox: countsByEndpoint counts each endpoint\'s messages by state, failing = pending after a failed attempt', async (storage, build) => {
    for (const row of [
      build.outbox(ACCOUNT_A),
      build.outbox(ACCOUNT_A, { attempts: 2 }),
      build.outbox(ACCOUNT_A, { status: 'delivered', attempts: 1, deliveredAt: at(1) }),
      build.outbox(ACCOUNT_A, { endpointId: 'e1', messageId: 'm1', status: 'parked', attempts: 8 }),
      build.outbox(ACCOUNT_A, { endpointId: 'e1', messageId: 'm2', attempts: 1 }),
      build.outbox(ACCOUNT_B, { endpointId: 'e1', messageId: 'm3' }),
    ]) {
      await storage.outbox.add(row);
    }
    const counts = (await storage.outbox.countsByEndpoint(ACCOUNT_A)).sort((a, b) => String(a.endpointId).localeCompare(String(b.endpointId)));
    expect(counts).toEqual([
      { endpointId: 'e1', pending: 1, failing: 1, delivered: 0, parked: 1 },
      { endpointId: null, pending: 2, failing: 1, delivered: 1, parked: 0 },
    ]);
    expect(await storage.outbox.countsByEndpoint('nobody')).toEqual([]);
  });

  test('outbox: listForEndpoint gives one endpoint\'s deliveries (null: the default), by status and creation window, oldest first, limited', async (storage, build) => {
    const d1 = build.outbox(ACCOUNT_A, { createdAt: at(1), status: 'delivered', attempts: 1, deliveredAt: at(2) });
    const d2 = build.outbox(ACCOUNT_A, { createdAt: at(3), status: 'parked', attempts: 8 });
    const e1 = build.outbox(ACCOUNT_A, { createdAt: at(2), endpointId: 'e1', messageId: 'm1', status: 'parked', attempts: 8 });
    const e2 = build.outbox(ACCOUNT_A, { createdAt: at(1), endpointId: 'e1', messageId: 'm2' });
    const e3 = build.outbox(ACCOUNT_A, { createdAt: at(5), endpointId: 'e1', messageId: 'm3', status: 'parked', attempts: 8 });
    const other = build.outbox(ACCOUNT_B, { createdAt: at(1), endpointId: 'e1', messageId: 'm4' });
    for (const row of [e3, d1, e1, other, d2, e2]) await storage.outbox.add(row);
    const ids = (rows: OutboxMessage[]) => rows.map((row) => row.id);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, null, {}, 10))).toEqual([d1.id, d2.id]);
    expect(await storage.outbox.listForEndpoint(ACCOUNT_A, 'e1', {}, 10)).toEqual([e2, e1, e3]);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, 'e1', {}, 2))).toEqual([e2.id, e1.id]);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, 'e1', { status: 'parked' }, 10))).toEqual([e1.id, e3.id]);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, 'e1', { since: at(2), until: at(5) }, 10))).toEqual([e1.id]);
    expect(ids(await storage.outbox.listForEndpoint(ACCOUNT_A, null, { status: 'parked', since: at(3) }, 10))).toEqual([d2.id]);
    expect(await storage.outbox.listForEndpoint(ACCOUNT_B, null, {}, 10)).toEqual([]);
  });

  // ----- webhook delivery log

  const attempt = (id: string, accountId: string, overrides: Partial<WebhookAttempt> = {}): WebhookAttempt => ({
    id,
    accountId,
    deliveryId: 'd1',
    messageId: 'm1',
    type: 'medical.document-conversion',
    attemptedAt: at(0),
    outcome: 'failed',
    statusCode: 503,
    latencyMs: 12,
    error: 'the receiver answered HTTP 503',
    ...overrides,
  });

  test('webhook attempts: list newest first (ties by id descending), filtered, paged after a given attempt, scoped by account', async (storage) => {
    const rows = [
      attempt('a1', ACCOUNT_A, { attemptedAt: at(1), patientId: 'p1' }),
      attempt('a2', ACCOUNT_A, { attemptedAt: at(2), endpointId: 'e1', outcome: 'delivered', statusCode: 200, error: undefined }),
      attempt('a3', ACCOUNT_A, { attemptedAt: at(2), type: 'network-query.lab', patientId: 'p2' }),
      attempt('a4', ACCOUNT_A, { attemptedAt: at(3), endpointId: 'e1', statusCode: undefined, error: 'no answer within 4000 ms', latencyMs: 4000, test: true }),
      attempt('b1', ACCOUNT_B, { attemptedAt: at(2) }),
    ];
    for (const row of rows) if (row.error === undefined) delete row.error;
    for (const row of rows) if (row.statusCode === undefined) delete row.statusCode;
    await storage.webhookAttempts.addMany(rows.slice(0, 2));
    await storage.webhookAttempts.addMany(rows.slice(2));
    await storage.webhookAttempts.addMany([]);
    await expect(storage.webhookAttempts.addMany([rows[0]!])).rejects.toThrow();
    const ids = (list: WebhookAttempt[]) => list.map((row) => row.id);
    expect(await storage.webhookAttempts.list(ACCOUNT_A, {}, 10)).toEqual([rows[3], rows[2], rows[1], rows[0]]);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, {}, 2))).toEqual(['a4', 'a3']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, {}, 2, { attemptedAt: at(2), id: 'a3' }))).toEqual(['a2', 'a1']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, {}, 10, { attemptedAt: at(1), id: 'a1' }))).toEqual([]);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { endpointId: 'e1' }, 10))).toEqual(['a4', 'a2']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { endpointId: null }, 10))).toEqual(['a3', 'a1']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { type: 'network-query.lab' }, 10))).toEqual(['a3']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { patientId: 'p1' }, 10))).toEqual(['a1']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { outcome: 'delivered' }, 10))).toEqual(['a2']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { since: at(2), until: at(3) }, 10))).toEqual(['a3', 'a2']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_A, { endpointId: 'e1', outcome: 'failed', since: at(3) }, 10))).toEqual(['a4']);
    expect(ids(await storage.webhookAttempts.list(ACCOUNT_B, {}, 10))).toEqual(['b1']);
    expect(await storage.webhookAttempts.list('nobody', {}, 10)).toEqual([]);
  });

  test('webhook attempts: prune deletes attempts before the instant, oldest first, at most limit, of every account', async (storage) => {
    await storage.webhookAttempts.addMany([
      attempt('a1', ACCOUNT_A, { attemptedAt: at(1) }),
      attempt('a2', ACCOUNT_A, { attemptedAt: at(3) }),
      attempt('b1', ACCOUNT_B, { attemptedAt: at(2) }),
      attempt('a3', ACCOUNT_A, { attemptedAt: at(10) }),
    ]);
    expect(await storage.webhookAttempts.prune(at(5), 2)).toBe(2);
    expect((await storage.webhookAttempts.list(ACCOUNT_A, {}, 10)).map((row) => row.id)).toEqual(['a3', 'a2']);
    expect(await storage.webhookAttempts.list(ACCOUNT_B, {}, 10)).toEqual([]);
    expect(await storage.webhookAttempts.prune(at(5), 2)).toBe(1);
    expect(await storage.webhookAttempts.prune(at(5), 2)).toBe(0);
    expect((await storage.webhookAttempts.list(ACCOUNT_A, {}, 10)).map((row) => row.id)).toEqual(['a3']);
  });

  // ----- outbox

  test('outbox: add, get (scoped), update replaces the delivery fields', async (storage, build) => {
    const message = build.outbox(ACCOUNT_A);
    await storage.outbox.add(message);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(message);
    expect(await storage.outbox.get(ACCOUNT_B, message.id)).toBeUndefined();
    await expect(storage.outbox.add(message)).rejects.toThrow();
    const retried: OutboxMessage = { ...message, attempts: 1, nextAttemptAt: at(30), lastError: 'HTTP 503' };
    await storage.outbox.update(retried);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(retried);
    const { lastError: _e, ...rest } = retried;
    const delivered: OutboxMessage = { ...rest, status: 'delivered', attempts: 2, deliveredAt: at(31) };
    await storage.outbox.update(delivered);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(delivered);
    await storage.outbox.update({ ...delivered, accountId: ACCOUNT_B, status: 'parked' });
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(delivered);
  });

  test('outbox: due gives pending messages due by now, oldest first (ties by id), limited, optionally one account', async (storage, build) => {
    const old = build.outbox(ACCOUNT_A, { createdAt: at(1), nextAttemptAt: at(50) });
    const sameTimeB = build.outbox(ACCOUNT_B, { createdAt: at(2), nextAttemptAt: at(10) });
    const sameTimeA = build.outbox(ACCOUNT_A, { createdAt: at(2), nextAttemptAt: at(100) });
    const notYet = build.outbox(ACCOUNT_A, { createdAt: at(0), nextAttemptAt: at(101) });
    const delivered = build.outbox(ACCOUNT_A, { createdAt: at(0), status: 'delivered', deliveredAt: at(1) });
    const parked = build.outbox(ACCOUNT_A, { createdAt: at(0), status: 'parked', attempts: 10 });
    // Insert in an order that is neither creation nor id order.
    for (const message of [sameTimeB, notYet, delivered, sameTimeA, parked, old]) await storage.outbox.add(message);
    const [low, high] = [sameTimeA, sameTimeB].sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(ids(await storage.outbox.due(at(100), 10))).toEqual([old.id, low!.id, high!.id]);
    expect(ids(await storage.outbox.due(at(100), 2))).toEqual([old.id, low!.id]);
    expect(ids(await storage.outbox.due(at(100), 10, ACCOUNT_A))).toEqual([old.id, sameTimeA.id]);
    expect(ids(await storage.outbox.due(at(49), 10))).toEqual([sameTimeB.id]);
    expect(await storage.outbox.due(at(9), 10)).toEqual([]);
  });

  test('outbox: deliverable gives due messages not behind a waiting older message of their stream, oldest first, limited', async (storage, build) => {
    // Stream s1: a failing head waiting for its retry holds back the later, due messages of s1 only.
    const s1Head = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(1), nextAttemptAt: at(60) });
    const s1Next = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(2), nextAttemptAt: at(2) });
    // Stream s2: two due messages go together, in creation order; a parked older one holds nothing back.
    const s2Parked = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(0), status: 'parked', attempts: 8 });
    const s2First = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(3), nextAttemptAt: at(3) });
    const s2Second = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(4), nextAttemptAt: at(4) });
    // Stream s3: a due head before a waiting message: the head goes, the waiting one holds back only what follows it.
    const s3Head = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(5), nextAttemptAt: at(5) });
    const s3Waiting = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(6), nextAttemptAt: at(90) });
    const s3Tail = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(7), nextAttemptAt: at(7) });
    // The same stream key in another account is another stream.
    const otherAccount = build.outbox(ACCOUNT_B, { streamKey: 's1', createdAt: at(8), nextAttemptAt: at(8) });
    for (const message of [s3Tail, otherAccount, s1Next, s2Second, s3Waiting, s2Parked, s1Head, s3Head, s2First]) await storage.outbox.add(message);

    expect(ids(await storage.outbox.deliverable(at(50), 10))).toEqual([s2First.id, s2Second.id, s3Head.id, otherAccount.id]);
    expect(ids(await storage.outbox.deliverable(at(50), 2))).toEqual([s2First.id, s2Second.id]);
    expect(ids(await storage.outbox.deliverable(at(50), 10, ACCOUNT_B))).toEqual([otherAccount.id]);
    // Once the head is due, the stream goes on from it; at 100 every pending message is due.
    expect(ids(await storage.outbox.deliverable(at(60), 10, ACCOUNT_A))).toEqual([s1Head.id, s1Next.id, s2First.id, s2Second.id, s3Head.id]);
    expect(ids(await storage.outbox.deliverable(at(100), 10, ACCOUNT_A))).toEqual([
      s1Head.id, s1Next.id, s2First.id, s2Second.id, s3Head.id, s3Waiting.id, s3Tail.id,
    ]);
    // Delivered: no longer holds anything back.
    await storage.outbox.update({ ...s1Head, status: 'delivered', attempts: 1, deliveredAt: at(61) });
    expect(ids(await storage.outbox.deliverable(at(50), 10, ACCOUNT_A))).toEqual([s1Next.id, s2First.id, s2Second.id, s3Head.id]);
    expect((await storage.outbox.get(ACCOUNT_A, s3Tail.id))!.streamKey).toBe('s3');
  });

  test('outbox: claim takes deliverable messages for a lease; no other claim gets them or their stream until it ends', async (storage, build) => {
    const s1Head = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(1), nextAttemptAt: at(1) });
    const s1Next = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(2), nextAttemptAt: at(2) });
    const s2Head = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(3), nextAttemptAt: at(3) });
    const s3Waiting = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(4), nextAttemptAt: at(90) });
    const s3Tail = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(5), nextAttemptAt: at(5) });
    const other = build.outbox(ACCOUNT_B, { streamKey: 's1', createdAt: at(6), nextAttemptAt: at(6) });
    for (const message of [other, s3Tail, s2Head, s1Next, s3Waiting, s1Head]) await storage.outbox.add(message);
    const lease = (owner: string, accountId?: string) => ({ owner, leaseMs: 60_000, ...(accountId === undefined ? {} : { accountId }) });

    // The limit cuts stream s1 after its head: its next message stays behind the claimed head.
    expect(ids(await storage.outbox.claim(at(50), 1, lease('w1')))).toEqual([s1Head.id]);
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w2')))).toEqual([s2Head.id, other.id]);
    expect(await storage.outbox.claim(at(50), 10, lease('w3'))).toEqual([]);
    // Writing a message ends its claim: its stream is free again.
    await storage.outbox.update({ ...s1Head, status: 'delivered', attempts: 1, deliveredAt: at(51) });
    expect(ids(await storage.outbox.claim(at(52), 10, lease('w3', ACCOUNT_A)))).toEqual([s1Next.id]);
    // A lease that ran out (its worker died) is claimed again; the claimed message comes back unchanged.
    const retaken = await storage.outbox.claim(at(50 + 61), 10, lease('w4', ACCOUNT_B));
    expect(retaken).toEqual([other]);
    expect(ids(await storage.outbox.claim(at(100), 10, lease('w5')))).toEqual([s3Waiting.id, s3Tail.id]);
    // A worker hands back what it claimed and did not send; another worker's claims stay.
    await storage.outbox.releaseClaims('w5');
    await storage.outbox.releaseClaims('nobody');
    expect(ids(await storage.outbox.claim(at(100), 10, lease('w6')))).toEqual([s3Waiting.id, s3Tail.id]);
  });

  test('outbox: releaseClaims with ids ends those claims of the owner only; exceptEndpoints leaves endpoints out of a claim', async (storage, build) => {
    const a1 = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(1), nextAttemptAt: at(1) });
    const a2 = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(2), nextAttemptAt: at(2) });
    const e1 = build.outbox(ACCOUNT_A, { streamKey: 's3', createdAt: at(3), nextAttemptAt: at(3), endpointId: 'e1', messageId: 'm1' });
    const e2 = build.outbox(ACCOUNT_A, { streamKey: 's4', createdAt: at(4), nextAttemptAt: at(4), endpointId: 'e2', messageId: 'm2' });
    const b1 = build.outbox(ACCOUNT_B, { streamKey: 's1', createdAt: at(5), nextAttemptAt: at(5) });
    for (const message of [a1, a2, e1, e2, b1]) await storage.outbox.add(message);
    const lease = (owner: string, exceptEndpoints?: { accountId: string; endpointId: string | null }[]) => ({ owner, leaseMs: 60_000, ...(exceptEndpoints ? { exceptEndpoints } : {}) });

    // A's default endpoint and its e2 left out: B's default endpoint is another endpoint, taken.
    const except = [{ accountId: ACCOUNT_A, endpointId: null }, { accountId: ACCOUNT_A, endpointId: 'e2' }];
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w1', except)))).toEqual([e1.id, b1.id]);
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w2', [])))).toEqual([a1.id, a2.id, e2.id]);
    // Only the named claims of that owner end: another owner's naming them changes nothing.
    await storage.outbox.releaseClaims('w2', [e1.id, a1.id]);
    await storage.outbox.releaseClaims('w1', [e1.id, a2.id]);
    await storage.outbox.releaseClaims('w1', []);
    expect(ids(await storage.outbox.claim(at(50), 10, lease('w3')))).toEqual([a1.id, e1.id]);
  });

  test('outbox: two workers claiming at once never both get a message', async (storage, build) => {
    const messages = Array.from({ length: 40 }, (_, index) =>
      build.outbox(index % 2 === 0 ? ACCOUNT_A : ACCOUNT_B, { streamKey: `s${index % 7}`, createdAt: at(index), nextAttemptAt: at(index) }),
    );
    for (const message of messages) await storage.outbox.add(message);
    const claimed: string[] = [];
    await Promise.all(
      ['w1', 'w2', 'w3'].map(async (owner) => {
        for (let round = 0; round < 6; round += 1) {
          for (const message of await storage.outbox.claim(at(100), 5, { owner, leaseMs: 60_000 })) {
            claimed.push(message.id);
            await storage.outbox.update({ ...message, status: 'delivered', attempts: 1, deliveredAt: at(100) });
          }
        }
      }),
    );
    expect(new Set(claimed).size).toBe(claimed.length);
  });

  test('outbox: updateMany replaces many messages at once, ends their claims, and skips missing or foreign ones', async (storage, build) => {
    const first = build.outbox(ACCOUNT_A, { streamKey: 's1', createdAt: at(1), nextAttemptAt: at(1) });
    const second = build.outbox(ACCOUNT_A, { streamKey: 's2', createdAt: at(2), nextAttemptAt: at(2) });
    const foreign = build.outbox(ACCOUNT_B, { streamKey: 's3', createdAt: at(3), nextAttemptAt: at(3) });
    for (const message of [first, second, foreign]) await storage.outbox.add(message);
    expect(ids(await storage.outbox.claim(at(10), 10, { owner: 'w1', leaseMs: 60_000 }))).toEqual([first.id, second.id, foreign.id]);
    const delivered = { ...first, status: 'delivered' as const, attempts: 1, deliveredAt: at(11) };
    const retried = { ...second, attempts: 1, nextAttemptAt: at(20), lastError: 'the receiver answered HTTP 500' };
    await storage.outbox.updateMany([delivered, retried, { ...foreign, accountId: ACCOUNT_A, status: 'delivered', deliveredAt: at(11) }, build.outbox(ACCOUNT_A)]);
    await storage.outbox.updateMany([]);
    expect(await storage.outbox.get(ACCOUNT_A, first.id)).toEqual(delivered);
    expect(await storage.outbox.get(ACCOUNT_A, second.id)).toEqual(retried);
    expect(await storage.outbox.get(ACCOUNT_B, foreign.id)).toEqual(foreign);
    // The rewritten message is free again (its claim ended); the foreign one is still claimed.
    expect(ids(await storage.outbox.claim(at(21), 10, { owner: 'w2', leaseMs: 60_000 }))).toEqual([second.id]);
  });

  test('outbox: pruneDelivered deletes delivered messages older than the cut, oldest first, in batches; never pending or parked', async (storage, build) => {
    const old1 = build.outbox(ACCOUNT_A, { createdAt: at(1), status: 'delivered', attempts: 1, deliveredAt: at(10) });
    const old2 = build.outbox(ACCOUNT_B, { createdAt: at(2), status: 'delivered', attempts: 1, deliveredAt: at(11) });
    const recent = build.outbox(ACCOUNT_A, { createdAt: at(3), status: 'delivered', attempts: 1, deliveredAt: at(90) });
    const parked = build.outbox(ACCOUNT_A, { createdAt: at(0), status: 'parked', attempts: 8 });
    const pending = build.outbox(ACCOUNT_A, { createdAt: at(0), nextAttemptAt: at(0) });
    for (const message of [recent, old2, parked, old1, pending]) await storage.outbox.add(message);

    expect(await storage.outbox.pruneDelivered(at(50), 1)).toBe(1);
    expect(await storage.outbox.get(ACCOUNT_A, old1.id)).toBeUndefined();
    expect(await storage.outbox.pruneDelivered(at(50), 10)).toBe(1);
    expect(await storage.outbox.pruneDelivered(at(50), 10)).toBe(0);
    expect(await storage.outbox.get(ACCOUNT_B, old2.id)).toBeUndefined();
    expect(await storage.outbox.counts(ACCOUNT_A)).toEqual({ pending: 1, delivered: 1, parked: 1 });
  });

  test('outbox: list oldest first, optionally by status; counts per status; scoped', async (storage, build) => {
    expect(await storage.outbox.counts(ACCOUNT_A)).toEqual({ pending: 0, delivered: 0, parked: 0 });
    const pending = build.outbox(ACCOUNT_A, { createdAt: at(3) });
    const delivered = build.outbox(ACCOUNT_A, { createdAt: at(1), status: 'delivered', deliveredAt: at(2) });
    const pending2 = build.outbox(ACCOUNT_A, { createdAt: at(2) });
    const foreign = build.outbox(ACCOUNT_B);
    for (const message of [pending, delivered, pending2, foreign]) await storage.outbox.add(message);
    expect(ids(await storage.outbox.list(ACCOUNT_A))).toEqual([delivered.id, pending2.id, pending.id]);
    expect(ids(await storage.outbox.list(ACCOUNT_A, 'pending'))).toEqual([pending2.id, pending.id]);
    expect(await storage.outbox.list(ACCOUNT_A, 'parked')).toEqual([]);
    // A limit keeps the oldest.
    expect(ids(await storage.outbox.list(ACCOUNT_A, undefined, 2))).toEqual([delivered.id, pending2.id]);
    expect(ids(await storage.outbox.list(ACCOUNT_A, 'pending', 1))).toEqual([pending2.id]);
    expect(await storage.outbox.counts(ACCOUNT_A)).toEqual({ pending: 2, delivered: 1, parked: 0 });
    expect(await storage.outbox.counts(ACCOUNT_B)).toEqual({ pending: 1, delivered: 0, parked: 0 });
  });

  // ----- transactions

  /** Writes through several repositories, as a batch of the bulk import does. */
  const writeBatch = async (tx: StoragePort, build: ReturnType<typeof builders>, requestId: string) => {
    const patients = [build.patient(ACCOUNT_A, { matchKeys: ['tx-key'] }), build.patient(ACCOUNT_A, { matchKeys: ['tx-key'] })];
    await tx.patients.insertMany(patients);
    await tx.bulkRows.putMany(patients.map((patient, i) => row(requestId, i, { patientId: patient.id })));
    const request = (await tx.bulkRequests.get(ACCOUNT_A, requestId))!;
    await tx.bulkRequests.update({ ...request, processed: request.processed + 2, succeeded: request.succeeded + 2 });
    const message = build.outbox(ACCOUNT_A);
    await tx.outbox.add(message);
    return { patients, message };
  };

  test('transaction: commits every write made through tx, and returns what work returns', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
    await storage.bulkRequests.insert(request);
    const { patients, message } = await storage.transaction(async (tx) => {
      const written = await writeBatch(tx, build, request.id);
      // Reads through tx see its own writes.
      expect(await tx.patients.get(ACCOUNT_A, written.patients[0]!.id)).toEqual(written.patients[0]);
      expect(ids(await tx.patients.findByMatchKeys(ACCOUNT_A, ['tx-key']))).toEqual(ids(written.patients));
      expect(await tx.bulkRows.counts(request.id)).toEqual({ total: 2, failed: 0 });
      return written;
    });
    expect(await storage.patients.list(ACCOUNT_A)).toEqual(patients);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['tx-key']))).toEqual(ids(patients));
    expect(await storage.bulkRows.counts(request.id)).toEqual({ total: 2, failed: 0 });
    expect((await storage.bulkRequests.get(ACCOUNT_A, request.id))!.processed).toBe(2);
    expect(await storage.outbox.get(ACCOUNT_A, message.id)).toEqual(message);
  });

  test('transaction: a record written twice inside is found by its latest values only', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { matchKeys: ['first'], externalId: 'first' });
    const outside = build.patient(ACCOUNT_A, { matchKeys: ['first'], externalId: 'outside' });
    await storage.patients.insert(outside);
    const final: Patient = { ...patient, matchKeys: ['third'], externalId: 'third', version: 3 };
    await storage.transaction(async (tx) => {
      await tx.patients.insert(patient);
      await tx.patients.update({ ...patient, matchKeys: ['second'], externalId: 'second' });
      // The transaction reads its own writes' versions: a second update states the first one's.
      expect(await tx.patients.update({ ...patient, matchKeys: ['stale'] })).toBe('stale');
      await tx.patients.update({ ...final, version: 2 });
      await tx.patients.update({ ...outside, matchKeys: ['moved'] });
      for (const key of ['first', 'second']) expect(await tx.patients.findByMatchKeys(ACCOUNT_A, [key])).toEqual([]);
      expect(await tx.patients.findByMatchKeys(ACCOUNT_A, ['third'])).toEqual([final]);
      expect(await tx.patients.findByExternalId(ACCOUNT_A, 'second')).toEqual([]);
      expect(ids(await tx.patients.findByMatchKeys(ACCOUNT_A, ['moved']))).toEqual([outside.id]);
    });
    for (const key of ['first', 'second']) expect(await storage.patients.findByMatchKeys(ACCOUNT_A, [key])).toEqual([]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['third'])).toEqual([final]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['moved']))).toEqual([outside.id]);
    expect(await storage.patients.findByExternalId(ACCOUNT_A, 'third')).toEqual([final]);
  });

  test('transaction: a throw rolls back every write and rethrows the same error', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
    await storage.bulkRequests.insert(request);
    const survivor = build.patient(ACCOUNT_A, { matchKeys: ['tx-key'] });
    await storage.patients.insert(survivor);
    const failure = new Error('boom');
    let written: Awaited<ReturnType<typeof writeBatch>> | undefined;
    await expect(
      storage.transaction(async (tx) => {
        written = await writeBatch(tx, build, request.id);
        await tx.patients.update({ ...survivor, firstName: 'Rolled Back', matchKeys: ['gone'] });
        await tx.patients.remove(ACCOUNT_A, survivor.id);
        await tx.fhirResources.putMany([build.fhirResource(ACCOUNT_A, survivor.id)]);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(written).toBeDefined();
    for (const patient of written!.patients) expect(await storage.patients.get(ACCOUNT_A, patient.id)).toBeUndefined();
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([survivor]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['tx-key', 'gone']))).toEqual([survivor.id]);
    expect(await storage.bulkRows.counts(request.id)).toEqual({ total: 0, failed: 0 });
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(request);
    expect(await storage.outbox.list(ACCOUNT_A)).toEqual([]);
    expect(await storage.fhirResources.listByPatient(ACCOUNT_A, survivor.id)).toEqual([]);
    // The storage is usable afterwards.
    await storage.transaction(async (tx) => tx.patients.insert(build.patient(ACCOUNT_A)));
    expect(await storage.patients.count(ACCOUNT_A)).toBe(2);
  });

  test('transaction: a failed insertMany inside leaves the whole transaction to roll back', async (storage, build) => {
    const existing = build.patient(ACCOUNT_A);
    await storage.patients.insert(existing);
    const first = build.patient(ACCOUNT_A);
    await expect(
      storage.transaction(async (tx) => {
        await tx.patients.insert(first);
        await tx.patients.insertMany([build.patient(ACCOUNT_A), existing]);
      }),
    ).rejects.toThrow();
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([existing]);
  });

  test('transaction: overlapping writes through tx (all settled before work returns) commit together', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
    await storage.bulkRequests.insert(request);
    const stored = build.patient(ACCOUNT_A, { matchKeys: ['old-key'] });
    await storage.patients.insert(stored);
    const created = [build.patient(ACCOUNT_A, { matchKeys: ['new-key'] }), build.patient(ACCOUNT_A, { matchKeys: ['new-key'] })];
    const changed = { ...stored, firstName: 'Changed', matchKeys: ['new-key'] };
    const outcomes = created.map((patient, i) => row(request.id, i, { patientId: patient.id }));
    const next = { ...request, processed: 2, succeeded: 2 };
    const [, , , updated] = await storage.transaction((tx) =>
      settleAll([
        tx.patients.insertMany(created),
        tx.patients.updateMany([changed]),
        tx.bulkRows.putMany(outcomes),
        tx.bulkRequests.updateIfStatus(next, 'processing'),
      ] as const),
    );
    expect(updated).toEqual(next);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['new-key'])).sort()).toEqual(ids([...created, changed]).sort());
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['old-key'])).toEqual([]);
    expect(await storage.patients.get(ACCOUNT_A, stored.id)).toEqual({ ...changed, version: 2 });
    expect(await storage.bulkRows.range(request.id, 0, 10)).toEqual(outcomes);
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(next);
  });

  test('transaction: overlapping writes through tx roll back together when one of them fails', async (storage, build) => {
    const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
    await storage.bulkRequests.insert(request);
    const existing = build.patient(ACCOUNT_A, { matchKeys: ['kept-key'] });
    await storage.patients.insert(existing);
    const fresh = build.patient(ACCOUNT_A, { matchKeys: ['fresh-key'] });
    await expect(
      storage.transaction((tx) =>
        settleAll([
          tx.bulkRows.putMany([row(request.id, 0, { patientId: fresh.id })]),
          tx.patients.insertMany([fresh, existing]),
          tx.bulkRequests.updateIfStatus({ ...request, processed: 1, succeeded: 1 }, 'processing'),
          tx.outbox.add(build.outbox(ACCOUNT_A)),
        ] as const),
      ),
    ).rejects.toThrow();
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([existing]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['fresh-key'])).toEqual([]);
    expect(await storage.bulkRows.counts(request.id)).toEqual({ total: 0, failed: 0 });
    expect(await storage.bulkRequests.get(ACCOUNT_A, request.id)).toEqual(request);
    expect(await storage.outbox.list(ACCOUNT_A)).toEqual([]);
    // Nothing ran after the rollback: the storage takes the same writes afterwards.
    await storage.transaction((tx) => tx.patients.insert(fresh));
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['fresh-key'])).toEqual([fresh]);
  });

  test('transaction: nested calls on tx join the outer transaction', async (storage, build) => {
    const inner = build.patient(ACCOUNT_A);
    const failure = new Error('outer fails after inner returned');
    await expect(
      storage.transaction(async (tx) => {
        const value = await tx.transaction(async (nested) => {
          await nested.patients.insert(inner);
          return 42;
        });
        expect(value).toBe(42);
        expect(await tx.patients.get(ACCOUNT_A, inner.id)).toEqual(inner);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await storage.patients.get(ACCOUNT_A, inner.id)).toBeUndefined();

    const committed = build.patient(ACCOUNT_A);
    await storage.transaction((tx) => tx.transaction((nested) => nested.patients.insert(committed)));
    expect(await storage.patients.get(ACCOUNT_A, committed.id)).toEqual(committed);
  });

  test('transaction: concurrent transactions each commit or roll back on their own', async (storage, build) => {
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        storage.transaction(async (tx) => {
          await tx.patients.insert(build.patient(ACCOUNT_A, { externalId: `tx-${i}` }));
          await tx.outbox.add(build.outbox(ACCOUNT_A));
          if (i % 2 === 1) throw new Error(`fail ${i}`);
          return i;
        }),
      ),
    );
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled', 'rejected']);
    const kept = (await storage.patients.list(ACCOUNT_A)).map((patient) => patient.externalId).sort();
    expect(kept).toEqual(['tx-0', 'tx-2', 'tx-4']);
    expect(await storage.outbox.counts(ACCOUNT_A)).toEqual({ pending: 3, delivered: 0, parked: 0 });
  });

  if (options.serialisesTransactions) {
    test('transaction: concurrent read-modify-write transactions lose no update (transactions are serialised)', async (storage, build) => {
      const request = build.bulkRequest(ACCOUNT_A, { status: 'processing' });
      await storage.bulkRequests.insert(request);
      await Promise.all(
        Array.from({ length: 8 }, () =>
          storage.transaction(async (tx) => {
            const current = (await tx.bulkRequests.get(ACCOUNT_A, request.id))!;
            await new Promise((resolve) => setTimeout(resolve, 1));
            await tx.bulkRequests.update({ ...current, processed: current.processed + 1 });
          }),
        ),
      );
      expect((await storage.bulkRequests.get(ACCOUNT_A, request.id))!.processed).toBe(8);
    });
  }

  if (options.isolatesUncommittedWrites) {
    test('transaction: writes are invisible outside until the commit', async (storage, build) => {
      const patient = build.patient(ACCOUNT_A, { matchKeys: ['iso'] });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let written!: () => void;
      const insideWrote = new Promise<void>((resolve) => {
        written = resolve;
      });
      const running = storage.transaction(async (tx) => {
        await tx.patients.insert(patient);
        written();
        await gate;
      });
      await insideWrote;
      expect(await storage.patients.get(ACCOUNT_A, patient.id)).toBeUndefined();
      expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['iso'])).toEqual([]);
      release();
      await running;
      expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual(patient);
    });
  }

  test('close: is idempotent', async (storage) => {
    await storage.close();
    await storage.close();
  });

  // ----- properties

  test('property: any valid patient round-trips unchanged', async (storage) => {
    const nextId = sequence();
    await fc.assert(
      fc.asyncProperty(demographicsArb, isoInstant, fc.integer({ min: 1, max: 2 ** 31 - 1 }), async (demographics, createdAt, version) => {
        const accountId = `prop-${nextId()}`;
        const patient: Patient = { ...demographics, id: nextId(), accountId, version, createdAt };
        await storage.patients.insert(patient);
        expect(await storage.patients.get(accountId, patient.id)).toEqual(patient);
        expect(await storage.patients.list(accountId)).toEqual([patient]);
        if (patient.externalId !== undefined) expect(await storage.patients.findByExternalId(accountId, patient.externalId)).toEqual([patient]);
        expect(await storage.patients.findByMatchKeys(accountId, patient.matchKeys)).toEqual(patient.matchKeys.length > 0 ? [patient] : []);
      }),
      { numRuns },
    );
  });

  type Op =
    | { kind: 'insert'; demographics: Demographics[] }
    | { kind: 'update'; picks: number[]; demographics: Demographics[] };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('insert' as const), demographics: fc.array(demographicsArb, { minLength: 1, maxLength: 3 }) }),
    fc.record({
      kind: fc.constant('update' as const),
      picks: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
      demographics: fc.array(demographicsArb, { minLength: 3, maxLength: 3 }),
    }),
  );

  test('property: any sequence of inserts and updates leaves list, count and lookups equal to a simple model', async (storage) => {
    const nextId = sequence();
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 8 }), async (ops) => {
        const accountId = `model-${nextId()}`;
        const model = new Map<string, Patient>();
        let tick = 0;
        for (const op of ops) {
          if (op.kind === 'insert') {
            const patients = op.demographics.map((demographics): Patient => ({ ...demographics, id: nextId(), accountId, version: 1, createdAt: at(++tick) }));
            if (patients.length === 1) await storage.patients.insert(patients[0]!);
            else await storage.patients.insertMany(patients);
            for (const patient of patients) model.set(patient.id, patient);
          } else {
            const existing = [...model.values()];
            if (existing.length === 0) continue;
            const targets = [...new Set(op.picks.map((pick) => existing[pick % existing.length]!))];
            const updated = targets.map((target, i): Patient => ({ ...op.demographics[i]!, id: target.id, accountId, version: target.version, createdAt: target.createdAt }));
            const stored = updated.map((patient) => ({ ...patient, version: patient.version + 1 }));
            if (updated.length === 1) expect(await storage.patients.update(updated[0]!)).toEqual(stored[0]);
            else expect(await storage.patients.updateMany(updated)).toEqual([]);
            for (const patient of stored) model.set(patient.id, patient);
          }
        }
        const expected = [...model.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
        expect(await storage.patients.list(accountId)).toEqual(expected);
        expect(await storage.patients.count(accountId)).toBe(expected.length);
        const byAge = [...expected].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
        for (const key of new Set(expected.flatMap((patient) => patient.matchKeys))) {
          expect(ids(await storage.patients.findByMatchKeys(accountId, [key]))).toEqual(ids(byAge.filter((p) => p.matchKeys.includes(key))));
        }
        for (const externalId of new Set(expected.flatMap((patient) => (patient.externalId === undefined ? [] : [patient.externalId])))) {
          expect(ids(await storage.patients.findByExternalId(accountId, externalId))).toEqual(ids(byAge.filter((p) => p.externalId === externalId)));
        }
      }),
      { numRuns },
    );
  });
}
