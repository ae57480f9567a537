import { Op, type WhereOptions } from 'sequelize';
import type { EndpointMessageCounts, OutboxMessage } from '../../../../core/domain/types.js';
import type { OutboxRepository, WebhookAttemptRepository } from '../../../../core/ports/storage.port.js';
import type { Row } from '../models.js';
import { IDS_PER_STATEMENT, OLDEST_FIRST, OUTBOX_CLAIM_LOCK, ROWS_PER_STATEMENT, chunks, type SqlAccess } from '../sql-access.js';

/* The webhook outbox: messages, their claims by delivery passes, their retention. */

export function outboxRepository(db: SqlAccess): OutboxRepository {
  const { outbox: model } = db.models;
  const toMessage = (row: Row) => db.map.outbox(row);
  return {
    add: (message) => db.insertRows(model, [db.map.outboxRow(message)], `outbox message ${message.id}`),
    get: async (accountId, id) => {
      const row = await db.findOne(model, { account_id: accountId, id });
      return row && toMessage(row);
    },
    claim: async (now, limit, lease) => {
      let scope = '';
      if (lease.accountId !== undefined) {
        scope = ' AND o.account_id = :accountId';
        if (lease.endpointId === null) scope += ' AND o.endpoint_id IS NULL';
        else if (lease.endpointId !== undefined) scope += ' AND o.endpoint_id = :endpointId';
      }
      const except = lease.exceptEndpoints ?? [];
      if (except.length > 0) {
        // [accountId, endpointId | null] pairs as one JSON parameter, however many.
        const pairs = db.context.postgres ? 'json_array_elements(CAST(:except AS json))' : 'json_each(:except)';
        scope += ` AND NOT EXISTS (SELECT 1 FROM ${pairs} AS x
                     WHERE x.value ->> 0 = o.account_id AND COALESCE(x.value ->> 1, '') = COALESCE(o.endpoint_id, ''))`;
      }
      const claimableFrom = (columns: string) => `SELECT ${columns} FROM outbox o
           WHERE o.status = 'pending' AND o.next_attempt_at <= :now${scope}
             AND NOT EXISTS (
               SELECT 1 FROM outbox w
               WHERE w.account_id = o.account_id AND w.stream_key = o.stream_key AND w.status = 'pending'
                 AND ((w.next_attempt_at > :now AND (w.created_at < o.created_at OR (w.created_at = o.created_at AND w.id < o.id)))
                   OR w.lease_until > :now))`;
      const claimable = claimableFrom(lease.perEndpoint === undefined ? 'o.id' : 'o.id, o.account_id, o.endpoint_id, o.created_at');
      const replacements = {
        now,
        limit,
        accountId: lease.accountId ?? null,
        endpointId: lease.endpointId ?? null,
        perEndpoint: lease.perEndpoint ?? null,
        except: JSON.stringify(except.map((e) => [e.accountId, e.endpointId])),
        owner: lease.owner,
        leaseUntil: new Date(Date.parse(now) + lease.leaseMs).toISOString(),
      };
      // Most claims find nothing (a poll while every endpoint with messages has its lane, woken by each job
      // that ends): a read says so without a turn of the writer, which on SQLite every write of the journey
      // waits for. A message that lands after the read is the next poll's, as if this claim had run earlier.
      if (limit < 1 || (db.transaction === undefined && (await db.select(`${claimableFrom('1')} LIMIT 1`, replacements)).length === 0)) return [];
      return db.atomic(async (transaction) => {
        // Claims queue up behind one lock: a claim must see the streams the previous one took, which row
        // locks alone (SKIP LOCKED) would hide from it until that claim commits. Claims are short.
        if (db.context.postgres) await db.select('SELECT pg_advisory_xact_lock(:key)', { key: OUTBOX_CLAIM_LOCK }, transaction);
        // With a cap per endpoint, each endpoint's oldest are numbered and the rest left out (NULLs, the
        // default endpoints, partition by account).
        const chosen =
          lease.perEndpoint === undefined
            ? `${claimable} ORDER BY o.created_at, o.id LIMIT :limit`
            : `SELECT c.id FROM (
                 SELECT m.id, m.created_at, ROW_NUMBER() OVER (PARTITION BY m.account_id, m.endpoint_id ORDER BY m.created_at, m.id) AS n
                 FROM (${claimable}) m) c
               WHERE c.n <= :perEndpoint ORDER BY c.created_at, c.id LIMIT :limit`;
        const rows = await db.select(
          `UPDATE outbox SET lease_until = :leaseUntil, lease_owner = :owner
           WHERE id IN (${chosen})
           RETURNING *`,
          replacements,
          transaction,
        );
        return rows.map(toMessage).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      });
    },
    // Every write outside a caller's transaction goes through the writer (`writing`): on SQLite, a write left
    // to autocommit on the connection reads share waited in the busy handler while a transaction held the
    // database, and every read of the API waited behind it (up to the busy timeout).
    releaseClaims: async (owner, ids) => {
      await db.writing(async (transaction) => {
        if (ids === undefined) {
          await db.sequelize.query('UPDATE outbox SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = :owner', { replacements: { owner }, transaction });
          return;
        }
        for (const chunk of chunks(ids, IDS_PER_STATEMENT)) {
          await db.sequelize.query('UPDATE outbox SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = :owner AND id IN (:ids)', {
            replacements: { owner, ids: chunk },
            transaction,
          });
        }
      });
    },
    update: async (message) => {
      await db.replace(model, db.map.outboxRow(message));
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
           FROM json_each(?) AS j
           WHERE outbox.id = j.value ->> 0 AND outbox.account_id = j.value ->> 1`;
      const rows = messages.map((m) => [m.id, m.accountId, m.status, m.attempts, m.nextAttemptAt, m.lastError ?? null, m.deliveredAt ?? null]);
      await db.atomic(async (transaction) => {
        for (const chunk of chunks(rows, ROWS_PER_STATEMENT)) await db.raw.run(transaction, sql, [JSON.stringify(chunk)], 'outbox message');
      });
    },
    pruneDelivered: async (before, limit) => {
      const rows = await db.writing((transaction) =>
        db.select(
          `DELETE FROM outbox WHERE id IN (
             SELECT id FROM outbox WHERE status = 'delivered' AND delivered_at < :before ORDER BY delivered_at, id LIMIT :limit)
           RETURNING id`,
          { before, limit },
          transaction,
        ),
      );
      return rows.length;
    },
    list: async (accountId, status, limit) => {
      const where: WhereOptions = { account_id: accountId };
      if (status !== undefined) where.status = status;
      return (await db.findAll(model, where, OLDEST_FIRST, limit)).map(toMessage);
    },
    counts: async (accountId) => {
      const rows = await db.select(`SELECT status, COUNT(*) AS n FROM outbox WHERE account_id = :accountId GROUP BY status`, { accountId });
      const counts: Record<OutboxMessage['status'], number> = { pending: 0, delivered: 0, parked: 0 };
      for (const row of rows) counts[String(row.status) as OutboxMessage['status']] = Number(row.n);
      return counts;
    },
    countsByEndpoint: async (accountId) => {
      const rows = await db.select(
        `SELECT endpoint_id, status, COUNT(*) AS n, SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END) AS tried
         FROM outbox WHERE account_id = :accountId GROUP BY endpoint_id, status`,
        { accountId },
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
      const where: WhereOptions = { account_id: accountId, endpoint_id: endpointId === null ? { [Op.is]: null } : endpointId };
      if (filter.status !== undefined) where.status = filter.status;
      if (filter.since !== undefined || filter.until !== undefined) {
        where.created_at = {
          ...(filter.since === undefined ? {} : { [Op.gte]: filter.since }),
          ...(filter.until === undefined ? {} : { [Op.lt]: filter.until }),
        };
      }
      return (await db.findAll(model, where, OLDEST_FIRST, limit)).map(toMessage);
    },
    removeEndpointDeliveries: (accountId, endpointId) => db.destroy(model, { account_id: accountId, endpoint_id: endpointId }),
  };
}

export function webhookAttemptsRepository(db: SqlAccess): WebhookAttemptRepository {
  const { webhookAttempts: model } = db.models;
  return {
    addMany: (attempts) => db.insertRows(model, attempts.map((attempt) => db.map.webhookAttemptRow(attempt)), 'webhook attempt'),
    list: async (accountId, filter, limit, after) => {
      const conditions = ['account_id = :accountId'];
      const replacements: Record<string, unknown> = { accountId, limit };
      if (filter.endpointId === null) conditions.push('endpoint_id IS NULL');
      else if (filter.endpointId !== undefined) conditions.push('endpoint_id = :endpointId');
      if (filter.type !== undefined) conditions.push('type = :type');
      if (filter.patientId !== undefined) conditions.push('patient_id = :patientId');
      if (filter.outcome !== undefined) conditions.push('outcome = :outcome');
      if (filter.since !== undefined) conditions.push('attempted_at >= :since');
      if (filter.until !== undefined) conditions.push('attempted_at < :until');
      if (after !== undefined) conditions.push('(attempted_at < :afterAt OR (attempted_at = :afterAt AND id < :afterId))');
      Object.assign(replacements, {
        endpointId: filter.endpointId ?? null,
        type: filter.type ?? null,
        patientId: filter.patientId ?? null,
        outcome: filter.outcome ?? null,
        since: filter.since ?? null,
        until: filter.until ?? null,
        afterAt: after?.attemptedAt ?? null,
        afterId: after?.id ?? null,
      });
      const rows = await db.select(
        `SELECT * FROM webhook_attempts WHERE ${conditions.join(' AND ')} ORDER BY attempted_at DESC, id DESC LIMIT :limit`,
        replacements,
      );
      return rows.map((row) => db.map.webhookAttempt(row));
    },
    prune: async (before, limit) => {
      const rows = await db.writing((transaction) =>
        db.select(
          `DELETE FROM webhook_attempts WHERE id IN (
             SELECT id FROM webhook_attempts WHERE attempted_at < :before ORDER BY attempted_at, id LIMIT :limit)
           RETURNING id`,
          { before, limit },
          transaction,
        ),
      );
      return rows.length;
    },
  };
}
