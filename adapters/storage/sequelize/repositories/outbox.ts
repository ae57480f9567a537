import type { EndpointMessageCounts, OutboxMessage } from '../../../../core/domain/types.js';
import type { OutboxRepository, WebhookAttemptRepository } from '../../../../core/ports/storage.port.js';
import type { Row } from '../schema.js';
import { Params } from '../raw-sql.js';
import { IDS_PER_STATEMENT, OLDEST_FIRST, OUTBOX_CLAIM_LOCK, ROWS_PER_STATEMENT, chunks, columnList, orderOf, type Conditions, owned, type SqlAccess } from '../sql-access.js';

/* The webhook outbox: messages, their claims by delivery passes, their retention. */

export function outboxRepository(db: SqlAccess): OutboxRepository {
  const toMessage = (row: Row) => db.map.outbox.fromRow(row);
  return {
    add: (message) => db.insertRows('outbox', [db.map.outbox.toRow(message)], `outbox message ${message.id}`),
    get: async (accountId, id) => {
      const row = await db.selectOne('outbox', owned(accountId, id));
      return row && toMessage(row);
    },
    claim: async (at, limit, lease) => {
      if (limit < 1) return [];
      const except = lease.exceptEndpoints ?? [];
      // A claim takes the writer even when it finds nothing. A read first, outside the writer, was tried: it
      // walks the busy endpoints' backlog on the connection every read outside a transaction shares (and a
      // claim that finds something walks it twice), and a 2,000-row journey took a third longer. On SQLite
      // it is one statement; PostgreSQL takes a lock first.
      return db.writes(db.context.postgres ? 2 : 1, async (transaction) => {
        // Claims queue up behind one lock: a claim must see the streams the previous one took, which row
        // locks alone (SKIP LOCKED) would hide from it until that claim commits. Claims are short.
        if (db.context.postgres) await db.query(`SELECT pg_advisory_xact_lock(${OUTBOX_CLAIM_LOCK})`, [], { transaction });
        const params = new Params();
        const now = params.add(at);
        let scope = '';
        if (lease.accountId !== undefined) {
          scope = ` AND o.account_id = ${params.add(lease.accountId)}`;
          if (lease.endpointId === null) scope += ' AND o.endpoint_id IS NULL';
          else if (lease.endpointId !== undefined) scope += ` AND o.endpoint_id = ${params.add(lease.endpointId)}`;
        }
        if (except.length > 0) {
          // [accountId, endpointId | null] pairs as one JSON parameter, however many.
          const list = params.add(JSON.stringify(except.map((e) => [e.accountId, e.endpointId])));
          const pairs = db.context.postgres ? `json_array_elements(CAST(${list} AS json))` : `json_each(${list})`;
          scope += ` AND NOT EXISTS (SELECT 1 FROM ${pairs} AS x
                       WHERE x.value ->> 0 = o.account_id AND COALESCE(x.value ->> 1, '') = COALESCE(o.endpoint_id, ''))`;
        }
        const columns = lease.perEndpoint === undefined ? 'o.id' : 'o.id, o.account_id, o.endpoint_id, o.created_at';
        const candidates = `SELECT ${columns} FROM outbox o
             WHERE o.status = 'pending' AND o.next_attempt_at <= ${now}${scope}
               AND NOT EXISTS (
                 SELECT 1 FROM outbox w
                 WHERE w.account_id = o.account_id AND w.stream_key = o.stream_key AND w.status = 'pending'
                   AND ((w.next_attempt_at > ${now} AND (w.created_at < o.created_at OR (w.created_at = o.created_at AND w.id < o.id)))
                     OR w.lease_until > ${now}))`;
        // With a cap per endpoint, each endpoint's oldest are numbered and the rest left out (NULLs, the
        // default endpoints, partition by account).
        const chosen =
          lease.perEndpoint === undefined
            ? `${candidates} ORDER BY o.created_at, o.id LIMIT ${params.add(limit)}`
            : `SELECT c.id FROM (
                 SELECT m.id, m.created_at, ROW_NUMBER() OVER (PARTITION BY m.account_id, m.endpoint_id ORDER BY m.created_at, m.id) AS n
                 FROM (${candidates}) m) c
               WHERE c.n <= ${params.add(lease.perEndpoint)} ORDER BY c.created_at, c.id LIMIT ${params.add(limit)}`;
        const leaseUntil = params.add(new Date(Date.parse(at) + lease.leaseMs).toISOString());
        const rows = await db.query(
          `UPDATE outbox SET lease_until = ${leaseUntil}, lease_owner = ${params.add(lease.owner)}
           WHERE id IN (${chosen})
           RETURNING *`,
          params,
          { transaction, keepPrepared: except.length === 0 },
        );
        return rows.map(toMessage).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      });
    },
    // Every write outside a caller's transaction goes through the writer (`writing`): on SQLite, a write left
    // to autocommit on the connection reads share waited in the busy handler while a transaction held the
    // database, and every read of the API waited behind it (up to the busy timeout).
    releaseClaims: async (owner, ids) => {
      await db.writes(Math.ceil((ids?.length ?? 1) / IDS_PER_STATEMENT), async (transaction) => {
        if (ids === undefined) {
          await db.raw.run(transaction, 'UPDATE outbox SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = $1', [owner]);
          return;
        }
        for (const chunk of chunks(ids, IDS_PER_STATEMENT)) {
          const params = new Params();
          const sql = `UPDATE outbox SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = ${params.add(owner)} AND id IN (${params.list(chunk)})`;
          await db.raw.runOnce(transaction, sql, params.values);
        }
      });
    },
    update: async (message) => {
      await db.replace('outbox', db.map.outbox.toRow(message), 'outbox message');
    },
    updateMany: async (messages) => {
      if (messages.length === 0) return;
      const sql = db.context.postgres
        ? `UPDATE outbox SET status = j.value ->> 2, attempts = CAST(j.value ->> 3 AS integer), next_attempt_at = j.value ->> 4,
             last_error = j.value ->> 5, delivered_at = j.value ->> 6, lease_until = NULL, lease_owner = NULL
           FROM json_array_elements(CAST($1 AS json)) AS j(value)
           WHERE outbox.id = j.value ->> 0 AND outbox.account_id = j.value ->> 1`
        : `UPDATE outbox SET status = j.value ->> 2, attempts = j.value ->> 3, next_attempt_at = j.value ->> 4,
             last_error = j.value ->> 5, delivered_at = j.value ->> 6, lease_until = NULL, lease_owner = NULL
           FROM json_each($1) AS j
           WHERE outbox.id = j.value ->> 0 AND outbox.account_id = j.value ->> 1`;
      const rows = messages.map((m) => [m.id, m.accountId, m.status, m.attempts, m.nextAttemptAt, m.lastError ?? null, m.deliveredAt ?? null]);
      await db.writes(Math.ceil(rows.length / ROWS_PER_STATEMENT), async (transaction) => {
        for (const chunk of chunks(rows, ROWS_PER_STATEMENT)) await db.raw.run(transaction, sql, [JSON.stringify(chunk)], 'outbox message');
      });
    },
    pruneDelivered: async (before, limit) => {
      const rows = await db.single((transaction) =>
        db.query(
          `DELETE FROM outbox WHERE id IN (
             SELECT id FROM outbox WHERE status = 'delivered' AND delivered_at < $1 ORDER BY delivered_at, id LIMIT $2)
           RETURNING id`,
          [before, limit],
          { transaction },
        ),
      );
      return rows.length;
    },
    list: async (accountId, status, limit) => {
      const where: Conditions<'outbox'> = status === undefined ? [['account_id', accountId]] : [['account_id', accountId], ['status', status]];
      return (await db.select('outbox', where, OLDEST_FIRST, limit)).map(toMessage);
    },
    counts: async (accountId) => {
      const rows = await db.query('SELECT status, COUNT(*) AS n FROM outbox WHERE account_id = $1 GROUP BY status', [accountId], { keepPrepared: true });
      const counts: Record<OutboxMessage['status'], number> = { pending: 0, delivered: 0, parked: 0 };
      for (const row of rows) counts[String(row.status) as OutboxMessage['status']] = Number(row.n);
      return counts;
    },
    countsByEndpoint: async (accountId) => {
      const rows = await db.query(
        `SELECT endpoint_id, status, COUNT(*) AS n, SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END) AS tried
         FROM outbox WHERE account_id = $1 GROUP BY endpoint_id, status`,
        [accountId],
        { keepPrepared: true },
      );
      const counts = new Map<string | null, EndpointMessageCounts>();
      for (const row of rows) {
        const endpointId = row.endpoint_id === null || row.endpoint_id === undefined ? null : String(row.endpoint_id);
        let entry = counts.get(endpointId);
        if (!entry) counts.set(endpointId, (entry = { endpointId, pending: 0, failing: 0, delivered: 0, parked: 0 }));
        const status = String(row.status) as OutboxMessage['status'];
        entry[status] = Number(row.n);
        if (status === 'pending') entry.failing = Number(row.tried);
      }
      return [...counts.values()];
    },
    listForEndpoint: async (accountId, endpointId, filter, limit) => {
      const params = new Params();
      const where = [`account_id = ${params.add(accountId)}`, endpointId === null ? 'endpoint_id IS NULL' : `endpoint_id = ${params.add(endpointId)}`];
      if (filter.status !== undefined) where.push(`status = ${params.add(filter.status)}`);
      if (filter.since !== undefined) where.push(`created_at >= ${params.add(filter.since)}`);
      if (filter.until !== undefined) where.push(`created_at < ${params.add(filter.until)}`);
      let sql = `SELECT ${columnList('outbox')} FROM outbox WHERE ${where.join(' AND ')}${orderOf<'outbox'>(OLDEST_FIRST)}`;
      if (limit !== undefined) sql += ` LIMIT ${params.add(limit)}`;
      return (await db.query(sql, params)).map(toMessage);
    },
    removeEndpointDeliveries: (accountId, endpointId) =>
      db.remove('outbox', [
        ['account_id', accountId],
        ['endpoint_id', endpointId],
      ]),
  };
}

