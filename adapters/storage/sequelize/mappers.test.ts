import { describe, expect, test } from 'vitest';
import type {
  Account,
  BulkRequest,
  BulkRowOutcome,
  Cohort,
  ConsolidatedQuery,
  DocumentQuery,
  DocumentRecord,
  Facility,
  FhirResourceRecord,
  NetworkQuery,
  Organization,
  OutboxMessage,
  Patient,
  WebhookAttempt,
  WebhookEndpoint,
  WebhookSettings,
} from '../../../core/domain/types.js';
import { BULK_ROW_COLUMNS, NOT_RECORDS, PATIENT_COLUMNS, rowMapper, type RecordTable, type Records, type TableMapper } from './mappers.js';
import { columnsOf, TABLES, type Row, type TableName } from './schema.js';

/*
 * Every table's record written to a row and read back, as each driver returns what was written: the record
 * read back must be the one written, optional fields absent (not `undefined`) when they were.
 */

const mappers = { sqlite: rowMapper(false, () => 0), postgres: rowMapper(true, () => 0) };

/**
 * The row as the driver returns it once written and read back: what `SqlAccess.bindable` binds, stored in the
 * column's type. SQLite: JSON as the text written, booleans 0/1. PostgreSQL: JSON parsed (from the text the
 * value was bound as), BIGINT as a string. Both: NULL for a value not given.
 */
function stored(table: TableName, row: Row, postgres: boolean): Row {
  const read: Row = {};
  for (const column of columnsOf(table)) {
    const value = row[column.name];
    if (value === undefined || value === null) {
      read[column.name] = null;
    } else if (column.kind === 'json') {
      if (postgres) read[column.name] = JSON.parse(typeof value === 'object' ? JSON.stringify(value) : String(value));
      else {
        expect(typeof value, `${table}.${column.name}: JSON written as text on SQLite`).toBe('string');
        read[column.name] = value;
      }
    } else if (column.kind === 'boolean') {
      expect(typeof value, `${table}.${column.name}: a boolean`).toBe('boolean');
      read[column.name] = postgres ? value : value ? 1 : 0;
    } else if (column.kind === 'bigint') {
      read[column.name] = postgres ? String(value) : value;
    } else {
      read[column.name] = value;
    }
  }
  return read;
}

const A = '0a000000-0000-7000-8000-00000000000a';
const at = (seconds: number) => new Date(Date.UTC(2024, 0, 1) + seconds * 1000).toISOString();
const address = { addressLine1: '12 Rue de l’Église', addressLine2: 'Apt 3', city: 'São Paulo', state: 'CA', zip: '94110', country: 'USA' };

