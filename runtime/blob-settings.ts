import { parseS3Url, type S3Connection } from '../adapters/blob/s3/s3.blob.js';

/** Where blobs go, from `BLOB_URL` and the `S3_*` variables; absent: files under `DATA_DIR/blobs`. */
export interface BlobSettings {
  /** `BLOB_URL`: `s3://bucket/prefix`. */
  blobUrl?: string;
  /** How to reach the bucket (`S3_ENDPOINT`, `S3_REGION`, `S3_FORCE_PATH_STYLE`, credentials). */
  s3?: S3Connection;
}

const nonEmpty = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim());

const S3_VARIABLES = ['S3_ENDPOINT', 'S3_REGION', 'S3_FORCE_PATH_STYLE', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const;

/**
 * `BLOB_URL=s3://bucket/prefix` with `S3_ENDPOINT` (an S3-compatible server; AWS when absent), `S3_REGION`
 * (else `AWS_REGION`, else `us-east-1`), `S3_FORCE_PATH_STYLE` (bucket in the path, as most S3-compatible
 * servers want), and `S3_ACCESS_KEY_ID` / `S3_SECRET_ACCESS_KEY` (else `AWS_ACCESS_KEY_ID` /
 * `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`, else the AWS SDK's default chain: profile, instance role).
 * Throws a message naming the variable when one is malformed.
 */
export function blobSettingsFromEnv(env: NodeJS.ProcessEnv): BlobSettings {
  const blobUrl = nonEmpty(env.BLOB_URL);
  if (blobUrl === undefined) {
    const stray = S3_VARIABLES.find((name) => nonEmpty(env[name]) !== undefined);
    if (stray) throw new Error(`${stray} is set but BLOB_URL is not: set BLOB_URL=s3://bucket/prefix to keep blobs in S3`);
    return {};
  }
  try {
    parseS3Url(blobUrl);
  } catch (error) {
    throw new Error(`BLOB_URL must be s3://bucket or s3://bucket/prefix (unset, blobs are files under DATA_DIR/blobs): ${(error as Error).message}`);
  }
  const s3: S3Connection = {};
  const endpoint = nonEmpty(env.S3_ENDPOINT);
  if (endpoint !== undefined) {
    if (!/^https?:\/\/[^/]/.test(endpoint)) throw new Error(`S3_ENDPOINT must be an http:// or https:// URL, not "${endpoint}"`);
    s3.endpoint = endpoint;
  }
  const region = nonEmpty(env.S3_REGION) ?? nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION);
  if (region !== undefined) s3.region = region;
  const pathStyle = nonEmpty(env.S3_FORCE_PATH_STYLE)?.toLowerCase();
  if (pathStyle !== undefined) {
    if (['true', '1', 'yes'].includes(pathStyle)) s3.forcePathStyle = true;
    else if (['false', '0', 'no'].includes(pathStyle)) s3.forcePathStyle = false;
    else throw new Error(`S3_FORCE_PATH_STYLE must be true or false, not "${env.S3_FORCE_PATH_STYLE}"`);
  }
  const credentials = keyPair(env, 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY') ?? keyPair(env, 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY');
  if (credentials) s3.credentials = credentials;
  return { blobUrl, s3 };
}

function keyPair(env: NodeJS.ProcessEnv, idName: string, secretName: string): S3Connection['credentials'] {
  const accessKeyId = nonEmpty(env[idName]);
  const secretAccessKey = nonEmpty(env[secretName]);
  if (accessKeyId === undefined && secretAccessKey === undefined) return undefined;
  if (accessKeyId === undefined || secretAccessKey === undefined) throw new Error(`${idName} and ${secretName} go together: set both or neither`);
  const sessionToken = idName.startsWith('AWS_') ? nonEmpty(env.AWS_SESSION_TOKEN) : undefined;
  return sessionToken === undefined ? { accessKeyId, secretAccessKey } : { accessKeyId, secretAccessKey, sessionToken };
}
