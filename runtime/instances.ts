import { createHmac, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { isMainThread, threadId } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Sequelize } from 'sequelize';
import { SqlInstanceRegistry, type InstanceRecord } from '../adapters/storage/sequelize/instance-registry.js';
import { describeError } from '../core/error-facts.js';

/** How often a running instance says it is alive. */
export const INSTANCE_HEARTBEAT_MS = 15_000;
/** An instance silent this long is taken for dead (killed, or cut off from the database) and no longer counts. */
export const INSTANCE_STALE_MS = 60_000;

/**
 * The instances this process's main thread runs (a process may run several runtimes, tests do). An
 * instance id of this host and pid that is not among them was a process before this one with the same pid
 * (a container restarted): gone. Worker threads have a set of their own, so an instance started in one
 * carries its thread in its id and is never judged by pid.
 */
const runningHere = new Set<string>();

/**
 * A new instance id, unique per runtime: `host:pid:random`. Instances sharing one database tell their job
 * leases and outbox claims apart by it, and a restarted instance on the same host tells by it that its
 * predecessor's process is gone.
 */
export function newInstanceId(): string {
  const id = `${hostname()}:${process.pid}${isMainThread ? '' : `.${threadId}`}:${randomBytes(4).toString('hex')}`;
  runningHere.add(id);
  return id;
}

/**
 * Whether the instance's process is known to be gone, without waiting for its heartbeat to go stale: it
 * ran on this host and its pid is no longer a process, or is this process, which does not run it. An
 * instance of another host, or an id of another form, is never known gone this way.
 */
export function processIsGone(instanceId: string): boolean {
  const parts = /^(.+):(\d+):[0-9a-f]+$/.exec(instanceId);
  if (!parts || parts[1] !== hostname()) return false;
  const pid = Number(parts[2]);
  if (pid === process.pid) return isMainThread && !runningHere.has(instanceId);
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: a process of another user has the pid, so it is alive (perhaps not ours: then its heartbeat ends it).
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Instances sharing one database that must agree on a setting, and this start disagrees. */
export class InstanceDisagreementError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'InstanceDisagreementError';
  }
}

/**
 * The secret's fingerprint: an HMAC of a fixed text under the secret. Equal secrets give equal
 * fingerprints; the fingerprint does not give the secret back.
 */
export function secretFingerprint(secret: string): string {
  return createHmac('sha256', secret).update('carebridge instance agreement').digest('hex').slice(0, 32);
}

export interface InstanceIdentity {
  instanceId: string;
  publicUrl: string;
  urlSigningSecret: string;
  /** Where blobs live, as a comparable text; undefined when the embedding application passed its own store. */
  blobLocation: string | undefined;
}

function ago(record: InstanceRecord, now: number): string {
  return `${Math.max(0, Math.round((now - record.heartbeatAt) / 1000))} s ago`;
}

/**
 * Checks this instance's settings against those of the live instances on the database and registers it.
 * Instances of one database hand each other URLs (an upload URL from one is used on another), work (a job
 * started by one is run by another) and blobs (one stores the upload, another reads it), so the public
 * URL, the URL signing secret and the blob location must be the same everywhere. Throws
 * `InstanceDisagreementError` naming the setting when they are not; the instance must then not start.
 */
