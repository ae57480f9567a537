import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sequelize } from 'sequelize';
import { afterEach, expect, test } from 'vitest';
import { SqlInstanceRegistry } from '../adapters/storage/sequelize/instance-registry.js';
import { createCarebridge, type Carebridge } from '../hosts/embedded/carebridge.js';
import { INSTANCE_STALE_MS, InstanceDisagreementError, joinInstances, secretFingerprint } from './instances.js';

/*
 * Instances sharing one database check at start that they agree on the settings that travel between them
 * (public URL, URL signing secret, blob location). Here on one SQLite file; the two-process test on
 * PostgreSQL does the same across processes.
 */

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-instances-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const SECRET = 'instances-test-url-signing-secret';

async function start(dataDir: string, options: { publicUrl?: string; urlSigningSecret?: string; blobDir?: string } = {}): Promise<Carebridge> {
  const carebridge = await createCarebridge({
    publicUrl: options.publicUrl ?? 'https://cb.example.org',
    urlSigningSecret: options.urlSigningSecret ?? SECRET,
    dataDir,
    background: false,
    ccdaWorkers: 1,
    ...(options.blobDir ? { blobDir: options.blobDir } : {}),
  });
  cleanups.push(() => carebridge.close());
  return carebridge;
}

async function refusal(promise: Promise<unknown>): Promise<InstanceDisagreementError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InstanceDisagreementError);
  return error as InstanceDisagreementError;
}

test('a second instance with the same settings starts; one that disagrees is refused, naming the setting', async () => {
  const dataDir = await tempDir();
  await start(dataDir);
  await start(dataDir);

  const url = await refusal(start(dataDir, { publicUrl: 'https://other.example.org' }));
  expect(url.setting).toBe('PUBLIC_URL');
  expect(url.message).toContain('https://other.example.org');
  expect(url.message).toContain('https://cb.example.org');

  const secret = await refusal(start(dataDir, { urlSigningSecret: 'another-secret-of-enough-length' }));
  expect(secret.setting).toBe('URL_SIGNING_SECRET');
  expect(secret.message).not.toContain(SECRET);
  expect(secret.message).not.toContain('another-secret-of-enough-length');

  const blobs = await refusal(start(dataDir, { blobDir: join(dataDir, 'elsewhere') }));
  expect(blobs.setting).toBe('BLOB_URL');
});

test('an instance that stopped no longer counts: the next may use other settings', async () => {
  const dataDir = await tempDir();
  const first = await start(dataDir);
  await first.close();
  await start(dataDir, { publicUrl: 'https://moved.example.org' });
});

test('an instance silent for longer than the stale limit (killed) no longer counts', async () => {
  const dataDir = await tempDir();
  const sequelize = new Sequelize({ dialect: 'sqlite', storage: join(dataDir, 'carebridge.sqlite'), logging: false });
  cleanups.push(() => sequelize.close());
  let clock = 1_000_000_000_000;
  const identity = { publicUrl: 'https://a.example.org', urlSigningSecret: SECRET, blobLocation: 's3://bucket/a' };
  // Never leaves: as if killed.
  await joinInstances(sequelize, { identity: { ...identity, instanceId: 'killed' }, now: () => clock });
  await expect(joinInstances(sequelize, { identity: { ...identity, instanceId: 'next', publicUrl: 'https://b.example.org' }, now: () => clock + INSTANCE_STALE_MS - 1 })).rejects.toThrow(
    /PUBLIC_URL .* instance killed/,
  );
  clock += INSTANCE_STALE_MS + 1;
  const next = await joinInstances(sequelize, { identity: { ...identity, instanceId: 'next', publicUrl: 'https://b.example.org' }, now: () => clock });
  expect((await new SqlInstanceRegistry(sequelize).list()).map((record) => record.instanceId)).toEqual(['next']);
  await next.leave();
  expect(await new SqlInstanceRegistry(sequelize).list()).toEqual([]);
});

test('the stored fingerprint tells secrets apart without giving them away', () => {
  expect(secretFingerprint(SECRET)).toBe(secretFingerprint(SECRET));
  expect(secretFingerprint(SECRET)).not.toBe(secretFingerprint(`${SECRET}x`));
  expect(secretFingerprint(SECRET)).not.toContain(SECRET);
});
