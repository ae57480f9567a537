/**
 * Byte storage for uploads, result CSVs, documents and bundles. Keys are opaque strings chosen by the
 * core (`<accountId>/<kind>/<id>`), never derived from user input without validation.
 */
export interface BlobPort {
  /**
   * Stores the bytes under `key`, replacing what was there. Streams are consumed as they arrive, so a
   * large upload never sits whole in memory. Returns the number of bytes stored. If the stream throws,
   * nothing is stored under `key` (a partial write is never visible).
   */
  put(key: string, data: Uint8Array | string | AsyncIterable<Uint8Array>, options?: { contentType?: string }): Promise<{ size: number }>;
  /** The whole content, or `undefined` when the key is missing. For small objects only. */
  get(key: string): Promise<Uint8Array | undefined>;
  /** A stream of the content, or `undefined` when the key is missing. */
  stream(key: string): Promise<AsyncIterable<Uint8Array> | undefined>;
  /** Size and content type, or `undefined` when the key is missing. */
  head(key: string): Promise<{ size: number; contentType?: string } | undefined>;
  /** Removes the key; removing a missing key is not an error. */
  delete(key: string): Promise<void>;
}
