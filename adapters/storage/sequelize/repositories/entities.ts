import { type Transaction } from 'sequelize';
import type { AccountRepository, CohortRepository, FacilityRepository, OrganizationRepository, WebhookEndpointRepository, WebhookSettingsRepository } from '../../../../core/ports/storage.port.js';
import type { Row } from '../models.js';
import { IDS_PER_STATEMENT, OLDEST_FIRST, chunks, copy, type SqlAccess } from '../sql-access.js';

/* Accounts, their webhook settings, organization, facilities and cohorts. */

export function accountsRepository(db: SqlAccess): AccountRepository {
  const { accounts: model } = db.models;
  return {
    insert: (account) => db.insertRows(model, [db.map.accountRow(account)], `account ${account.id}`),
    get: async (id) => {
      const row = await db.findOne(model, { id });
      return row && db.map.account(row);
    },
    getByApiKeyHash: async (apiKeyHash) => {
      const row = await db.findOne(model, { api_key_hash: apiKeyHash });
      return row && db.map.account(row);
    },
    list: async () => (await db.findAll(model, {}, OLDEST_FIRST)).map((row) => db.map.account(row)),
    replaceApiKey: async (id, apiKeyHash, apiKeyPrefix) => {
      const sql = db.context.postgres
        ? 'UPDATE accounts SET api_key_hash = $1, api_key_prefix = $2 WHERE id = $3'
        : 'UPDATE accounts SET api_key_hash = ?, api_key_prefix = ? WHERE id = ?';
      // A key hash another account has breaks the unique index: the driver's failure is a CONFLICT.
      const run = (transaction: Transaction) => db.raw.runOnce(transaction, sql, [apiKeyHash, apiKeyPrefix, id], 'account with this API key');
      return (db.transaction ? await run(db.transaction) : await db.atomic(run)) > 0;
    },
  };
}

/*
 * An endpoint's failure clock and status are single UPDATE statements with their condition in the WHERE
 * (see the port): on PostgreSQL a concurrent one waits for the row and evaluates its WHERE again on the
 * row as the other left it, so of two `disable`s one changes the row and the other finds it off.
 */

/** The UPDATE of the failure clock: keeps a set clock (COALESCE) or clears it; returns the row's value, none when no row matched. */
function failingSinceUpdate(table: string, keyCondition: string): string {
  return `UPDATE ${table} SET failing_since = CASE WHEN :at IS NULL THEN NULL ELSE COALESCE(failing_since, :at) END WHERE ${keyCondition} RETURNING failing_since`;
}

export function webhookSettingsRepository(db: SqlAccess): WebhookSettingsRepository {
  const { webhookSettings: model } = db.models;
  return {
    get: async (accountId) => {
      const row = await db.findOne(model, { account_id: accountId });
      return row && db.map.webhookSettings(row);
    },
    put: (settings) => db.upsertRows(model, [db.map.webhookSettingsRow(settings)], db.transaction, ['failing_since']),
    setFailingSince: (accountId, at) =>
      db.writing(async (transaction) => {
        const [row] = await db.select(failingSinceUpdate('webhook_settings', 'account_id = :accountId'), { accountId, at }, transaction);
        return row === undefined ? undefined : ((row.failing_since as string | null | undefined) ?? null);
      }),
    setStatusDetail: (accountId, statusDetail, updatedAt) =>
      db.writing(async (transaction) => {
        const rows = await db.select(
          'UPDATE webhook_settings SET webhook_status_detail = :statusDetail, updated_at = :updatedAt WHERE account_id = :accountId AND webhook_enabled = :on RETURNING account_id',
          { accountId, statusDetail, updatedAt, on: true },
          transaction,
        );
        return rows.length > 0;
      }),
    disable: (accountId, change) =>
      db.writing(async (transaction) => {
        const [row] = await db.select(
          `UPDATE webhook_settings SET webhook_enabled = :off, webhook_status_detail = :statusDetail, updated_at = :updatedAt
           WHERE account_id = :accountId AND webhook_enabled = :on${change.failingSinceAtMost === undefined ? '' : ' AND failing_since IS NOT NULL AND failing_since <= :atMost'}
           RETURNING *`,
          { accountId, statusDetail: change.statusDetail, updatedAt: change.updatedAt, atMost: change.failingSinceAtMost ?? null, on: true, off: false },
          transaction,
        );
        return row && db.map.webhookSettings(row);
      }),
  };
}