/** Every table's record with every optional field present: `Required` makes the compiler ask for a field added to a type. */
const FULL: { [T in RecordTable]: Required<Records[T]> } = {
  accounts: { id: 'acc-1', name: 'Clinic Ñandú', apiKeyHash: 'hash', apiKeyPrefix: 'cb_1234', createdAt: at(0) },
  webhook_settings: {
    accountId: A,
    webhookUrl: 'https://example.com/hook',
    webhookKey: 'whsec_abc',
    webhookEnabled: true,
    webhookStatusDetail: 'unhealthy since yesterday',
    failingSince: at(5),
    updatedAt: at(6),
  },
  webhook_endpoints: {
    id: 'ep-1',
    accountId: A,
    url: 'https://example.com/endpoint/ñ',
    description: '{"looks":"like JSON"}',
    enabled: true,
    eventTypes: ['medical.document-conversion', 'network-query.*'],
    secret: 'whsec_new',
    previousSecret: 'whsec_old',
    previousSecretUntil: at(9),
    statusDetail: 'ping failed',
    failingSince: at(7),
    createdAt: at(0),
    updatedAt: at(8),
  },
  organizations: { id: 'org-1', accountId: A, oid: '2.16.840.1.1', name: 'Org', type: 'healthcareProvider', location: address, createdAt: at(0), updatedAt: at(1) },
  facilities: {
    id: 'fac-1',
    accountId: A,
    oid: '2.16.840.1.2',
    name: 'Facility',
    npi: '1234567893',
    tin: '12-3456789',
    active: true,
    address,
    createdAt: at(0),
    updatedAt: at(1),
  },
  cohorts: { id: 'coh-1', accountId: A, name: 'Cohort', description: 'Diabetes follow-up', createdAt: at(0), updatedAt: at(1) },
  patients: {
    id: 'pat-1',
    accountId: A,
    facilityIds: ['fac-1', 'fac-2'],
    cohortIds: [],
    externalId: 'ext-1',
    firstName: 'Ana, María',
    lastName: 'Núñez',
    dob: '1980-02-29',
    genderAtBirth: 'F',
    address: [address, { addressLine1: '1 Main St', city: 'Boston', state: 'MA', zip: '02110', country: 'USA' }],
    contact: [{ phone: '6175550100', email: 'ana@example.com' }, {}],
    personalIdentifiers: [{ type: 'driversLicense', value: 'D123', state: 'MA' }],
    hieOptOut: true,
    matchKeys: ['nunez|ana|1980-02-29', 'nunez|maria|1980-02-29'],
    version: 3,
    createdAt: at(0),
    updatedAt: at(1),
  },
  bulk_requests: {
    id: 'bulk-1',
    accountId: A,
    facilityId: 'fac-1',
    dryRun: true,
    status: 'processing',
    reason: 'paused',
    total: 100_000,
    processed: 500,
    succeeded: 498,
    failed: 2,
    created: 400,
    updated: 98,
    ignoredColumns: ['favourite colour', ''],
    paused: { code: 'STORAGE_FULL', since: at(3) },
    uploadKey: 'uploads/bulk-1.csv',
    resultKey: 'results/bulk-1.csv',
    expiresAt: at(600),
    metadata: { batch: '7', 'key with space': 'value "quoted"' },
    createdAt: at(0),
    updatedAt: at(4),
  },
  bulk_rows: { requestId: 'bulk-1', rowIndex: 99_999, status: 'failed', action: 'validated', patientId: 'pat-1', reason: 'dob: expected YYYY-MM-DD' },
  documents: {
    id: 'doc-1',
    accountId: A,
    patientId: 'pat-1',
    queryId: 'dq-1',
    source: 'hie',
    fileName: 'summary.xml',
    description: 'Continuity of care',
    status: 'current',
    indexed: at(2),
    mimeType: 'application/xml',
    // Past 2^32: PostgreSQL's BIGINT comes back as text.
    size: 5_000_000_123,
    type: { coding: [{ system: 'http://loinc.org', code: '34133-9', display: 'Summary' }], text: 'Summary' },
    organizationIdentifiers: [{ name: 'Org', identifierValues: ['1', '2'] }],
    blobKey: 'documents/doc-1',
    conversionStatus: 'failed',
    conversionError: 'not a C-CDA document',
    createdAt: at(0),
  },
  document_queries: {
    id: 'dq-1',
    accountId: A,
    patientId: 'pat-1',
    facilityId: 'fac-1',
    download: { status: 'completed', total: 3, successful: 3, errors: 0 },
    convert: { status: 'processing', total: 3, successful: 1, errors: 1 },
    metadata: { source: 'bulk' },
    bulkRequestId: 'bulk-1',
    createdAt: at(0),
    updatedAt: at(1),
  },
  fhir_resources: {
    accountId: A,
    patientId: 'pat-1',
    resourceType: 'Observation',
    id: 'obs-1',
    resource: { resourceType: 'Observation', id: 'obs-1', valueQuantity: { value: 1.5, unit: 'mg' }, note: [{ text: 'null' }] },
    sourceDocumentIds: ['doc-1'],
    updatedAt: at(2),
  },
  consolidated_queries: {
    id: 'cq-1',
    accountId: A,
    patientId: 'pat-1',
    status: 'completed',
    filters: { resources: 'Observation,Condition', dateFrom: '2020-01-01' },
    conversionType: 'pdf',
    metadata: { requestedBy: 'portal' },
    createdAt: at(0),
    updatedAt: at(1),
  },
  network_queries: {
    id: 'nq-1',
    accountId: A,
    patientId: 'pat-1',
    facilityId: 'fac-1',
    sources: [
      { type: 'hie', status: 'completed', startedAt: at(0), completedAt: at(5), documentQueryId: 'dq-1' },
      { type: 'lab', status: 'failed', startedAt: at(0) },
    ],
    metadata: { origin: 'api' },
    createdAt: at(0),
    updatedAt: at(5),
  },
  outbox: {
    id: 'msg-1',
    accountId: A,
    type: 'medical.document-conversion',
    body: '{"meta":{"messageId":"msg-1"},"patients":[]}',
    streamKey: 'pat-1:ep-1',
    endpointId: 'ep-1',
    messageId: 'msg-0',
    status: 'pending',
    attempts: 2,
    nextAttemptAt: at(30),
    lastError: 'HTTP 503',
    createdAt: at(0),
    deliveredAt: at(31),
    patientId: 'pat-1',
  },
  webhook_attempts: {
    id: 'att-1',
    accountId: A,
    deliveryId: 'msg-1',
    messageId: 'msg-0',
    endpointId: 'ep-1',
    type: 'medical.document-conversion',
    patientId: 'pat-1',
    attemptedAt: at(30),
    outcome: 'failed',
    statusCode: 503,
    latencyMs: 1_250,
    error: 'HTTP 503',
    test: true,
  },
};

type OptionalKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? K : never }[keyof T];

/** The record without its optional fields: the compiler asks for every one of them, so none is forgotten. */
function bare<T>(record: Required<T>, optional: { [K in OptionalKeys<T>]-?: true }, changes: Partial<T> = {}): T {
  const copy = { ...record, ...changes } as Record<string, unknown>;
  for (const field of Object.keys(optional)) delete copy[field];
  return copy as T;
}

/** Every table's record with every optional field absent (and the fields that hold `null` holding it), other flags flipped. */
const BARE: { [T in RecordTable]: Records[T] } = {
  accounts: bare<Account>(FULL.accounts, {}),
  webhook_settings: bare<WebhookSettings>(FULL.webhook_settings, { failingSince: true }, { webhookUrl: null, webhookStatusDetail: null, webhookEnabled: false }),
  webhook_endpoints: bare<WebhookEndpoint>(
    FULL.webhook_endpoints,
    { previousSecret: true, previousSecretUntil: true, failingSince: true },
    { statusDetail: null, enabled: false, eventTypes: [] },
  ),
  organizations: bare<Organization>(FULL.organizations, {}),
  facilities: bare<Facility>(FULL.facilities, { tin: true }, { active: false }),
  cohorts: bare<Cohort>(FULL.cohorts, { description: true }),
  patients: bare<Patient>(FULL.patients, { externalId: true }, { hieOptOut: false, contact: [], version: 1 }),
  bulk_requests: bare<BulkRequest>(
    FULL.bulk_requests,
    { reason: true, total: true, ignoredColumns: true, paused: true, resultKey: true, metadata: true },
    { dryRun: false, status: 'waiting', processed: 0, succeeded: 0, failed: 0, created: 0, updated: 0 },
  ),
  bulk_rows: bare<BulkRowOutcome>(FULL.bulk_rows, { action: true, patientId: true, reason: true }, { rowIndex: 0, status: 'succeeded' }),
  documents: bare<DocumentRecord>(FULL.documents, { queryId: true, conversionError: true }, { source: 'upload', size: 0, conversionStatus: 'waiting-upload' }),
  document_queries: bare<DocumentQuery>(FULL.document_queries, { metadata: true, bulkRequestId: true }),
  fhir_resources: bare<FhirResourceRecord>(FULL.fhir_resources, {}, { sourceDocumentIds: [] }),
  consolidated_queries: bare<ConsolidatedQuery>(FULL.consolidated_queries, { metadata: true }, { filters: {} }),
  network_queries: bare<NetworkQuery>(FULL.network_queries, { metadata: true }, { sources: [] }),
  outbox: bare<OutboxMessage>(
    FULL.outbox,
    { endpointId: true, messageId: true, lastError: true, deliveredAt: true, patientId: true },
    { streamKey: 'msg-1', attempts: 0 },
  ),
  webhook_attempts: bare<WebhookAttempt>(
    FULL.webhook_attempts,
    { endpointId: true, patientId: true, statusCode: true, error: true, test: true },
    { outcome: 'delivered', latencyMs: 0 },
  ),
};

const RECORD_TABLES = Object.keys(FULL) as RecordTable[];

