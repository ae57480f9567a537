import type { BlobPort } from '../../../core/ports/blob.port.js';
import { assertValidBlobKey, chunksOf } from '../blob-key.js';

interface StoredBlob {
  bytes: Uint8Array;
  contentType?: string;
}

/** Blobs in a Map, for tests and the sandbox. Same key rules and failure behaviour as the filesystem adapter. */
export class MemoryBlob implements BlobPort {
  private readonly blobs = new Map<string, StoredBlob>();

  async put(
    key: string,
    data: Uint8Array | string | AsyncIterable<Uint8Array>,
    options?: { contentType?: string },
  ): Promise<{ size: number }> {
    assertValidBlobKey(key);
    // Chunks are copied as they arrive (the caller may reuse its buffers) and only stored once the
    // stream has ended, so a stream that throws leaves the previous value in place.
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of chunksOf(data)) {
      chunks.push(chunk.slice());
      size += chunk.byteLength;
    }
    const bytes = new Uint8Array(size);
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.byteLength;
    }
    const stored: StoredBlob = { bytes };
    if (options?.contentType !== undefined) stored.contentType = options.contentType;
    this.blobs.set(key, stored);
    return { size };
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    assertValidBlobKey(key);
    return this.blobs.get(key)?.bytes.slice();
  }

  async stream(key: string): Promise<AsyncIterable<Uint8Array> | undefined> {
    assertValidBlobKey(key);
    const stored = this.blobs.get(key);
    if (!stored) return undefined;
    // Like a file opened before a replace, the stream keeps reading the bytes it started with.
    return sliceStream(stored.bytes);
  }

  async head(key: string): Promise<{ size: number; contentType?: string } | undefined> {
    assertValidBlobKey(key);
    const stored = this.blobs.get(key);
    if (!stored) return undefined;
    return stored.contentType === undefined ? { size: stored.bytes.byteLength } : { size: stored.bytes.byteLength, contentType: stored.contentType };
  }

  async delete(key: string): Promise<void> {
    assertValidBlobKey(key);
    this.blobs.delete(key);
  }
}

const STREAM_CHUNK = 64 * 1024;

async function* sliceStream(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.byteLength; offset += STREAM_CHUNK) {
    yield bytes.slice(offset, offset + STREAM_CHUNK);
  }
}
