import type { BulkRowOutcome } from '../../../../core/domain/types.js';
import type { BulkRequestRepository, BulkRowRepository } from '../../../../core/ports/storage.port.js';
import { BULK_ROW_COLUMNS } from '../mappers.js';
import type { Row } from '../schema.js';
import { BULK_ROW_UPSERT, NEWEST_FIRST, OLDEST_FIRST, columnList, copy, lastByKey, owned, type SqlAccess } from '../sql-access.js';

/* Bulk requests and the outcome of each of their rows. */

export function bulkRequestsRepository(db: SqlAccess): BulkRequestRepository {
  const toRequest = (row: Row) => db.map.bulk_requests.fromRow(row);
  return {
    insert: (request) => db.insertRows('bulk_requests', [db.map.bulk_requests.toRow(request)], `bulk request ${request.id}`),
    get: async (accountId, id) => {
      const row = await db.selectOne('bulk_requests', owned(accountId, id));
      return row && toRequest(row);
    },
    getById: async (id) => {
      const row = await db.selectOne('bulk_requests', [['id', id]]);
      return row && toRequest(row);
    },
    // One UPDATE ... WHERE status = expected: the database decides which of two racing callers wins.
    updateIfStatus: async (request, expected) =>
      (await db.replace('bulk_requests', db.map.bulk_requests.toRow(request), 'bulk request', [['status', expected]])) ? copy(request) : undefined,
    listByStatus: async (status, limit) => (await db.select('bulk_requests', [['status', status]], OLDEST_FIRST, limit)).map(toRequest),
    list: async (accountId, limit) => (await db.select('bulk_requests', [['account_id', accountId]], NEWEST_FIRST, limit)).map(toRequest),
  };
}

export function bulkRowsRepository(db: SqlAccess): BulkRowRepository {
  return {
    putMany: async (outcomes) => {
      if (outcomes.length === 0) return;
      const tuples = lastByKey(outcomes, (outcome: BulkRowOutcome) => `${outcome.requestId}\u0000${outcome.rowIndex}`).map((outcome) =>
        db.map.bulk_rows.values(outcome),
      );
      await db.atomic((transaction) => db.insertJsonRows(transaction, 'bulk_rows', BULK_ROW_COLUMNS, tuples, 'bulk row', BULK_ROW_UPSERT));
    },
    range: async (requestId, from, to) =>
      (
        await db.query(
          `SELECT ${columnList('bulk_rows')} FROM bulk_rows WHERE request_id = $1 AND row_index >= $2 AND row_index < $3 ORDER BY row_index ASC`,
          [requestId, from, to],
          { keepPrepared: true },
        )
      ).map((row) => db.map.bulk_rows.fromRow(row)),
    nextRowIndex: async (requestId) => {
      const [row] = await db.query('SELECT MAX(row_index) AS last FROM bulk_rows WHERE request_id = $1', [requestId], { keepPrepared: true });
      return row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1;
    },
  };
}