export function webhookAttemptsRepository(db: SqlAccess): WebhookAttemptRepository {
  return {
    addMany: (attempts) => db.insertRows('webhook_attempts', attempts.map((attempt) => db.map.webhook_attempts.toRow(attempt)), 'webhook attempt'),
    list: async (accountId, filter, limit, after) => {
      const params = new Params();
      const conditions = [`account_id = ${params.add(accountId)}`];
      if (filter.endpointId === null) conditions.push('endpoint_id IS NULL');
      else if (filter.endpointId !== undefined) conditions.push(`endpoint_id = ${params.add(filter.endpointId)}`);
      if (filter.type !== undefined) conditions.push(`type = ${params.add(filter.type)}`);
      if (filter.patientId !== undefined) conditions.push(`patient_id = ${params.add(filter.patientId)}`);
      if (filter.outcome !== undefined) conditions.push(`outcome = ${params.add(filter.outcome)}`);
      if (filter.since !== undefined) conditions.push(`attempted_at >= ${params.add(filter.since)}`);
      if (filter.until !== undefined) conditions.push(`attempted_at < ${params.add(filter.until)}`);
      if (after !== undefined) {
        const afterAt = params.add(after.attemptedAt);
        conditions.push(`(attempted_at < ${afterAt} OR (attempted_at = ${afterAt} AND id < ${params.add(after.id)}))`);
      }
      const rows = await db.query(
        `SELECT * FROM webhook_attempts WHERE ${conditions.join(' AND ')} ORDER BY attempted_at DESC, id DESC LIMIT ${params.add(limit)}`,
        params,
      );
      return rows.map((row) => db.map.webhook_attempts.fromRow(row));
    },
    prune: async (before, limit) => {
      const rows = await db.single((transaction) =>
        db.query(
          `DELETE FROM webhook_attempts WHERE id IN (
             SELECT id FROM webhook_attempts WHERE attempted_at < $1 ORDER BY attempted_at, id LIMIT $2)
           RETURNING id`,
          [before, limit],
          { transaction },
        ),
      );
      return rows.length;
    },
  };
}
