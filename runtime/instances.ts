import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import type { Sequelize } from 'sequelize';
import { SqlInstanceRegistry, type InstanceRecord } from '../adapters/storage/sequelize/instance-registry.js';
import { describeError } from '../core/error-facts.js';

/** How often a running instance says it is alive. */
export const INSTANCE_HEARTBEAT_MS = 15_000;
/** An instance silent this long is taken for dead (killed, or cut off from the database) and no longer counts. */
export const INSTANCE_STALE_MS = 60_000;

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
  options: { schema?: string; identity: InstanceIdentity; logger?: Logger; now?: () => number },
): Promise<{ leave(): Promise<void> }> {
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
  await registry.join(me, me.heartbeatAt - INSTANCE_STALE_MS, (live) => {
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

  let beating: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    beating = beating.then(() =>
      registry.heartbeat(self()).catch((error: unknown) => options.logger?.warn({ err: describeError(error) }, 'instance heartbeat failed; will retry')),
    );
  }, INSTANCE_HEARTBEAT_MS);
  timer.unref();
  let left: Promise<void> | undefined;
  return {
    leave() {
      left ??= (async () => {
        clearInterval(timer);
        await beating;
        await registry.leave(identity.instanceId).catch((error: unknown) => options.logger?.warn({ err: describeError(error) }, 'could not unregister the instance'));
      })();
      return left;
    },
  };
}
