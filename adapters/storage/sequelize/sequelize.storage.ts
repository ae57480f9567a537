import type { Sequelize, Transaction } from 'sequelize';
import type {
  AccountRepository,
  BulkRequestRepository,
  BulkRowRepository,
  CohortRepository,
  ConsolidatedQueryRepository,
  NetworkQueryRepository,
  DocumentQueryRepository,
  DocumentRepository,
  FacilityRepository,
  FhirResourceRepository,
  OrganizationRepository,
  OutboxRepository,
  PatientRepository,
  StoragePort,
  WebhookSettingsRepository,
  WebhookEndpointRepository,
  WebhookAttemptRepository,
} from '../../../core/ports/storage.port.js';
import { configureSqlite, openSequelize, runTransaction, type SequelizeConnectionOptions } from './connection.js';
import { rowMapper } from './mappers.js';
import { loadMatchKeyHasher, type MatchKeyHasher } from './match-key-hash.js';
import { migrateStorage } from './migrations/index.js';
import { RawSql } from './raw-sql.js';
import { bulkRequestsRepository, bulkRowsRepository } from './repositories/bulk.js';
import { consolidatedQueriesRepository, documentQueriesRepository, documentsRepository, fhirResourcesRepository, networkQueriesRepository } from './repositories/documents.js';
import { accountsRepository, cohortsRepository, facilitiesRepository, organizationsRepository, webhookEndpointsRepository, webhookSettingsRepository } from './repositories/entities.js';
import { outboxRepository, webhookAttemptsRepository } from './repositories/outbox.js';
import { patientsRepository } from './repositories/patients.js';
import { guarded, SqlAccess, withoutStatement, type Context } from './sql-access.js';

export interface SequelizeStorageOptions extends SequelizeConnectionOptions {
  /**
   * An instance to use instead of opening one (e.g. shared with the durable queue). The storage then does
   * not close it; whoever opened it does. Exclusive with url, dataDir and schema.
   */
  sequelize?: Sequelize;
  /**
   * Replaces the blocking-key index's hash. For tests: a hash under which every key collides shows that
   * collisions only cost extra candidates, never a wrong one. The stored index must always be built with
   * the same hash, so never set it on a real database.
   */
  matchKeyHasher?: MatchKeyHasher;
}

/**
 * The storage port on Sequelize 6, over SQLite (the embedded default) or PostgreSQL. `open` runs the
 * migrations. Every query of tenant data is scoped by account in its WHERE clause.
 *
 * A transaction hands `work` a storage bound to a managed Sequelize transaction: every query it makes
 * passes `{ transaction }`. On SQLite, transactions are serialised (see `runTransaction`).
 */
export class SequelizeStorage implements StoragePort {
  readonly accounts: AccountRepository;
  readonly webhookSettings: WebhookSettingsRepository;
  readonly webhookEndpoints: WebhookEndpointRepository;
  readonly organizations: OrganizationRepository;
  readonly facilities: FacilityRepository;
  readonly cohorts: CohortRepository;
  readonly patients: PatientRepository;
  readonly bulkRequests: BulkRequestRepository;
  readonly bulkRows: BulkRowRepository;
  readonly documents: DocumentRepository;
  readonly documentQueries: DocumentQueryRepository;
  readonly fhirResources: FhirResourceRepository;
  readonly consolidatedQueries: ConsolidatedQueryRepository;
  readonly networkQueries: NetworkQueryRepository;
  readonly outbox: OutboxRepository;
  readonly webhookAttempts: WebhookAttemptRepository;

  /** Opens (or adopts) a Sequelize instance and brings its schema up to date. */
  static async open(options: SequelizeStorageOptions = {}): Promise<SequelizeStorage> {
    const { sequelize: given, matchKeyHasher, ...connection } = options;
    if (given && (connection.url !== undefined || connection.dataDir !== undefined || connection.schema !== undefined)) {
      throw new Error('pass either a Sequelize instance or connection options (url, dataDir, schema), not both');
    }
    if (given) configureSqlite(given);
    const sequelize = given ?? (await openSequelize(connection));
    try {
      await migrateStorage(sequelize);
    } catch (error) {
      if (!given) await sequelize.close();
      throw error;
    }
    const postgres = sequelize.getDialect() === 'postgres';
    return new SequelizeStorage({
      sequelize,
      map: rowMapper(postgres, matchKeyHasher ?? (await loadMatchKeyHasher())),
      raw: new RawSql(sequelize),
      postgres,
      owned: given === undefined,
      closed: false,
    });
  }

  private constructor(
    private readonly context: Context,
    private readonly tx?: Transaction,
  ) {
    const db = new SqlAccess(context, tx, (work) => this.atomic(work));
    this.accounts = guarded(accountsRepository(db));
    this.webhookSettings = guarded(webhookSettingsRepository(db));
    this.webhookEndpoints = guarded(webhookEndpointsRepository(db));
    this.organizations = guarded(organizationsRepository(db));
    this.facilities = guarded(facilitiesRepository(db));
    this.cohorts = guarded(cohortsRepository(db));
    this.patients = guarded(patientsRepository(db));
    this.bulkRequests = guarded(bulkRequestsRepository(db));
    this.bulkRows = guarded(bulkRowsRepository(db));
    this.documents = guarded(documentsRepository(db));
    this.documentQueries = guarded(documentQueriesRepository(db));
    this.fhirResources = guarded(fhirResourcesRepository(db));
    this.consolidatedQueries = guarded(consolidatedQueriesRepository(db));
    this.networkQueries = guarded(networkQueriesRepository(db));
    this.outbox = guarded(outboxRepository(db));
    this.webhookAttempts = guarded(webhookAttemptsRepository(db));
  }

  /** The underlying instance, for adapters that share the database (they create their own tables). */
  get sequelize(): Sequelize {
    return this.context.sequelize;
  }

  async transaction<T>(work: (tx: StoragePort) => Promise<T>): Promise<T> {
    if (this.tx) return work(this);
    try {
      return await runTransaction(this.context.sequelize, (transaction) => work(new SequelizeStorage(this.context, transaction)));
    } catch (error) {
      // What `work` throws comes back as thrown; only a failing BEGIN or COMMIT is a Sequelize error here.
      throw withoutStatement(error);
    }
  }

  async close(): Promise<void> {
    if (this.tx || this.context.closed) return;
    this.context.closed = true;
    if (this.context.owned) await this.context.sequelize.close();
  }

  /** Runs multi-statement writes in the current transaction, or in a new one. */
  private atomic<T>(work: (transaction: Transaction) => Promise<T>): Promise<T> {
    if (this.tx) return work(this.tx);
    return runTransaction(this.context.sequelize, work);
  }
}
