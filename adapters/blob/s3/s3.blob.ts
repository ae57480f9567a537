import { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { BlobPort } from '../../../core/ports/blob.port.js';
import { assertValidBlobKey, chunksOf } from '../blob-key.js';

/** Where the blobs live: a bucket, and a key prefix inside it (`s3://bucket/prefix`). */
export interface S3Location {
  bucket: string;
  /** Prepended to every key with a `/`; empty for the bucket's root. No leading or trailing slash. */
  prefix: string;
}

/** How to reach the S3 API; everything optional, the AWS SDK's defaults apply to what is absent. */
export interface S3Connection {
  /** An S3-compatible server (`http://127.0.0.1:9000`, `https://<account>.r2.cloudflarestorage.com`); AWS when absent. */
  endpoint?: string;
  /** `us-east-1` when absent and the environment names none. */
  region?: string;
  /** Bucket in the path (`endpoint/bucket/key`) rather than the host name: what most S3-compatible servers need. */
  forcePathStyle?: boolean;
  /** Static credentials; the SDK's default chain (environment, profile, instance role) when absent. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

export interface S3BlobTuning {
  /**
   * Bytes per part of a multipart upload, at least 5 MiB (S3's minimum). A put smaller than one part is a
   * single PutObject. Memory held by one put is about (queueSize + 1) x partSize.
   */
  partSize?: number;
  /** Parts uploaded at once by one put. */
  queueSize?: number;
}

const MIN_PART_SIZE = 5 * 1024 * 1024;
const DEFAULT_QUEUE_SIZE = 2;

/**
 * User metadata saying a content type was given at put. S3 gives every object a content type
 * (`binary/octet-stream` by default), while the port reports none for a blob stored without one.
 */
const TYPED_MARKER = 'carebridge-typed';

/** `s3://bucket/some/prefix` -> `{ bucket, prefix }`; throws a plain message for anything else. */
export function parseS3Url(url: string): S3Location {
  const match = /^s3:\/\/([^/?#]+)(\/[^?#]*)?$/.exec(url);
  if (!match) throw new Error(`not an s3://bucket/prefix URL: "${url}"`);
  const bucket = match[1]!;
  // S3's bucket naming rules (3-63 lowercase letters, digits, dots and hyphens), which also keep the name
  // usable as a host name in virtual-hosted addressing.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new Error(`"${bucket}" is not a valid bucket name (3-63 lowercase letters, digits, dots, hyphens)`);
  const prefix = (match[2] ?? '').replace(/^\//, '').replace(/\/+$/, '');
  if (prefix !== '' && prefix.split('/').includes('')) throw new Error(`the prefix of "${url}" has an empty segment`);
  return { bucket, prefix };
}

/** A client for `connection`, set for S3-compatible servers as well as AWS. */
export function createS3Client(connection: S3Connection): S3Client {
  const config: S3ClientConfig = {
    region: connection.region ?? 'us-east-1',
    // Checksums only where the API requires them: several S3-compatible servers refuse the trailing
    // checksums (aws-chunked bodies) the SDK otherwise adds to every upload.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // Absent, not undefined: the SDK spreads this config over its own defaults, and an undefined key would replace one.
    ...(connection.endpoint !== undefined ? { endpoint: connection.endpoint } : {}),
    ...(connection.forcePathStyle !== undefined ? { forcePathStyle: connection.forcePathStyle } : {}),
    ...(connection.credentials !== undefined ? { credentials: connection.credentials } : {}),
  };
  return new S3Client(config);
}

function isNotFound(error: unknown): boolean {
  const facts = error as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  return facts?.$metadata?.httpStatusCode === 404 || facts?.name === 'NoSuchKey' || facts?.name === 'NotFound';
}

/**
 * Blobs as objects of an S3 bucket (AWS or an S3-compatible server), key `<prefix>/<key>`.
 *
 * Puts stream: the bytes go up in parts of `partSize` (a multipart upload) as they arrive, so a 200 MB CSV
 * never sits whole in memory; a put smaller than one part is one PutObject. A put whose stream fails
 * sends nothing (small) or aborts its multipart upload (large): S3 only makes an object visible when the
 * upload completes, so readers see the previous object or the new one, whole. Reads stream the GetObject
 * body; S3 serves a GET started before a replace from the object it started with.
 */
export class S3Blob implements BlobPort {
  readonly location: S3Location;
  private readonly partSize: number;
  private readonly queueSize: number;

  constructor(
    private readonly client: S3Client,
    location: S3Location,
    tuning: S3BlobTuning = {},
  ) {
    this.location = { bucket: location.bucket, prefix: location.prefix.replace(/^\/+|\/+$/g, '') };
    this.partSize = Math.max(MIN_PART_SIZE, tuning.partSize ?? MIN_PART_SIZE);
    this.queueSize = Math.max(1, tuning.queueSize ?? DEFAULT_QUEUE_SIZE);
  }

  async put(key: string, data: Uint8Array | string | AsyncIterable<Uint8Array>, options?: { contentType?: string }): Promise<{ size: number }> {
    const objectKey = this.objectKey(key);
    let size = 0;
    let sourceError: { error: unknown } | undefined;
    async function* counted(): AsyncGenerator<Uint8Array> {
      try {
        for await (const chunk of chunksOf(data)) {
          size += chunk.byteLength;
          yield chunk;
        }
      } catch (error) {
        sourceError = { error };
        throw error;
      }
    }
    // Small inputs in hand go up in one request; only streams need the part-by-part reading.
    const body = typeof data === 'string' || data instanceof Uint8Array ? Buffer.from(await concatenated(counted())) : Readable.from(counted(), { objectMode: false });
    const upload = new Upload({
      client: this.client,
      partSize: this.partSize,
      queueSize: this.queueSize,
      leavePartsOnError: false,
      params: {
        Bucket: this.location.bucket,
        Key: objectKey,
        Body: body,
        ...(options?.contentType !== undefined ? { ContentType: options.contentType, Metadata: { [TYPED_MARKER]: '1' } } : {}),
      },
    });
    try {
      await upload.done();
    } catch (error) {
      // The caller's own error (a client that went away, a size limit), not the SDK's wrapping of it.
      if (sourceError) throw sourceError.error;
      throw error;
    }
    return { size };
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const stream = await this.stream(key);
    if (!stream) return undefined;
    const parts: Uint8Array[] = [];
    for await (const part of stream) parts.push(part);
    return Uint8Array.from(Buffer.concat(parts));
  }

  async stream(key: string): Promise<AsyncIterable<Uint8Array> | undefined> {
    const objectKey = this.objectKey(key);
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: objectKey }));
      // In Node the body is the HTTP response itself (a Readable): read as it arrives, with back-pressure.
      return response.Body as unknown as AsyncIterable<Uint8Array>;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async head(key: string): Promise<{ size: number; contentType?: string } | undefined> {
    const objectKey = this.objectKey(key);
    try {
      const response = await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: objectKey }));
      const size = response.ContentLength ?? 0;
      const typed = response.Metadata?.[TYPED_MARKER] !== undefined && response.ContentType !== undefined;
      return typed ? { size, contentType: response.ContentType! } : { size };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    // S3 answers a delete of a missing key with success, as the port wants.
    await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key) }));
  }

  private objectKey(key: string): string {
    assertValidBlobKey(key);
    return this.location.prefix === '' ? key : `${this.location.prefix}/${key}`;
  }
}

async function concatenated(chunks: AsyncGenerator<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}
