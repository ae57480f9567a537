import { type Transaction } from 'sequelize';
import type { AccountRepository, CohortRepository, FacilityRepository, OrganizationRepository, WebhookEndpointRepository, WebhookSettingsRepository } from '../../../../core/ports/storage.port.js';
import { Params } from '../raw-sql.js';
import { IDS_PER_STATEMENT, OLDEST_FIRST, chunks, copy, owned, type SqlAccess } from '../sql-access.js';

/* Accounts, their webhook settings, organization, facilities and cohorts. */

export function accountsRepository(db: SqlAccess): AccountRepository {
  return {
    insert: (account) => db.insertRows('accounts', [db.map.accounts.toRow(account)], `account ${account.id}`),
    get: async (id) => {
      const row = await db.selectOne('accounts', [['id', id]]);
      return row && db.map.accounts.fromRow(row);
    },
    getByApiKeyHash: async (apiKeyHash) => {
      const row = await db.selectOne('accounts', [['api_key_hash', apiKeyHash]]);
      return row && db.map.accounts.fromRow(row);
    },
    list: async () => (await db.select('accounts', [], OLDEST_FIRST)).map((row) => db.map.accounts.fromRow(row)),
    replaceApiKey: async (id, apiKeyHash, apiKeyPrefix) => {
      // A key hash another account has breaks the unique index: the driver's failure is a CONFLICT.
      const run = (transaction: Transaction) =>
        db.raw.runOnce(transaction, 'UPDATE accounts SET api_key_hash = $1, api_key_prefix = $2 WHERE id = $3', [apiKeyHash, apiKeyPrefix, id], 'account with this API key');
      return (await db.writing(run)) > 0;
    },
  };
}

/*
 * An endpoint's failure clock and status are single UPDATE statements with their condition in the WHERE
 * (see the port): on PostgreSQL a concurrent one waits for the row and evaluates its WHERE again on the
 * row as the other left it, so of two `disable`s one changes the row and the other finds it off.
 */

/**
 * The UPDATE of the failure clock: keeps a set clock (COALESCE) or clears it; returns the row's value, none
 * when no row matched. `$1` is the clock; the key's values follow. The CAST gives PostgreSQL the type of a
 * parameter it first meets in `IS NULL`.
 */
function failingSinceUpdate(table: string, keyCondition: string): string {
  return `UPDATE ${table} SET failing_since = CASE WHEN CAST($1 AS text) IS NULL THEN NULL ELSE COALESCE(failing_since, CAST($1 AS text)) END WHERE ${keyCondition} RETURNING failing_since`;
}

export function webhookSettingsRepository(db: SqlAccess): WebhookSettingsRepository {
  return {
    get: async (accountId) => {
      const row = await db.selectOne('webhook_settings', [['account_id', accountId]]);
      return row && db.map.webhook_settings.fromRow(row);
    },
    put: (settings) => db.upsertRows('webhook_settings', [db.map.webhook_settings.toRow(settings)], 'webhook settings', db.transaction, ['failing_since']),
    setFailingSince: (accountId, at) =>
      db.writing(async (transaction) => {
        const [row] = await db.query(failingSinceUpdate('webhook_settings', 'account_id = $2'), [at, accountId], { transaction });
        return row === undefined ? undefined : ((row.failing_since as string | null | undefined) ?? null);
      }),
    setStatusDetail: (accountId, statusDetail, updatedAt) =>
      db.writing(async (transaction) => {
        const rows = await db.query(
          'UPDATE webhook_settings SET webhook_status_detail = $1, updated_at = $2 WHERE account_id = $3 AND webhook_enabled = $4 RETURNING account_id',
          [statusDetail, updatedAt, accountId, true],
          { transaction },
        );
        return rows.length > 0;
      }),
    disable: (accountId, change) =>
      db.writing(async (transaction) => {
        const params = new Params();
        const sets = `webhook_enabled = ${params.add(false)}, webhook_status_detail = ${params.add(change.statusDetail)}, updated_at = ${params.add(change.updatedAt)}`;
        let where = `account_id = ${params.add(accountId)} AND webhook_enabled = ${params.add(true)}`;
        if (change.failingSinceAtMost !== undefined) where += ` AND failing_since IS NOT NULL AND failing_since <= ${params.add(change.failingSinceAtMost)}`;
        const [row] = await db.query(`UPDATE webhook_settings SET ${sets} WHERE ${where} RETURNING *`, params, { transaction });
        return row && db.map.webhook_settings.fromRow(row);
      }),
  };
}

