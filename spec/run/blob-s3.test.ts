import { connect } from 'node:net';
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createS3Client, parseS3Url, S3Blob } from '../../adapters/blob/s3/s3.blob.js';
import { defineBlobContract } from '../ports/blob.contract.js';
import { startS3Server, type TestS3Server } from '../support/s3.js';

// A real S3-protocol server (@20minutes/s3rver) on 127.0.0.1, in its own process, for this file.
let server: TestS3Server;
let client: S3Client;
let made = 0;

beforeAll(async () => {
  server = await startS3Server(['contract']);
  client = createS3Client({
    endpoint: server.endpoint,
    region: server.region,
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
  });
});
afterAll(async () => {
  client?.destroy();
  await server?.stop();
});

// Each store is its own prefix of one bucket, as instances of different deployments could share a bucket.
const makeStore = () => new S3Blob(client, { bucket: 'contract', prefix: `store-${++made}/blobs` });

defineBlobContract({
  test,
  make: makeStore,
  boundedMemory: true,
  // Parts of 5 MiB, two in flight and one being filled: 21 MiB live at the peak when measured, while holding the
  // 64 MiB stream would show as 64 MiB or more.
  largeBytes: 64 * 1024 * 1024,
  memoryBudgetBytes: 32 * 1024 * 1024,
  numRuns: 30,
});

test('s3: a key is stored under the prefix, with its content type visible to any S3 client', async () => {
  const blob = makeStore();
  await blob.put('acct/uploads/r1', 'a,b\n', { contentType: 'text/csv' });
  const object = await client.send(new GetObjectCommand({ Bucket: 'contract', Key: `${blob.location.prefix}/acct/uploads/r1` }));
  expect(await object.Body!.transformToString()).toBe('a,b\n');
  expect(object.ContentType).toBe('text/csv');
});

test('s3: a store at the root of a bucket uses the key as it is', async () => {
  const blob = new S3Blob(client, { bucket: 'contract', prefix: '' });
  await blob.put(`root-${++made}/x`, 'x');
  const head = await client.send(new HeadObjectCommand({ Bucket: 'contract', Key: `root-${made}/x` }));
  expect(head.ContentLength).toBe(1);
});

test('s3: a stream larger than one part goes up in parts and a failure midway leaves nothing', async () => {
  const blob = makeStore();
  const part = new Uint8Array(1024 * 1024).fill(7);
  async function* twelveMiBThenFail(): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < 12; i++) yield part;
    throw new Error('connection reset by the client');
  }
  await expect(blob.put('acct/uploads/big', twelveMiBThenFail())).rejects.toThrow('connection reset by the client');
  expect(await blob.head('acct/uploads/big')).toBeUndefined();
});

test('s3: a missing bucket is an error, not a missing key', async () => {
  const blob = new S3Blob(client, { bucket: 'no-such-bucket', prefix: '' });
  await expect(blob.put('acct/x', 'x')).rejects.toThrow();
});

test('s3: BLOB_URL parsing', () => {
  expect(parseS3Url('s3://carebridge-prod')).toEqual({ bucket: 'carebridge-prod', prefix: '' });
  expect(parseS3Url('s3://carebridge-prod/eu/blobs/')).toEqual({ bucket: 'carebridge-prod', prefix: 'eu/blobs' });
  for (const bad of ['s3://', 's3://Upper/x', 's3://ab', 'http://bucket/x', 's3://bucket//x', 's3://bucket/a//b', 's3://bucket/x?y']) {
    expect(() => parseS3Url(bad), bad).toThrow();
  }
});

test('the test server, like S3, never shows an object whose upload was cut off midway', async () => {
  // What a process killed mid-upload leaves: a request that stops after part of its declared length.
  // (s3rver lets unsigned requests through, so a raw socket can send one.)
  const key = `cut-${++made}/upload.csv`;
  await client.send(new PutObjectCommand({ Bucket: 'contract', Key: key, Body: 'previous' }));
  const socket = connect(Number(new URL(server.endpoint).port), '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(`PUT /contract/${key} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n\r\n`);
  socket.write(Buffer.alloc(256 * 1024, 1));
  await new Promise((resolve) => setTimeout(resolve, 200));
  socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 300));
  const object = await client.send(new GetObjectCommand({ Bucket: 'contract', Key: key }));
  expect(await object.Body!.transformToString()).toBe('previous');
});
