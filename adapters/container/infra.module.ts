import { ContainerModule } from 'inversify';
import type { BlobPort, ClockPort, IdsPort, SecretsPort, UrlSignerPort } from '../../core/ports/index.js';
import { FsBlob } from '../blob/fs/fs.blob.js';
import { MemoryBlob } from '../blob/memory/memory.blob.js';
import { createS3Client, S3Blob, type S3BlobTuning, type S3Connection, type S3Location } from '../blob/s3/s3.blob.js';
import { SystemClock } from '../clock/system.clock.js';
import { HmacUrlSigner } from '../crypto/hmac.url-signer.js';
import { NodeSecrets } from '../crypto/node.secrets.js';
import { Uuid7Ids } from '../ids/uuid7.ids.js';
import { TOKENS } from './tokens.js';

export type BlobModuleOptions =
  /** In-process Map: the sandbox and tests. */
  | { kind: 'memory' }
  /** Files under `root` (the service: `DATA_DIR/blobs`). */
  | { kind: 'fs'; root: string }
  /** Objects of an S3 (or S3-compatible) bucket, under a key prefix: several instances share them. */
  | { kind: 's3'; location: S3Location; connection: S3Connection; tuning?: S3BlobTuning }
  | { kind: 'instance'; blob: BlobPort };

export interface InfraModuleOptions {
  /** HMAC secret of pre-signed URLs (at least 16 characters); ignored when `urlSigner` is given. */
  urlSecret?: string;
  urlSigner?: UrlSignerPort;
  blob: BlobModuleOptions;
  /** The system clock unless given (tests pass a SteppedClock). */
  clock?: ClockPort;
  /** UUID v7 unless given (tests pass SequentialIds). */
  ids?: IdsPort;
  /** node:crypto unless given. */
  secrets?: SecretsPort;
}

/**
 * Binds the small infrastructure ports: TOKENS.clock, ids, secrets, urlSigner and blob, one of each per
 * container. Everything here is synchronous, so `container.get` and `getAsync` both work.
 */
export function infraModule(options: InfraModuleOptions): ContainerModule {
  const urlSigner = options.urlSigner ?? signerFrom(options.urlSecret);
  return new ContainerModule(({ bind }) => {
    bind(TOKENS.clock).toConstantValue(options.clock ?? new SystemClock());
    bind(TOKENS.ids).toConstantValue(options.ids ?? new Uuid7Ids());
    bind(TOKENS.secrets).toConstantValue(options.secrets ?? new NodeSecrets());
    bind(TOKENS.urlSigner).toConstantValue(urlSigner);
    const blob = options.blob;
    // The S3 client (its sockets) is made with the blob store and destroyed with it.
    let s3Client: ReturnType<typeof createS3Client> | undefined;
    bind(TOKENS.blob)
      .toDynamicValue((): BlobPort => {
        if (blob.kind === 'instance') return blob.blob;
        if (blob.kind === 's3') {
          s3Client = createS3Client(blob.connection);
          return new S3Blob(s3Client, blob.location, blob.tuning);
        }
        return blob.kind === 'fs' ? new FsBlob({ root: blob.root }) : new MemoryBlob();
      })
      .inSingletonScope()
      .onDeactivation(() => {
        s3Client?.destroy();
        s3Client = undefined;
      });
  });
}

function signerFrom(secret: string | undefined): UrlSignerPort {
  // Checked when the module is built, not when the signer is first resolved: a missing secret should
  // stop the service at start.
  if (secret === undefined) throw new Error('infraModule: urlSecret or urlSigner is required');
  return new HmacUrlSigner(secret);
}