export function webhookEndpointsRepository(db: SqlAccess): WebhookEndpointRepository {
  const get = async (accountId: string, id: string) => {
    const row = await db.selectOne('webhook_endpoints', owned(accountId, id));
    return row && db.map.webhook_endpoints.fromRow(row);
  };
  return {
    insert: (endpoint) => db.insertRows('webhook_endpoints', [db.map.webhook_endpoints.toRow(endpoint)], `webhook endpoint ${endpoint.id}`),
    get,
    list: async (accountId) => (await db.select('webhook_endpoints', [['account_id', accountId]], OLDEST_FIRST)).map((row) => db.map.webhook_endpoints.fromRow(row)),
    count: (accountId) => db.count('webhook_endpoints', [['account_id', accountId]]),
    update: async (endpoint) => {
      // Everything but the failure clock, which has its own method.
      const { failing_since: _clock, ...row } = db.map.webhook_endpoints.toRow(endpoint);
      return (await db.replace('webhook_endpoints', row, 'webhook endpoint')) ? get(endpoint.accountId, endpoint.id) : undefined;
    },
    remove: async (accountId, id) => (await db.remove('webhook_endpoints', owned(accountId, id))) > 0,
    setFailingSince: (accountId, id, at) =>
      db.writing(async (transaction) => {
        const [row] = await db.query(failingSinceUpdate('webhook_endpoints', 'account_id = $2 AND id = $3'), [at, accountId, id], { transaction });
        return row === undefined ? undefined : ((row.failing_since as string | null | undefined) ?? null);
      }),
    setStatusDetail: (accountId, id, statusDetail, updatedAt) =>
      db.writing(async (transaction) => {
        const rows = await db.query(
          'UPDATE webhook_endpoints SET status_detail = $1, updated_at = $2 WHERE account_id = $3 AND id = $4 AND enabled = $5 RETURNING id',
          [statusDetail, updatedAt, accountId, id, true],
          { transaction },
        );
        return rows.length > 0;
      }),
    disable: (accountId, id, change) =>
      db.writing(async (transaction) => {
        const params = new Params();
        const sets = `enabled = ${params.add(false)}, status_detail = ${params.add(change.statusDetail)}, updated_at = ${params.add(change.updatedAt)}`;
        let where = `account_id = ${params.add(accountId)} AND id = ${params.add(id)} AND enabled = ${params.add(true)}`;
        if (change.failingSinceAtMost !== undefined) where += ` AND failing_since IS NOT NULL AND failing_since <= ${params.add(change.failingSinceAtMost)}`;
        const [row] = await db.query(`UPDATE webhook_endpoints SET ${sets} WHERE ${where} RETURNING *`, params, { transaction });
        return row && db.map.webhook_endpoints.fromRow(row);
      }),
  };
}

export function organizationsRepository(db: SqlAccess): OrganizationRepository {
  return {
    insert: (org) => db.insertRows('organizations', [db.map.organizations.toRow(org)], `organization ${org.id}`),
    getByAccount: async (accountId) => {
      const row = await db.selectOne('organizations', [['account_id', accountId]]);
      return row && db.map.organizations.fromRow(row);
    },
    update: async (org) => ((await db.replace('organizations', db.map.organizations.toRow(org), 'organization')) ? copy(org) : undefined),
  };
}

export function facilitiesRepository(db: SqlAccess): FacilityRepository {
  return {
    insert: (facility) => db.insertRows('facilities', [db.map.facilities.toRow(facility)], `facility ${facility.id}`),
    get: async (accountId, id) => {
      const row = await db.selectOne('facilities', owned(accountId, id));
      return row && db.map.facilities.fromRow(row);
    },
    list: async (accountId) => (await db.select('facilities', [['account_id', accountId]], OLDEST_FIRST)).map((row) => db.map.facilities.fromRow(row)),
    update: async (facility) => ((await db.replace('facilities', db.map.facilities.toRow(facility), 'facility')) ? copy(facility) : undefined),
    remove: async (accountId, id) => (await db.remove('facilities', owned(accountId, id))) > 0,
  };
}

export function cohortsRepository(db: SqlAccess): CohortRepository {
  return {
    insert: (cohort) => db.insertRows('cohorts', [db.map.cohorts.toRow(cohort)], `cohort ${cohort.id}`),
    get: async (accountId, id) => {
      const row = await db.selectOne('cohorts', owned(accountId, id));
      return row && db.map.cohorts.fromRow(row);
    },
    existingIds: async (accountId, ids) => {
      const found: string[] = [];
      for (const chunk of chunks([...new Set(ids)], IDS_PER_STATEMENT)) {
        const params = new Params();
        const rows = await db.query(`SELECT id FROM cohorts WHERE account_id = ${params.add(accountId)} AND id IN (${params.list(chunk)})`, params);
        for (const row of rows) found.push(String(row.id));
      }
      return found;
    },
    list: async (accountId) => (await db.select('cohorts', [['account_id', accountId]], OLDEST_FIRST)).map((row) => db.map.cohorts.fromRow(row)),
    update: async (cohort) => ((await db.replace('cohorts', db.map.cohorts.toRow(cohort), 'cohort')) ? copy(cohort) : undefined),
    remove: async (accountId, id) => (await db.remove('cohorts', owned(accountId, id))) > 0,
  };
}
