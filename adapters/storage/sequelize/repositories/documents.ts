import { Op, col, fn, type WhereOptions } from 'sequelize';
import type { BulkQueriesProgress, FhirResourceRecord } from '../../../../core/domain/types.js';
import type { ConsolidatedQueryRepository, DocumentQueryRepository, DocumentRepository, FhirResourceRepository, NetworkQueryRepository } from '../../../../core/ports/storage.port.js';
import type { Row } from '../models.js';
import { IDS_PER_STATEMENT, NEWEST_FIRST, OLDEST_FIRST, chunks, copy, lastByKey, type SqlAccess } from '../sql-access.js';

/* Documents, document queries, the consolidated FHIR store, consolidated and network queries. */

export function documentsRepository(db: SqlAccess): DocumentRepository {
  const { documents: model } = db.models;
  const toDocument = (row: Row) => db.map.document(row);
  return {
    insert: (document) => db.insertRows(model, [db.map.documentRow(document)], `document ${document.id}`),
    get: async (accountId, id) => {
      const row = await db.findOne(model, { account_id: accountId, id });
      return row && toDocument(row);
    },
    getByFileName: async (accountId, fileName) => {
      const row = await db.findOne(model, { account_id: accountId, file_name: fileName }, OLDEST_FIRST);
      return row && toDocument(row);
    },
    listByPatient: async (accountId, patientId) =>
      (await db.findAll(model, { account_id: accountId, patient_id: patientId }, OLDEST_FIRST)).map(toDocument),
    update: async (document) => ((await db.replace(model, db.map.documentRow(document))) ? copy(document) : undefined),
  };
}

export function documentQueriesRepository(db: SqlAccess): DocumentQueryRepository {
  const { documentQueries: model } = db.models;
  return {
    insert: (query) => db.insertRows(model, [db.map.documentQueryRow(query)], `document query ${query.id}`),
    get: async (accountId, id) => {
      const row = await db.findOne(model, { account_id: accountId, id });
      return row && db.map.documentQuery(row);
    },
    latestForPatient: async (accountId, patientId) => {
      const row = await db.findOne(model, { account_id: accountId, patient_id: patientId }, NEWEST_FIRST);
      return row && db.map.documentQuery(row);
    },
    update: async (query) => ((await db.replace(model, db.map.documentQueryRow(query))) ? copy(query) : undefined),
    progressOfBulkRequest: async (accountId, bulkRequestId) => {
      const rows = (await model.findAll({
        attributes: ['state', [fn('COUNT', col('id')), 'n']],
        where: { account_id: accountId, bulk_request_id: bulkRequestId },
        group: ['state'],
        raw: true,
        transaction: db.transaction,
      })) as unknown as { state: string; n: number | string }[];
      const progress: BulkQueriesProgress = { total: 0, processing: 0, completed: 0, failed: 0 };
      for (const row of rows) {
        // PostgreSQL returns COUNT as a string.
        const n = Number(row.n);
        progress.total += n;
        if (row.state === 'processing' || row.state === 'completed' || row.state === 'failed') progress[row.state] += n;
      }
      return progress;
    },
  };
}

export function fhirResourcesRepository(db: SqlAccess): FhirResourceRepository {
  const { fhirResources: model } = db.models;
  return {
    putMany: async (resources) => {
      if (resources.length === 0) return;
      const rows = lastByKey(resources, (r: FhirResourceRecord) => [r.accountId, r.patientId, r.resourceType, r.id].join('\u0000')).map((resource) =>
        db.map.fhirResourceRow(resource),
      );
      await db.atomic((transaction) => db.upsertRows(model, rows, transaction));
    },
    listByPatient: async (accountId, patientId, resourceTypes) => {
      const where: WhereOptions = { account_id: accountId, patient_id: patientId };
      if (resourceTypes !== undefined) where.resource_type = [...resourceTypes];
      const order: [string, string][] = [
        ['resource_type', 'ASC'],
        ['id', 'ASC'],
      ];
      return (await db.findAll(model, where, order)).map((row) => db.map.fhirResource(row));
    },
    removeMany: async (accountId, patientId, keys) => {
      if (keys.length === 0) return;
      await db.atomic(async (transaction) => {
        for (const chunk of chunks(keys, IDS_PER_STATEMENT)) {
          await db.destroy(
            model,
            {
              account_id: accountId,
              patient_id: patientId,
              [Op.or]: chunk.map(({ resourceType, id }) => ({ resource_type: resourceType, id })),
            },
            transaction,
          );
        }
      });
    },
  };
}

export function consolidatedQueriesRepository(db: SqlAccess): ConsolidatedQueryRepository {
  const { consolidatedQueries: model } = db.models;
  const toQuery = (row: Row) => db.map.consolidatedQuery(row);
  return {
    insert: (query) => db.insertRows(model, [db.map.consolidatedQueryRow(query)], `consolidated query ${query.id}`),
    get: async (accountId, id) => {
      const row = await db.findOne(model, { account_id: accountId, id });
      return row && toQuery(row);
    },
    listProcessing: async (accountId, patientId) =>
      (await db.findAll(model, { account_id: accountId, patient_id: patientId, status: 'processing' }, OLDEST_FIRST)).map(toQuery),
    listByPatient: async (accountId, patientId) =>
      (await db.findAll(model, { account_id: accountId, patient_id: patientId }, NEWEST_FIRST)).map(toQuery),
    update: async (query) => ((await db.replace(model, db.map.consolidatedQueryRow(query))) ? copy(query) : undefined),
  };
}

export function networkQueriesRepository(db: SqlAccess): NetworkQueryRepository {
  const { networkQueries: model } = db.models;
  const toQuery = (row: Row) => db.map.networkQuery(row);
  return {
    insert: (query) => db.insertRows(model, [db.map.networkQueryRow(query)], `network query ${query.id}`),
    get: async (accountId, id) => {
      const row = await db.findOne(model, { account_id: accountId, id });
      return row && toQuery(row);
    },
    getForUpdate: async (accountId, id) => {
      // SQLite runs one transaction at a time on its one connection: a plain read is already held.
      if (!db.transaction || !db.context.postgres) {
        const row = await db.findOne(model, { account_id: accountId, id });
        return row && toQuery(row);
      }
      const columns = Object.keys(model.getAttributes()).map((column) => `"${column}"`).join(', ');
      const [row] = await db.raw.all(db.transaction, `SELECT ${columns} FROM network_queries WHERE account_id = $1 AND id = $2 FOR UPDATE`, [accountId, id]);
      return row && toQuery(row);
    },
    listProcessing: async (accountId, patientId) =>
      (await db.findAll(model, { account_id: accountId, patient_id: patientId, state: 'processing' }, OLDEST_FIRST)).map(toQuery),
    update: async (query) => ((await db.replace(model, db.map.networkQueryRow(query))) ? copy(query) : undefined),
    pruneFinished: async (before, limit) => {
      // Through the writer, as every write outside a caller's transaction (see the outbox's releaseClaims).
      const rows = await db.writing((transaction) =>
        db.select(
          `DELETE FROM network_queries WHERE id IN (
             SELECT id FROM network_queries WHERE state <> 'processing' AND updated_at < :before ORDER BY updated_at, id LIMIT :limit)
           RETURNING id`,
          { before, limit },
          transaction,
        ),
      );
      return rows.length;
    },
  };
}