describe.each([
  ['SQLite', false],
  ['PostgreSQL', true],
] as const)('row mappers, %s', (_dialect, postgres) => {
  const map = postgres ? mappers.postgres : mappers.sqlite;

  test.each(RECORD_TABLES)('%s: a record read back is the one written, optional fields present or absent', (table) => {
    const mapping = map[table] as TableMapper<unknown>;
    for (const record of [FULL[table], BARE[table]]) {
      const written = structuredClone(record);
      const row = mapping.toRow(record);
      expect(record, 'the record is left as it was').toStrictEqual(written);
      expect(mapping.fromRow(stored(table, row, postgres))).toStrictEqual(record);
    }
  });

  test.each(RECORD_TABLES)('%s: the row has every column of schema.ts, in order, none undefined, none NOT NULL left NULL', (table) => {
    const mapping = map[table] as TableMapper<unknown>;
    for (const record of [FULL[table], BARE[table]]) {
      const row = mapping.toRow(record);
      expect(Object.keys(row), 'the row has the columns of schema.ts, in its order').toEqual(columnsOf(table).map((column) => column.name));
      for (const column of columnsOf(table)) {
        expect(row[column.name], `${table}.${column.name}`).not.toBe(undefined);
        if (!column.nullable) expect(row[column.name], `${table}.${column.name} is NOT NULL`).not.toBe(null);
      }
    }
  });

  test('derived columns: query states from their steps, an outbox write ends the claim, only a test attempt is marked', () => {
    expect(map.document_queries.toRow(FULL.document_queries).state).toBe('processing');
    const done = { ...FULL.document_queries, convert: { ...FULL.document_queries.convert, status: 'completed' as const } };
    expect(map.document_queries.toRow(done).state).toBe('completed');
    expect(map.network_queries.toRow(FULL.network_queries).state).toBe('partial');
    expect(map.network_queries.toRow(BARE.network_queries).state).toBe('completed');

    const outbox = map.outbox.toRow(FULL.outbox);
    expect([outbox.lease_until, outbox.lease_owner]).toEqual([null, null]);

    const attempts = map.webhook_attempts;
    const ordinary = attempts.toRow({ ...FULL.webhook_attempts, test: false });
    expect(ordinary.test).toBe(null);
    expect('test' in attempts.fromRow(stored('webhook_attempts', ordinary, postgres))).toBe(false);
  });

  test('an outbox row stored before streams existed is a stream of its own', () => {
    const outbox = map.outbox;
    const row = stored('outbox', { ...outbox.toRow(FULL.outbox), stream_key: null }, postgres);
    expect(outbox.fromRow(row).streamKey).toBe(FULL.outbox.id);
  });

  test('batch values: in the order of the batch columns, nested values as JSON text whatever the dialect', () => {
    const sqlite = mappers.sqlite.patients;
    for (const patient of [FULL.patients, BARE.patients]) {
      const row = sqlite.toRow(patient);
      expect(map.patients.values(patient, ['before']).slice(1), 'appended to the values given').toStrictEqual(PATIENT_COLUMNS.map(([column]) => row[column]));
    }
    // The bound values of the patients' batch statement, column by column: what PATIENT_UPSERT's columns name.
    const patient = BARE.patients;
    expect(map.patients.values(patient)).toStrictEqual([
      'pat-1',
      A,
      '["fac-1","fac-2"]',
      '[]',
      null,
      'Ana, María',
      'Núñez',
      '1980-02-29',
      'F',
      JSON.stringify(patient.address),
      '[]',
      '[{"type":"driversLicense","value":"D123","state":"MA"}]',
      false,
      '["nunez|ana|1980-02-29","nunez|maria|1980-02-29"]',
      1,
      at(0),
      at(1),
    ]);
    for (const outcome of [FULL.bulk_rows, BARE.bulk_rows]) {
      const row = mappers.sqlite.bulk_rows.toRow(outcome);
      expect(map.bulk_rows.values(outcome)).toStrictEqual(BULK_ROW_COLUMNS.map(([column]) => row[column]));
    }
    expect(map.bulk_rows.values(BARE.bulk_rows)).toStrictEqual(['bulk-1', 0, 'succeeded', null, null, null]);
  });
});

test('every table of schema.ts holds a record the mappers map, or is one of the tables that hold none', () => {
  const tables = Object.keys(TABLES) as TableName[];
  expect([...RECORD_TABLES, ...Object.keys(NOT_RECORDS)].sort()).toEqual([...tables].sort());
  for (const table of RECORD_TABLES) expect(mappers.sqlite[table], table).toBeDefined();
});
