import type { BulkQueriesProgress, FhirResourceRecord } from '../../../../core/domain/types.js';
import type { ConsolidatedQueryRepository, DocumentQueryRepository, DocumentRepository, FhirResourceRepository, NetworkQueryRepository } from '../../../../core/ports/storage.port.js';
import type { Row } from '../schema.js';
import { Params } from '../raw-sql.js';
import { IDS_PER_STATEMENT, NEWEST_FIRST, OLDEST_FIRST, chunks, columnList, copy, lastByKey, owned, type SqlAccess } from '../sql-access.js';

/* Documents, document queries, the consolidated FHIR store, consolidated and network queries. */

export function documentsRepository(db: SqlAccess): DocumentRepository {
  const toDocument = (row: Row) => db.map.documents.fromRow(row);
  return {
    insert: (document) => db.insertRows('documents', [db.map.documents.toRow(document)], `document ${document.id}`),
    get: async (accountId, id) => {
      const row = await db.selectOne('documents', owned(accountId, id));
      return row && toDocument(row);
    },
    getByFileName: async (accountId, fileName) => {
      const row = await db.selectOne(
        'documents',
        [
          ['account_id', accountId],
          ['file_name', fileName],
        ],
        OLDEST_FIRST,
      );
      return row && toDocument(row);
    },
    listByPatient: async (accountId, patientId) =>
      (
        await db.select(
          'documents',
          [
            ['account_id', accountId],
            ['patient_id', patientId],
          ],
          OLDEST_FIRST,
        )
      ).map(toDocument),
    update: async (document) => ((await db.replace('documents', db.map.documents.toRow(document), 'document')) ? copy(document) : undefined),
    insertMany: (documents) => db.insertRows('documents', documents.map((document) => db.map.documents.toRow(document)), 'document'),
    updateMany: (documents) => db.replaceMany('documents', documents.map((document) => db.map.documents.toRow(document)), 'document'),
  };
}

