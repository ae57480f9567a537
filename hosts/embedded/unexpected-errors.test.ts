import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import { openDatabase } from '../../runtime/database.js';
import { createCarebridge } from './carebridge.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A pino logger whose JSON lines are kept in `lines`. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('a failure on our side', () => {
  test('answers a 500 problem with a request id and no word of the database, and is logged at error level with that id', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'carebridge-unexpected-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const sequelize = await openDatabase({ dataDir });
    const { logger, lines } = capturingLogger();
    const carebridge = await createCarebridge({ dataDir, database: sequelize, publicUrl: 'http://127.0.0.1:1', background: false, logger });
    // Its close gives back queue leases through the database that is gone by then.
    cleanups.push(() => carebridge.close().catch(() => undefined));
    const { apiKey } = await carebridge.createAccount('Acme');
    // The database goes away under the service: every storage call now fails.
    await sequelize.close();

    const request = { method: 'GET', path: '/medical/v1/facility', query: {}, headers: { 'x-api-key': apiKey } };
    const answer = await carebridge.handler(request);
    expect(answer.status).toBe(500);
    const body = answer.body as Record<string, unknown>;
    expect(body).toMatchObject({ status: 500, code: 'INTERNAL', requestId: expect.any(String) });
    expect(JSON.stringify(body)).not.toMatch(/sequelize|sqlite|postgres|database|SQL|connection/i);
    expect(answer.headers['x-request-id']).toBe(body.requestId);

    const logged = lines.filter((line) => line.msg === 'unexpected error');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 50, requestId: body.requestId, method: 'GET', route: '/medical/v1/facility' });

    // A caller's own request id is the one carried, so both sides can quote it.
    const traced = await carebridge.handler({ ...request, headers: { ...request.headers, 'x-request-id': 'trace-4711' } });
    expect(traced.body).toMatchObject({ requestId: 'trace-4711' });
    expect(lines.filter((line) => line.msg === 'unexpected error').at(-1)).toMatchObject({ level: 50, requestId: 'trace-4711' });
  });
});
