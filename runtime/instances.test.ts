import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sequelize } from 'sequelize';
import { afterEach, expect, test } from 'vitest';
import { SqlInstanceRegistry } from '../adapters/storage/sequelize/instance-registry.js';
import { createCarebridge, type Carebridge } from '../hosts/embedded/carebridge.js';
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { INSTANCE_STALE_MS, InstanceDisagreementError, joinInstances, newInstanceId, processIsGone, secretFingerprint } from './instances.js';

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

/** The pid of a process that ran and exited. */
async function exitedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

test('a gone instance is released at once when its process is known gone, by silence otherwise, and a live one never', async () => {
  const dataDir = await tempDir();
  const sequelize = new Sequelize({ dialect: 'sqlite', storage: join(dataDir, 'carebridge.sqlite'), logging: false });
  cleanups.push(() => sequelize.close());
  let clock = 1_000_000_000_000;
  const identity = { publicUrl: 'https://a.example.org', urlSigningSecret: SECRET, blobLocation: 's3://bucket/a' };
  const killedHere = `${hostname()}:${await exitedPid()}:0badc0de`;
  const previousIncarnation = `${hostname()}:${process.pid}:0badc0de`;
  const elsewhere = 'another-host:4242:0badc0de';
  const aliveHere = newInstanceId();
  // None of them leaves: as if killed (the first two), or still running (the others).
  for (const instanceId of [killedHere, previousIncarnation, elsewhere, aliveHere]) {
    await joinInstances(sequelize, { identity: { ...identity, instanceId }, now: () => clock, isProcessGone: () => false });
  }
  const released: string[] = [];
  const release = async (instanceId: string) => void released.push(instanceId);
  // Another public URL is refused for the live instances only: the killed ones' settings no longer count.
  const refused = await joinInstances(sequelize, {
    identity: { ...identity, publicUrl: 'https://b.example.org', instanceId: newInstanceId() },
    now: () => clock,
    releaseGone: release,
  }).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(InstanceDisagreementError);
  expect((refused as Error).message).toContain(elsewhere);
  expect(released).toEqual([]);
  await expect(
    joinInstances(sequelize, { identity: { ...identity, publicUrl: 'https://b.example.org', instanceId: 'x' }, now: () => clock, isProcessGone: (id) => id !== aliveHere }),
  ).rejects.toThrow(aliveHere);

  // A restart with the same settings: the killed ones' leases and claims are released at once, not after the stale limit.
  const same = await joinInstances(sequelize, { identity: { ...identity, instanceId: newInstanceId() }, now: () => clock, releaseGone: release });
  cleanups.push(() => same.leave());
  expect(released.sort()).toEqual([killedHere, previousIncarnation].sort());
  released.length = 0;
  const registered = (await new SqlInstanceRegistry(sequelize).list()).map((record) => record.instanceId);
  expect(registered).toContain(elsewhere);
  expect(registered).toContain(aliveHere);
  expect(registered).not.toContain(killedHere);

  // The other host's instance is released once silent past the stale limit, at a heartbeat's sweep.
  clock += INSTANCE_STALE_MS + 1;
  await new SqlInstanceRegistry(sequelize).heartbeat({ ...(await new SqlInstanceRegistry(sequelize).list()).find((r) => r.instanceId === aliveHere)!, heartbeatAt: clock });
  await same.sweep();
  expect(released).toEqual([elsewhere]);
  expect((await new SqlInstanceRegistry(sequelize).list()).map((record) => record.instanceId)).not.toContain(elsewhere);
});

test('an instance id of this host tells whether its process is gone', async () => {
  expect(processIsGone(`${hostname()}:${await exitedPid()}:00ff`)).toBe(true);
  expect(processIsGone(`${hostname()}:${process.pid}:00ff`)).toBe(true);
  expect(processIsGone(newInstanceId())).toBe(false);
  expect(processIsGone(`${hostname()}:${process.ppid}:00ff`)).toBe(false);
  expect(processIsGone(`not-${hostname()}:${await exitedPid()}:00ff`)).toBe(false);
  expect(processIsGone('killed')).toBe(false);
});

test('the stored fingerprint tells secrets apart without giving them away', () => {
  expect(secretFingerprint(SECRET)).toBe(secretFingerprint(SECRET));
  expect(secretFingerprint(SECRET)).not.toBe(secretFingerprint(`${SECRET}x`));
  expect(secretFingerprint(SECRET)).not.toContain(SECRET);
});
