import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseS3Url, type S3Connection } from '../adapters/blob/s3/s3.blob.js';
import type { BlobModuleOptions } from '../adapters/container/infra.module.js';
import type { BlobPort } from '../core/ports/index.js';

export interface BlobStoreOptions {
  blob?: BlobPort;
  blobUrl?: string;
  s3?: S3Connection;
  blobDir?: string;
}

/**
 * The blob store the options ask for (a given store, else `blobUrl`'s bucket, else files under `blobDir`
 * or `<dataDir>/blobs`) and where it is, as instances sharing a database compare it: `s3://bucket/prefix`
 * or `file:///path`; undefined for a store the application passed in, which cannot be compared.
 */
export function blobStoreFor(options: BlobStoreOptions, dataDir: string): { module: BlobModuleOptions; location: string | undefined } {
  if (options.blob) return { module: { kind: 'instance', blob: options.blob }, location: undefined };
  if (options.blobUrl !== undefined) {
    const location = parseS3Url(options.blobUrl);
    return {
      module: { kind: 's3', location, connection: options.s3 ?? {} },
      location: `s3://${location.bucket}/${location.prefix}`,
    };
  }
  const root = resolve(options.blobDir ?? join(resolve(dataDir), 'blobs'));
  return { module: { kind: 'fs', root }, location: pathToFileURL(root).href };
}
