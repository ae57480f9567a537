import { expect, test } from 'vitest';
import { settingsFromEnv } from './settings.js';

test('BLOB_URL and the S3 variables: a bucket, its endpoint, region, addressing and credentials', () => {
  expect(settingsFromEnv({})).not.toHaveProperty('blobUrl');
  expect(
    settingsFromEnv({
      BLOB_URL: 's3://carebridge-blobs/prod',
      S3_ENDPOINT: 'http://127.0.0.1:9000',
      S3_REGION: 'eu-west-3',
      S3_FORCE_PATH_STYLE: 'true',
      S3_ACCESS_KEY_ID: 'id',
      S3_SECRET_ACCESS_KEY: 'secret',
      AWS_ACCESS_KEY_ID: 'ignored',
      AWS_SECRET_ACCESS_KEY: 'ignored',
    }),
  ).toMatchObject({
    blobUrl: 's3://carebridge-blobs/prod',
    s3: { endpoint: 'http://127.0.0.1:9000', region: 'eu-west-3', forcePathStyle: true, credentials: { accessKeyId: 'id', secretAccessKey: 'secret' } },
  });
  // The AWS variables stand in for the S3 ones; without any, the SDK's own chain (profile, role) applies.
  expect(settingsFromEnv({ BLOB_URL: 's3://b-1', AWS_REGION: 'us-west-2', AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b', AWS_SESSION_TOKEN: 't' }).s3).toEqual({
    region: 'us-west-2',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b', sessionToken: 't' },
  });
  expect(settingsFromEnv({ BLOB_URL: 's3://b-1' }).s3).toEqual({});
});

test('a malformed blob setting stops the start with the variable named', () => {
  expect(() => settingsFromEnv({ BLOB_URL: '/var/blobs' })).toThrow(/BLOB_URL/);
  expect(() => settingsFromEnv({ BLOB_URL: 's3://Bad_Bucket/x' })).toThrow(/BLOB_URL/);
  expect(() => settingsFromEnv({ BLOB_URL: 's3://bucket', S3_ENDPOINT: 'minio:9000' })).toThrow(/S3_ENDPOINT/);
  expect(() => settingsFromEnv({ BLOB_URL: 's3://bucket', S3_FORCE_PATH_STYLE: 'sometimes' })).toThrow(/S3_FORCE_PATH_STYLE/);
  expect(() => settingsFromEnv({ BLOB_URL: 's3://bucket', S3_ACCESS_KEY_ID: 'only-the-id' })).toThrow(/S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY/);
  expect(() => settingsFromEnv({ S3_ENDPOINT: 'http://127.0.0.1:9000' })).toThrow(/S3_ENDPOINT is set but BLOB_URL is not/);
});

test('WEBHOOK_LEASE_SECONDS: whole seconds from 10 to 3600, the default when unset', () => {
  expect(settingsFromEnv({}).tunables.webhooks?.leaseMs).toBeUndefined();
  expect(settingsFromEnv({ WEBHOOK_LEASE_SECONDS: '20' }).tunables.webhooks?.leaseMs).toBe(20_000);
  for (const value of ['0', '9', '3601', 'soon', '12.5']) expect(() => settingsFromEnv({ WEBHOOK_LEASE_SECONDS: value })).toThrow(/WEBHOOK_LEASE_SECONDS/);
});
