import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, vi } from 'vitest';
import { at, builders } from '../../../spec/ports/storage/fixtures.js';
import { SteppedClock } from '../../clock/stepped.clock.js';
import { SequentialIds } from '../../ids/sequential.ids.js';
import { SqlQueue } from '../../queue/sql/sql.queue.js';
import { openSequelize } from './connection.js';
import { SequelizeStorage } from './sequelize.storage.js';

test('the storage\'s reads and writes and the queue\'s claims and completions run on the driver, none through Sequelize\'s query path (models included)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-driver-'));
  const sequelize = await openSequelize({ dataDir: dir });
  try {
    const storage = await SequelizeStorage.open({ sequelize });
    const clock = new SteppedClock('2026-03-01T09:00:00.000Z');
    const queue = await SqlQueue.open({ sequelize, clock, ids: new SequentialIds() });
    // Opened (migrations are Sequelize's): from here on, every statement Sequelize runs, a model's included, is counted.
    const statements: string[] = [];
    const original = sequelize.query.bind(sequelize) as (sql: string, options?: object) => Promise<unknown>;
    const query = vi.spyOn(sequelize, 'query').mockImplementation(((sql: string, options?: object) => {
      statements.push(String(sql));
      return original(sql, options);
    }) as never);

    const make = builders();
    const account = make.account();
    await storage.accounts.insert(account);
    expect(await storage.accounts.getByApiKeyHash(account.apiKeyHash)).toEqual(account);
    const patient = make.patient(account.id);
    await storage.patients.insert(patient);
    expect(await storage.patients.get(account.id, patient.id)).toEqual(patient);
    expect(await storage.patients.update(patient)).toMatchObject({ id: patient.id, version: patient.version + 1 });
    expect(await storage.patients.list(account.id, { facilityId: patient.facilityIds[0], limit: 10 })).toHaveLength(1);
    const cohort = make.cohort(account.id);
    await storage.cohorts.insert(cohort);
    expect(await storage.cohorts.existingIds(account.id, [cohort.id, 'missing'])).toEqual([cohort.id]);
    expect(await storage.cohorts.remove(account.id, cohort.id)).toBe(true);
    const request = make.bulkRequest(account.id, { facilityId: patient.facilityIds[0]! });
    await storage.bulkRequests.insert(request);
    expect(await storage.bulkRequests.updateIfStatus({ ...request, status: 'processing' }, request.status)).toBeDefined();
    await storage.bulkRows.putMany([{ requestId: request.id, rowIndex: 0, status: 'succeeded', action: 'created', patientId: patient.id }]);
    expect(await storage.bulkRows.range(request.id, 0, 10)).toHaveLength(1);
    expect(await storage.bulkRows.nextRowIndex(request.id)).toBe(1);
    const endpoint = make.webhookEndpoint(account.id);
    await storage.webhookEndpoints.insert(endpoint);
    expect(await storage.webhookEndpoints.count(account.id)).toBe(1);
    expect(await storage.webhookEndpoints.setFailingSince(account.id, endpoint.id, at(5))).toBe(at(5));
    await storage.outbox.add(make.outbox(account.id, { endpointId: endpoint.id }));
    const [claimed] = await storage.outbox.claim(at(10), 10, { owner: 'owner', leaseMs: 60_000 });
    expect(claimed).toBeDefined();
    await storage.outbox.updateMany([{ ...claimed!, status: 'delivered', deliveredAt: at(11) }]);
    await storage.outbox.releaseClaims('owner', [claimed!.id]);
    expect(await storage.outbox.listForEndpoint(account.id, endpoint.id, { since: at(0) }, 10)).toHaveLength(1);
    await storage.transaction(async (tx) => {
      await tx.patients.lockAccount(account.id);
      expect(await tx.patients.get(account.id, patient.id)).toBeDefined();
    });

    const jobId = await queue.enqueue({ type: 'work', payload: { n: 1 } });
    const [job] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: 60_000 });
    expect(job?.id).toBe(jobId);
    expect(await queue.extendLease(jobId, 'w', 60_000)).toBe(true);
    await queue.complete(jobId, 'w');
    await queue.enqueue({ type: 'work', payload: { n: 2 } });
    const [failing] = await queue.claim({ workerId: 'w', limit: 1, leaseMs: 60_000, types: ['work'], lanes: ['interactive'] });
    expect(await queue.fail(failing!.id, 'w', { error: 'failed' })).toBe('retrying');
    expect(await queue.stats()).toMatchObject({ done: 1, pending: 1 });

    expect(statements).toEqual([]);
    // The spy sees what goes through Sequelize: this test can tell.
    await sequelize.query('SELECT 1');
    expect(statements).toEqual(['SELECT 1']);
    query.mockRestore();
    await storage.close();
  } finally {
    await sequelize.close();
    await rm(dir, { recursive: true, force: true });
  }
});
