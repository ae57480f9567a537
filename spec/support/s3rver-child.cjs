'use strict';
// An S3-protocol server for tests (@20minutes/s3rver), in its own process so that its memory and CPU are
// not counted as the tested process's. Usage: node s3rver-child.cjs <directory> <bucket>...
// Prints one JSON line {"port": N} once it listens on 127.0.0.1; stops on SIGTERM or when stdin closes.
const { createWriteStream, promises: fs } = require('node:fs');
const crypto = require('node:crypto');
const { Transform } = require('node:stream');
const { pipeline } = require('node:stream/promises');
const S3rver = require('@20minutes/s3rver');
const FilesystemStore = require('@20minutes/s3rver/lib/stores/filesystem');

// s3rver writes an object over its file in place and answers a buffered PUT before the bytes are on disk.
// S3 replaces objects atomically: a reader sees the old object or the new one, never a mix, and a GET
// started before a replace reads the object it started with. Writing to a temporary file and renaming it
// over the object gives the same here (the rename swaps the name; an open reader keeps the old file).
FilesystemStore.prototype.putContent = async function putContent(objectPath, content) {
  const temporary = `${objectPath}.${crypto.randomUUID()}.partial`;
  const md5 = crypto.createHash('md5');
  let size = 0;
  const source = Buffer.isBuffer(content) ? [content] : content;
  try {
    await pipeline(
      source,
      new Transform({
        transform(chunk, encoding, callback) {
          md5.update(chunk, encoding);
          size += chunk.length;
          callback(null, chunk);
        },
      }),
      createWriteStream(temporary),
    );
    await fs.rename(temporary, objectPath);
  } catch (error) {
    await fs.rm(temporary, { force: true });
    throw error;
  }
  return [size, md5.digest('hex')];
};

async function main() {
  const [directory, ...buckets] = process.argv.slice(2);
  if (!directory) throw new Error('usage: s3rver-child.cjs <directory> <bucket>...');
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port } = await server.run();
  process.stdout.write(`${JSON.stringify({ port })}\n`);
  const stop = () => server.close().finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // The parent died without stopping us: stop too, so no server outlives a test run.
  process.stdin.on('end', stop);
  process.stdin.resume();
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