export async function joinInstances(
  sequelize: Sequelize,
  options: {
    schema?: string;
    identity: InstanceIdentity;
    logger?: Logger;
    now?: () => number;
    /**
     * Ends what an instance that is gone still holds (its job leases and outbox claims), so its work goes on
     * at once rather than when its leases run out. Called at join and at every heartbeat for each instance
     * known gone: silent past the stale limit, or its process gone from this host (`processIsGone`). The
     * instance is forgotten once this resolves; when it throws, the next heartbeat tries again.
     */
    releaseGone?: (instanceId: string) => Promise<void>;
    /** Whether an instance's process is gone; `processIsGone` when absent. */
    isProcessGone?: (instanceId: string) => boolean;
  },
): Promise<{ leave(): Promise<void>; sweep(): Promise<void> }> {
  const now = options.now ?? Date.now;
  const { identity } = options;
  const registry = new SqlInstanceRegistry(sequelize, options.schema === undefined ? {} : { schema: options.schema });
  const startedAt = now();
  const self = (): InstanceRecord => ({
    instanceId: identity.instanceId,
    publicUrl: identity.publicUrl,
    secretFingerprint: secretFingerprint(identity.urlSigningSecret),
    blobLocation: identity.blobLocation ?? '',
    startedAt,
    heartbeatAt: now(),
  });
  const me = self();
  const isProcessGone = options.isProcessGone ?? processIsGone;
  const goneAt = (at: number) => (record: InstanceRecord) => record.instanceId !== identity.instanceId && (record.heartbeatAt < at - INSTANCE_STALE_MS || isProcessGone(record.instanceId));
  const forget = async (gone: InstanceRecord[]) => {
    for (const record of gone) {
      await options.releaseGone?.(record.instanceId);
      await registry.leave(record.instanceId);
      options.logger?.info({ instanceId: record.instanceId, lastSeen: new Date(record.heartbeatAt).toISOString() }, 'an instance is gone: its leases and claims are released');
    }
  };
  const sweep = async () => forget((await registry.list()).filter(goneAt(now())));
  const gone = await registry.join(me, goneAt(me.heartbeatAt), (live) => {
    const gone = `Instances sharing a database must agree on it. If that instance is gone, it stops counting ${INSTANCE_STALE_MS / 1000} s after it was last seen.`;
    for (const other of live) {
      if (other.publicUrl !== me.publicUrl) {
        throw new InstanceDisagreementError(
          'PUBLIC_URL',
          `PUBLIC_URL (publicUrl) is ${me.publicUrl} here but ${other.publicUrl} on instance ${other.instanceId} of this database, last seen ${ago(other, me.heartbeatAt)}. ${gone}`,
        );
      }
      if (other.secretFingerprint !== me.secretFingerprint) {
        throw new InstanceDisagreementError(
          'URL_SIGNING_SECRET',
          `URL_SIGNING_SECRET (urlSigningSecret) differs from the one of instance ${other.instanceId} of this database, last seen ${ago(other, me.heartbeatAt)}: URLs signed by one would be refused by the other. ${gone}`,
        );
      }
      if (other.blobLocation !== '' && me.blobLocation !== '' && other.blobLocation !== me.blobLocation) {
        throw new InstanceDisagreementError(
          'BLOB_URL',
          `Blobs are stored at ${me.blobLocation} here but at ${other.blobLocation} on instance ${other.instanceId} of this database, last seen ${ago(other, me.heartbeatAt)}: set the same BLOB_URL everywhere (or, with blobs on disk, one shared DATA_DIR path). ${gone}`,
        );
      }
    }
  });
  await forget(gone).catch((error: unknown) => options.logger?.warn({ err: describeError(error) }, 'could not release a gone instance; will retry at the next heartbeat'));

  let beating: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    beating = beating.then(async () => {
      await registry.heartbeat(self()).catch((error: unknown) => options.logger?.warn({ err: describeError(error) }, 'instance heartbeat failed; will retry'));
      await sweep().catch((error: unknown) => options.logger?.warn({ err: describeError(error) }, 'could not release a gone instance; will retry'));
    });
  }, INSTANCE_HEARTBEAT_MS);
  timer.unref();
  let left: Promise<void> | undefined;
  return {
    sweep() {
      beating = beating.then(sweep);
      return beating;
    },
    leave() {
      left ??= (async () => {
        clearInterval(timer);
        await beating;
        await registry.leave(identity.instanceId).catch((error: unknown) => options.logger?.warn({ err: describeError(error) }, 'could not unregister the instance'));
        runningHere.delete(identity.instanceId);
      })();
      return left;
    },
  };
}