export function webhookEndpointsRepository(db: SqlAccess): WebhookEndpointRepository {
  const { webhookEndpoints: model } = db.models;
  const get = async (accountId: string, id: string) => {
    const row = await db.findOne(model, { account_id: accountId, id });
    return row && db.map.webhookEndpoint(row);
  };
  return {
    insert: (endpoint) => db.insertRows(model, [db.map.webhookEndpointRow(endpoint)], `webhook endpoint ${endpoint.id}`),
    get,
    list: async (accountId) => (await db.findAll(model, { account_id: accountId }, OLDEST_FIRST)).map((row) => db.map.webhookEndpoint(row)),
    count: (accountId) => model.count({ where: { account_id: accountId }, transaction: db.transaction }),
    update: async (endpoint) => {
      // Everything but the failure clock, which has its own method.
      const { failing_since: _clock, ...row } = db.map.webhookEndpointRow(endpoint);
      return (await db.replace(model, row)) ? get(endpoint.accountId, endpoint.id) : undefined;
    },
    remove: async (accountId, id) => (await db.destroy(model, { account_id: accountId, id })) > 0,
    setFailingSince: (accountId, id, at) =>
      db.writing(async (transaction) => {
        const [row] = await db.select(failingSinceUpdate('webhook_endpoints', 'account_id = :accountId AND id = :id'), { accountId, id, at }, transaction);
        return row === undefined ? undefined : ((row.failing_since as string | null | undefined) ?? null);
      }),
    setStatusDetail: (accountId, id, statusDetail, updatedAt) =>
      db.writing(async (transaction) => {
        const rows = await db.select(
          'UPDATE webhook_endpoints SET status_detail = :statusDetail, updated_at = :updatedAt WHERE account_id = :accountId AND id = :id AND enabled = :on RETURNING id',
          { accountId, id, statusDetail, updatedAt, on: true },
          transaction,
        );
        return rows.length > 0;
      }),
    disable: (accountId, id, change) =>
      db.writing(async (transaction) => {
        const [row] = await db.select(
          `UPDATE webhook_endpoints SET enabled = :off, status_detail = :statusDetail, updated_at = :updatedAt
           WHERE account_id = :accountId AND id = :id AND enabled = :on${change.failingSinceAtMost === undefined ? '' : ' AND failing_since IS NOT NULL AND failing_since <= :atMost'}
           RETURNING *`,
          { accountId, id, statusDetail: change.statusDetail, updatedAt: change.updatedAt, atMost: change.failingSinceAtMost ?? null, on: true, off: false },
          transaction,
        );
        return row && db.map.webhookEndpoint(row);
      }),
  };
}

export function organizationsRepository(db: SqlAccess): OrganizationRepository {
  const { organizations: model } = db.models;
  return {
    insert: (org) => db.insertRows(model, [db.map.organizationRow(org)], `organization ${org.id}`),
    getByAccount: async (accountId) => {
      const row = await db.findOne(model, { account_id: accountId });
      return row && db.map.organization(row);
    },
    update: async (org) => ((await db.replace(model, db.map.organizationRow(org))) ? copy(org) : undefined),
  };
}

export function facilitiesRepository(db: SqlAccess): FacilityRepository {
  const { facilities: model } = db.models;
  return {
    insert: (facility) => db.insertRows(model, [db.map.facilityRow(facility)], `facility ${facility.id}`),
    get: async (accountId, id) => {
      const row = await db.findOne(model, { account_id: accountId, id });
      return row && db.map.facility(row);
    },
    list: async (accountId) => (await db.findAll(model, { account_id: accountId }, OLDEST_FIRST)).map((row) => db.map.facility(row)),
    update: async (facility) => ((await db.replace(model, db.map.facilityRow(facility))) ? copy(facility) : undefined),
    remove: async (accountId, id) => (await db.destroy(model, { account_id: accountId, id })) > 0,
  };
}

export function cohortsRepository(db: SqlAccess): CohortRepository {
  const { cohorts: model } = db.models;
  return {
    insert: (cohort) => db.insertRows(model, [db.map.cohortRow(cohort)], `cohort ${cohort.id}`),
    get: async (accountId, id) => {
      const row = await db.findOne(model, { account_id: accountId, id });
      return row && db.map.cohort(row);
    },
    existingIds: async (accountId, ids) => {
      const found: string[] = [];
      for (const chunk of chunks([...new Set(ids)], IDS_PER_STATEMENT)) {
        const rows = await model.findAll({
          attributes: ['id'],
          where: { account_id: accountId, id: chunk },
          raw: true,
          transaction: db.transaction,
        });
        for (const row of rows as unknown as Row[]) found.push(String(row.id));
      }
      return found;
    },
    list: async (accountId) => (await db.findAll(model, { account_id: accountId }, OLDEST_FIRST)).map((row) => db.map.cohort(row)),
    update: async (cohort) => ((await db.replace(model, db.map.cohortRow(cohort))) ? copy(cohort) : undefined),
    remove: async (accountId, id) => (await db.destroy(model, { account_id: accountId, id })) > 0,
  };
}
