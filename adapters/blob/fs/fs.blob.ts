import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { BlobPort } from '../../../core/ports/blob.port.js';
import { assertValidBlobKey, chunksOf } from '../blob-key.js';

interface BlobMeta {
  contentType?: string;
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/**
 * Blobs as files under `root`. Key `a/b/c` is stored as `root/a/b/c.blob`, with its content type in the
 * sidecar `root/a/b/c.meta.json`. The suffixes keep a key from colliding with the directory of a longer
 * key (`a` and `a/b` can both exist), and the key rules forbid segments that end with them.
 *
 * Writes go to `root/.tmp/` (same filesystem, so the rename is atomic) and are flushed, then renamed over
 * the key: a reader sees the old bytes or the new ones, never a prefix, and a stream that fails midway
 * leaves nothing behind. Data is renamed before its sidecar, so for a moment after a crash a replaced
 * blob may carry its previous content type; the bytes are always whole.
 */
export class FsBlob implements BlobPort {
  readonly root: string;
  private readonly tmpDir: string;

  constructor(options: { root: string }) {
    this.root = resolve(options.root);
    this.tmpDir = join(this.root, '.tmp');
  }

  async put(
    key: string,
    data: Uint8Array | string | AsyncIterable<Uint8Array>,
    options?: { contentType?: string },
  ): Promise<{ size: number }> {
    const { dataPath, metaPath } = this.pathsOf(key);
    await mkdir(this.tmpDir, { recursive: true });
    const tmpData = join(this.tmpDir, `${randomUUID()}.tmp`);
    const tmpMeta = join(this.tmpDir, `${randomUUID()}.tmp`);
    let size = 0;
    async function* counted(): AsyncGenerator<Uint8Array> {
      for await (const chunk of chunksOf(data)) {
        size += chunk.byteLength;
        yield chunk;
      }
    }
    try {
      if (data instanceof Uint8Array || typeof data === 'string') {
        // Bytes in hand are written in one call: a stream and its generator cost more than the write itself.
        const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
        size = bytes.byteLength;
        await writeFile(tmpData, bytes, { flush: true });
      } else {
        // pipeline applies back-pressure: the source is pulled only as fast as the disk takes it.
        await pipeline(counted(), createWriteStream(tmpData, { flush: true }));
      }
      const meta: BlobMeta = options?.contentType === undefined ? {} : { contentType: options.contentType };
      await writeFile(tmpMeta, JSON.stringify(meta), { flush: true });
      await mkdir(dirname(dataPath), { recursive: true });
      await rename(tmpData, dataPath);
      await rename(tmpMeta, metaPath);
    } catch (error) {
      await Promise.all([rm(tmpData, { force: true }), rm(tmpMeta, { force: true })]);
      throw error;
    }
    return { size };
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const { dataPath } = this.pathsOf(key);
    try {
      return new Uint8Array(await readFile(dataPath));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async stream(key: string): Promise<AsyncIterable<Uint8Array> | undefined> {
    const { dataPath } = this.pathsOf(key);
    // Opening first both detects a missing key and pins the current file: a replace that lands while
    // the stream is read renames a new file over the name, and this handle keeps reading the old one.
    let handle;
    try {
      handle = await open(dataPath, 'r');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    return handle.createReadStream({ autoClose: true });
  }

  async head(key: string): Promise<{ size: number; contentType?: string } | undefined> {
    const { dataPath, metaPath } = this.pathsOf(key);
    let size: number;
    try {
      size = (await stat(dataPath)).size;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    const meta = await readMeta(metaPath);
    return meta.contentType === undefined ? { size } : { size, contentType: meta.contentType };
  }

  async delete(key: string): Promise<void> {
    const { dataPath, metaPath } = this.pathsOf(key);
    // Empty directories are left in place: removing them would race with a put creating a file there.
    await rm(dataPath, { force: true });
    await rm(metaPath, { force: true });
  }

  private pathsOf(key: string): { dataPath: string; metaPath: string } {
    const segments = assertValidBlobKey(key);
    const base = join(this.root, ...segments);
    // The key rules already exclude `..`; this is the belt to those braces.
    if (!base.startsWith(this.root + sep)) throw new Error('FsBlob: key resolved outside the root');
    return { dataPath: `${base}.blob`, metaPath: `${base}.meta.json` };
  }
}

async function readMeta(metaPath: string): Promise<BlobMeta> {
  try {
    const parsed: unknown = JSON.parse(await readFile(metaPath, 'utf8'));
    if (parsed && typeof parsed === 'object' && typeof (parsed as BlobMeta).contentType === 'string') {
      return { contentType: (parsed as BlobMeta).contentType as string };
    }
    return {};
  } catch (error) {
    // A missing or unreadable sidecar loses only the content type; the bytes are still served.
    if (isMissing(error) || error instanceof SyntaxError) return {};
    throw error;
  }
}
