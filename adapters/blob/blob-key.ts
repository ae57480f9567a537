import { CoreError } from '../../core/errors.js';

const MAX_KEY_LENGTH = 1024;
// Leaves room under the usual 255-byte file name limit for the suffixes the fs adapter adds.
const MAX_SEGMENT_BYTES = 200;
/** File name endings the fs adapter uses for its own files; a key segment with one could collide with them. */
export const RESERVED_SUFFIXES = ['.blob', '.meta.json'] as const;

/**
 * The key rules every blob adapter applies, so a key accepted by the memory adapter in a test is accepted
 * by the filesystem in production: `/`-separated segments, none empty, none starting with a dot (so no
 * `.` or `..`), no backslash, no control characters (NUL included), no leading slash.
 */
export function assertValidBlobKey(key: string): string[] {
  const fail = (why: string): never => {
    throw new CoreError('BAD_REQUEST', `Invalid blob key: ${why}`);
  };
  if (typeof key !== 'string' || key.length === 0) fail('empty');
  if (key.length > MAX_KEY_LENGTH) fail(`longer than ${MAX_KEY_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(key)) fail('control characters are not allowed');
  if (key.includes('\\')) fail('backslashes are not allowed');
  if (key.startsWith('/')) fail('must be relative (no leading slash)');
  const segments = key.split('/');
  for (const segment of segments) {
    if (segment.length === 0) fail('empty segment');
    if (segment.startsWith('.')) fail('a segment may not start with a dot');
    if (Buffer.byteLength(segment, 'utf8') > MAX_SEGMENT_BYTES) fail(`a segment is longer than ${MAX_SEGMENT_BYTES} bytes`);
    if (RESERVED_SUFFIXES.some((suffix) => segment.endsWith(suffix))) fail(`a segment may not end with ${RESERVED_SUFFIXES.join(' or ')}`);
  }
  return segments;
}

/** Turns any accepted input of `BlobPort.put` into a chunk stream. */
export async function* chunksOf(data: Uint8Array | string | AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (typeof data === 'string') {
    yield new TextEncoder().encode(data);
  } else if (data instanceof Uint8Array) {
    yield data;
  } else {
    for await (const chunk of data) {
      if (!(chunk instanceof Uint8Array)) throw new CoreError('BAD_REQUEST', 'Blob stream chunks must be bytes');
      yield chunk;
    }
  }
}
