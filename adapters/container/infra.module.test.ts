import 'reflect-metadata';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Container } from 'inversify';
import { Sequelize } from 'sequelize';
import { describe, expect, test } from 'vitest';
import { FsBlob } from '../blob/fs/fs.blob.js';
import { MemoryBlob } from '../blob/memory/memory.blob.js';
import { SteppedClock } from '../clock/stepped.clock.js';
import { SystemClock } from '../clock/system.clock.js';
import { HmacUrlSigner } from '../crypto/hmac.url-signer.js';
import { NodeSecrets } from '../crypto/node.secrets.js';
import { SequentialIds } from '../ids/sequential.ids.js';
import { Uuid7Ids } from '../ids/uuid7.ids.js';
import { MemoryQueue } from '../queue/memory/memory.queue.js';
import { SqlQueue } from '../queue/sql/sql.queue.js';
import { infraModule } from './infra.module.js';
import { queueModule } from './queue.module.js';
import { TOKENS } from './tokens.js';

describe('infraModule', () => {
  test('binds production defaults: system clock, UUID v7, node secrets, HMAC signer, memory blob', () => {
    const container = new Container();
    container.load(infraModule({ urlSecret: 'a-secret-of-enough-length', blob: { kind: 'memory' } }));
    expect(container.get(TOKENS.clock)).toBeInstanceOf(SystemClock);
    expect(container.get(TOKENS.ids)).toBeInstanceOf(Uuid7Ids);
    expect(container.get(TOKENS.secrets)).toBeInstanceOf(NodeSecrets);
    const signer = container.get(TOKENS.urlSigner);
    expect(signer).toBeInstanceOf(HmacUrlSigner);
    const claim = { method: 'GET' as const, path: '/x', accountId: 'a', expiresAt: 1 };
    expect(new HmacUrlSigner('a-secret-of-enough-length').verify(claim, signer.sign(claim))).toBe(true);
    expect(container.get(TOKENS.blob)).toBeInstanceOf(MemoryBlob);
    expect(container.get(TOKENS.blob)).toBe(container.get(TOKENS.blob));
  });

  test('binds given instances and a filesystem blob store', async () => {
    const root = await mkdtemp(join(tmpdir(), 'carebridge-infra-'));
    try {
      const clock = new SteppedClock('2026-01-01T00:00:00Z');
      const ids = new SequentialIds();
      const container = new Container();
      container.load(infraModule({ urlSecret: 'a-secret-of-enough-length', blob: { kind: 'fs', root }, clock, ids }));
      expect(container.get(TOKENS.clock)).toBe(clock);
      expect(container.get(TOKENS.ids)).toBe(ids);
      const blob = container.get(TOKENS.blob);
      expect(blob).toBeInstanceOf(FsBlob);
      expect((blob as FsBlob).root).toBe(root);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test('refuses to build without a URL secret', () => {
    expect(() => infraModule({ blob: { kind: 'memory' } })).toThrow(/urlSecret/);
  });
});

describe('queueModule', () => {
  test('a memory queue runs on the container’s clock and ids', async () => {
    const clock = new SteppedClock('2026-01-01T00:00:00Z');
    const container = new Container();
    container.load(infraModule({ urlSecret: 'a-secret-of-enough-length', blob: { kind: 'memory' }, clock, ids: new SequentialIds({ seed: 7 }) }));
    container.load(queueModule({ kind: 'memory', defaultMaxAttempts: 3 }));
    const queue = await container.getAsync(TOKENS.queue);
    expect(queue).toBeInstanceOf(MemoryQueue);
    expect(await queue.enqueue({ type: 't', payload: null, runAt: '2026-01-01T00:00:01Z' })).toBe('00000007-0000-7000-8000-000000000001');
    expect(await queue.claim({ workerId: 'w', limit: 1, leaseMs: 1_000 })).toEqual([]);
    clock.advance(1_000);
    expect(await queue.claim({ workerId: 'w', limit: 1, leaseMs: 1_000 })).toMatchObject([{ maxAttempts: 3 }]);
  });

  test('a SQL queue is opened (and migrated) on first async resolution, once', async () => {
    const sequelize = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
    try {
      const container = new Container();
      container.load(infraModule({ urlSecret: 'a-secret-of-enough-length', blob: { kind: 'memory' }, clock: new SteppedClock('2026-01-01T00:00:00Z') }));
      container.load(queueModule({ kind: 'sql', sequelize }));
      const queue = await container.getAsync(TOKENS.queue);
      expect(queue).toBeInstanceOf(SqlQueue);
      expect(await container.getAsync(TOKENS.queue)).toBe(queue);
      await queue.enqueue({ type: 't', payload: 1 });
      expect(await queue.stats()).toMatchObject({ pending: 1 });
    } finally {
      await sequelize.close();
    }
  });

  test('an instance is bound as is', async () => {
    const queue = new MemoryQueue({ clock: new SteppedClock('2026-01-01T00:00:00Z'), ids: new SequentialIds() });
    const container = new Container();
    container.load(queueModule({ kind: 'instance', queue }));
    expect(container.get(TOKENS.queue)).toBe(queue);
  });
});
