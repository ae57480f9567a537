import { documentQueryState, networkQueryStatus } from '../../../core/domain/types.js';
import type {
  Account,
  BulkRequest,
  BulkRowOutcome,
  Cohort,
  ConsolidatedQuery,
  NetworkQuery,
  DocumentQuery,
  DocumentRecord,
  Facility,
  FhirResourceRecord,
  Organization,
  OutboxMessage,
  WebhookAttempt,
  WebhookEndpoint,
  Patient,
  WebhookSettings,
} from '../../../core/domain/types.js';
import type { MatchKeyHasher } from './match-key-hash.js';
import { columnsOf, TABLES, type ColumnKind, type ColumnOf, type Row, type TableName } from './schema.js';

export type { ColumnKind } from './schema.js';
export type Columns = readonly (readonly [name: string, kind: ColumnKind])[];

function columnList(table: TableName): Columns {
  return columnsOf(table).map((column) => [column.name, column.kind] as const);
}

/** Columns of `patients`, in the order of `RowMapper.patients.values`. */
export const PATIENT_COLUMNS: Columns = columnList('patients');

/** Columns of `patient_key_hashes`, in the order of `RowMapper.pushKeyHashValues`. */
export const KEY_HASH_COLUMNS: Columns = columnList('patient_key_hashes');

/** Columns of `bulk_rows`, in the order of `RowMapper.bulk_rows.values`. */
export const BULK_ROW_COLUMNS: Columns = columnList('bulk_rows');

/** The record each table holds, one per row. */
export interface Records {
  accounts: Account;
  webhook_settings: WebhookSettings;
  webhook_endpoints: WebhookEndpoint;
  organizations: Organization;
  facilities: Facility;
  cohorts: Cohort;
  patients: Patient;
  bulk_requests: BulkRequest;
  bulk_rows: BulkRowOutcome;
  documents: DocumentRecord;
  document_queries: DocumentQuery;
  fhir_resources: FhirResourceRecord;
  consolidated_queries: ConsolidatedQuery;
  network_queries: NetworkQuery;
  outbox: OutboxMessage;
  webhook_attempts: WebhookAttempt;
}

export type RecordTable = keyof Records;

/** The tables that hold no record, and what writes them instead. */
export const NOT_RECORDS = {
  patient_key_hashes: 'the blocking-key index: RowMapper.pushKeyHashValues',
  patient_revisions: "the account lock's counter: its own statement (repositories/patients.ts)",
} as const satisfies Record<Exclude<TableName, RecordTable>, string>;

/** A column whose value is not the record field of its name converted by its kind. */
interface Override<R> {
  /** Its value in the row written from the record; the mechanical one when omitted. */
  toRow?: (record: R) => unknown;
  /**
   * Its field's value in the record read from the row (`undefined`: the field is absent); the mechanical
   * one when omitted; `null` when the record has no such field, the column being only written.
   */
  fromRow?: ((row: Row) => unknown) | null;
}

/**
 * The columns of each table not mapped mechanically, each with why. Adding or changing any other column is
 * its line in schema.ts alone.
 */
const OVERRIDES = {
  document_queries: {
    // Kept beside the JSON steps so progress is counted from an index, not by reading every query.
    state: { toRow: (query) => documentQueryState(query), fromRow: null },
  },
  network_queries: {
    // The status of the whole query, kept so a patient's running queries and those due for pruning are read from an index.
    state: { toRow: (query) => networkQueryStatus(query), fromRow: null },
  },
  outbox: {
    // Rows stored before streams existed are each a stream of their own.
    stream_key: { fromRow: (row) => String(row.stream_key ?? row.id) },
    // Writing a message ends its claim: the worker that held it is done with it.
    lease_until: { toRow: () => null, fromRow: null },
    lease_owner: { toRow: () => null, fromRow: null },
  },
  webhook_attempts: {
    // Only a test event's attempt is marked: any other is NULL, as those stored before the column, and reads back without the field.
    test: { toRow: (attempt) => (attempt.test ? true : null), fromRow: (row) => (readBoolean(row.test) ? true : undefined) },
  },
} as const satisfies { readonly [T in RecordTable]?: { readonly [C in ColumnOf<T>]?: Override<Records[T]> } };

type Camel<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;
type OverridesOf<T extends RecordTable> = T extends keyof typeof OVERRIDES ? (typeof OVERRIDES)[T] : {};
/** The columns of the table that no field of its record is read from. */
type WrittenOnly<T extends RecordTable> = { [C in keyof OverridesOf<T>]: OverridesOf<T>[C] extends { fromRow: null } ? C : never }[keyof OverridesOf<T>];
type FieldsOf<T extends RecordTable> = Camel<Exclude<ColumnOf<T>, WrittenOnly<T>>>;
/** The tables whose record has a field no column holds, or whose columns name a field the record does not have. */
type Unmapped = { [T in RecordTable]: [Exclude<keyof Records[T], FieldsOf<T>>, Exclude<FieldsOf<T>, keyof Records[T]>] extends [never, never] ? never : T }[RecordTable];
// Fails to compile, naming the table, when a record field and the columns of schema.ts part ways: a field
// would be silently dropped, or a nullable column silently written NULL.
const everyFieldMapped: [Unmapped] extends [never] ? true : Unmapped = true;