export function documentQueriesRepository(db: SqlAccess): DocumentQueryRepository {
  return {
    insert: (query) => db.insertRows('document_queries', [db.map.document_queries.toRow(query)], `document query ${query.id}`),
    get: async (accountId, id) => {
      const row = await db.selectOne('document_queries', owned(accountId, id));
      return row && db.map.document_queries.fromRow(row);
    },
    latestForPatient: async (accountId, patientId) => {
      const row = await db.selectOne(
        'document_queries',
        [
          ['account_id', accountId],
          ['patient_id', patientId],
        ],
        NEWEST_FIRST,
      );
      return row && db.map.document_queries.fromRow(row);
    },
    update: async (query) => ((await db.replace('document_queries', db.map.document_queries.toRow(query), 'document query')) ? copy(query) : undefined),
    progressOfBulkRequest: async (accountId, bulkRequestId) => {
      const rows = await db.query('SELECT state, COUNT(id) AS n FROM document_queries WHERE account_id = $1 AND bulk_request_id = $2 GROUP BY state', [accountId, bulkRequestId], {
        keepPrepared: true,
      });
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
  // Both forms of the record write alike: in one transaction, the last version of a key given twice.
  const upsert = async <R extends Pick<FhirResourceRecord, 'accountId' | 'patientId' | 'resourceType' | 'id'>>(records: readonly R[], toRow: (record: R) => Row) => {
    if (records.length === 0) return;
    const rows = lastByKey(records, (r) => [r.accountId, r.patientId, r.resourceType, r.id].join('\u0000')).map(toRow);
    await db.atomic((transaction) => db.upsertRows('fhir_resources', rows, 'FHIR resource', transaction));
  };
  return {
    putMany: (resources) => upsert(resources, (resource) => db.map.fhir_resources.toRow(resource)),
    listByPatient: async (accountId, patientId, resourceTypes) => {
      if (resourceTypes?.length === 0) return [];
      const params = new Params();
      let where = `account_id = ${params.add(accountId)} AND patient_id = ${params.add(patientId)}`;
      if (resourceTypes !== undefined) where += ` AND resource_type IN (${params.list(resourceTypes)})`;
      const rows = await db.query(`SELECT ${columnList('fhir_resources')} FROM fhir_resources WHERE ${where} ORDER BY resource_type ASC, id ASC`, params, {
        // A patient's whole store is one shape; a list of types is of any length.
        keepPrepared: resourceTypes === undefined,
      });
      return rows.map((row) => db.map.fhir_resources.fromRow(row));
    },
    listByPatientJson: async (accountId, patientId) => {
      // The column's text as stored: PostgreSQL's json type keeps it verbatim, and its driver would parse it.
      const resource = db.context.postgres ? 'CAST(resource AS text)' : 'resource';
      const rows = await db.query(
        `SELECT ${columnList('fhir_resources').replace('"resource"', `${resource} AS "resource"`)} FROM fhir_resources WHERE account_id = $1 AND patient_id = $2 ORDER BY resource_type ASC, id ASC`,
        [accountId, patientId],
        { keepPrepared: true },
      );
      return rows.map(({ resource: resourceJson, ...row }) => {
        const { resource: _unread, ...record } = db.map.fhir_resources.fromRow({ ...row, resource: null });
        return { ...record, resourceJson: String(resourceJson) };
      });
    },
    // Bound as the text it is, in the column the object form writes its JSON text to.
    putManyJson: (resources) => upsert(resources, ({ resourceJson, ...record }) => ({ ...db.map.fhir_resources.toRow({ ...record, resource: {} }), resource: resourceJson })),
    removeMany: async (accountId, patientId, keys) => {
      if (keys.length === 0) return;
      await db.atomic(async (transaction) => {
        for (const chunk of chunks(keys, IDS_PER_STATEMENT)) {
          const params = new Params();
          const keyed = chunk.map(({ resourceType, id }) => `(resource_type = ${params.add(resourceType)} AND id = ${params.add(id)})`).join(' OR ');
          await db.raw.runOnce(
            transaction,
            `DELETE FROM fhir_resources WHERE account_id = ${params.add(accountId)} AND patient_id = ${params.add(patientId)} AND (${keyed})`,
            params.values,
          );
        }
      });
    },
  };
}

export function consolidatedQueriesRepository(db: SqlAccess): ConsolidatedQueryRepository {
  const toQuery = (row: Row) => db.map.consolidated_queries.fromRow(row);
  return {
    insert: (query) => db.insertRows('consolidated_queries', [db.map.consolidated_queries.toRow(query)], `consolidated query ${query.id}`),
    get: async (accountId, id) => {
      const row = await db.selectOne('consolidated_queries', owned(accountId, id));
      return row && toQuery(row);
    },
    listProcessing: async (accountId, patientId) =>
      (
        await db.select(
          'consolidated_queries',
          [
            ['account_id', accountId],
            ['patient_id', patientId],
            ['status', 'processing'],
          ],
          OLDEST_FIRST,
        )
      ).map(toQuery),
    listByPatient: async (accountId, patientId) =>
      (
        await db.select(
          'consolidated_queries',
          [
            ['account_id', accountId],
            ['patient_id', patientId],
          ],
          NEWEST_FIRST,
        )
      ).map(toQuery),
    update: async (query) => ((await db.replace('consolidated_queries', db.map.consolidated_queries.toRow(query), 'consolidated query')) ? copy(query) : undefined),
  };
}

export function networkQueriesRepository(db: SqlAccess): NetworkQueryRepository {
  const toQuery = (row: Row) => db.map.network_queries.fromRow(row);
  return {
    insert: (query) => db.insertRows('network_queries', [db.map.network_queries.toRow(query)], `network query ${query.id}`),
    get: async (accountId, id) => {
      const row = await db.selectOne('network_queries', owned(accountId, id));
      return row && toQuery(row);
    },
    getForUpdate: async (accountId, id) => {
      // SQLite runs one transaction at a time on its one connection: a plain read is already held.
      if (!db.transaction || !db.context.postgres) {
        const row = await db.selectOne('network_queries', owned(accountId, id));
        return row && toQuery(row);
      }
      const [row] = await db.query(`SELECT ${columnList('network_queries')} FROM network_queries WHERE account_id = $1 AND id = $2 FOR UPDATE`, [accountId, id]);
      return row && toQuery(row);
    },
    listProcessing: async (accountId, patientId) =>
      (
        await db.select(
          'network_queries',
          [
            ['account_id', accountId],
            ['patient_id', patientId],
            ['state', 'processing'],
          ],
          OLDEST_FIRST,
        )
      ).map(toQuery),
    update: async (query) => ((await db.replace('network_queries', db.map.network_queries.toRow(query), 'network query')) ? copy(query) : undefined),
    pruneFinished: async (before, limit) => {
      // Through the writer, as every write outside a caller's transaction (see the outbox's releaseClaims).
      const rows = await db.writing((transaction) =>
        db.query(
          `DELETE FROM network_queries WHERE id IN (
             SELECT id FROM network_queries WHERE state <> 'processing' AND updated_at < $1 ORDER BY updated_at, id LIMIT $2)
           RETURNING id`,
          [before, limit],
          { transaction },
        ),
      );
      return rows.length;
    },
  };
}