type Fields = Record<string, unknown>;

/** A column's value, not NULL, as the record holds it: SQLite gives booleans as 0/1 and JSON as text, PostgreSQL BIGINT as text. */
const READ: { readonly [K in ColumnKind]: (value: unknown) => unknown } = {
  text: String,
  integer: Number,
  bigint: Number,
  boolean: readBoolean,
  json: readJson,
};

function readBoolean(value: unknown): boolean {
  return value === true || value === 1 || value === '1';
}

function readJson(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}

/** One column of a table's plan, its conversions chosen once: a row is then one call per column. */
interface Step {
  readonly column: string;
  readonly field: string;
  /** The column's value written from the record. */
  readonly toRow: (record: Fields) => unknown;
  /** The column's value as bound by a batch statement: nested values as JSON text whatever the dialect. */
  readonly bound: (record: Fields) => unknown;
  /** The field's value read from the row, `undefined` for an absent field; undefined when the column is only written. */
  readonly fromRow: ((row: Row) => unknown) | undefined;
}

/** The column's value from the record field: JSON as text, unless the driver is given values (PostgreSQL, see `SqlAccess.bindable`). */
function writer(field: string, kind: ColumnKind, jsonAsText: boolean): (record: Fields) => unknown {
  if (kind !== 'json' || !jsonAsText) return (record) => record[field] ?? null;
  return (record) => {
    const value = record[field];
    return value === undefined || value === null ? null : JSON.stringify(value);
  };
}

function reader(column: string, kind: ColumnKind, nullInRecord: boolean): (row: Row) => unknown {
  const read = READ[kind];
  const ifNull = nullInRecord ? null : undefined;
  return (row) => {
    const value = row[column];
    return value === null || value === undefined ? ifNull : read(value);
  };
}

/**
 * A table's record <-> row, planned once from schema.ts. Optional fields are NULL in a row and absent (not
 * `undefined`) in a record, so a record read back equals the one written. Reads are `raw`, so each
 * dialect's own representation is normalised here.
 */
export class TableMapper<R> {
  private readonly steps: readonly Step[];
  private readonly reads: readonly Step[];

  constructor(table: RecordTable, postgres: boolean) {
    // Typed by table where they are written (OVERRIDES); here every table's are alike.
    const overrides = (OVERRIDES as unknown as { readonly [table: string]: { readonly [column: string]: Override<Fields> | undefined } })[table] ?? {};
    this.steps = columnsOf(table).map(({ name, kind, field, nullInRecord }) => {
      const override = overrides[name];
      const toRow = override?.toRow;
      const fromRow = override?.fromRow;
      return {
        column: name,
        field,
        toRow: toRow ?? writer(field, kind, !postgres),
        bound: toRow ?? writer(field, kind, true),
        fromRow: fromRow === null ? undefined : (fromRow ?? reader(name, kind, nullInRecord)),
      };
    });
    this.reads = this.steps.filter((step) => step.fromRow !== undefined);
  }

  /** The record's row, every column in schema.ts's order. */
  toRow(record: R): Row {
    const row: Row = {};
    for (const step of this.steps) row[step.column] = step.toRow(record as Fields);
    return row;
  }

  /** The record's values appended to `into` (a new array when none) in schema.ts's order, as a batch statement binds them. */
  values(record: R, into: unknown[] = []): unknown[] {
    for (const step of this.steps) into.push(step.bound(record as Fields));
    return into;
  }

  fromRow(row: Row): R {
    const record: Fields = {};
    for (const step of this.reads) {
      const value = step.fromRow!(row);
      if (value !== undefined) record[step.field] = value;
    }
    return record as R;
  }
}

/** Domain record <-> table row, per table, for one dialect; and the blocking-key index's entries. */
export type RowMapper = { readonly [T in RecordTable]: TableMapper<Records[T]> } & {
  /** The blocking-key index's hash (see `match-key-hash.ts`). */
  readonly hashOf: MatchKeyHasher;
  /**
   * Entries of the blocking-key index for these keys of a patient, in `KEY_HASH_COLUMNS` order, pushed onto
   * `into`: each distinct hash once (two keys of one patient may, however rarely, hash alike).
   */
  pushKeyHashValues(accountId: string, patientId: string, matchKeys: readonly string[], into: unknown[][]): void;
  /** The facility ids of a patient row, read alone. */
  patientFacilityIds(row: Row): string[];
};

export function rowMapper(postgres: boolean, hashOf: MatchKeyHasher): RowMapper {
  const tables: { [table: string]: TableMapper<unknown> } = {};
  for (const table of Object.keys(TABLES) as TableName[]) if (!(table in NOT_RECORDS)) tables[table] = new TableMapper(table as RecordTable, postgres);
  return {
    ...(tables as { [T in RecordTable]: TableMapper<Records[T]> }),
    hashOf,
    pushKeyHashValues(accountId, patientId, matchKeys, into) {
      const hashes = new Set<number>();
      for (const matchKey of matchKeys) hashes.add(hashOf(accountId, matchKey));
      for (const hash of hashes) into.push([hash, patientId]);
    },
    patientFacilityIds: (row) => readJson(row.facility_ids) as string[],
  };
}
