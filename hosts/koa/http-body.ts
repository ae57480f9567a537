import type { IncomingMessage } from 'node:http';
import { CoreError, isCoreError } from '../../core/errors.js';

/** The request carries a body (a declared length above 0, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = Number(req.headers['content-length'] ?? 0);
  return Number.isFinite(length) && length > 0;
}

/** The declared Content-Length, when there is a valid one. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined) return undefined;
  const length = Number(header);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

export function tooLarge(limitBytes: number, what: string): CoreError {
  return new CoreError('PAYLOAD_TOO_LARGE', `${what} is larger than ${formatBytes(limitBytes)}`);
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}

function interrupted(error: unknown): CoreError {
  return new CoreError('BAD_REQUEST', 'The request body ended before it was complete', { cause: error });
}

/**
 * The request body as an async iterable, failing with PAYLOAD_TOO_LARGE past `limitBytes` and with
 * BAD_REQUEST if the client goes away. Streams: nothing is buffered here. Stopping early (too large, or
 * the consumer gives up) leaves the connection open, so the host can still answer; the host then drains
 * and closes it (see `finishUnreadBody`).
 */
export async function* limitedBody(req: IncomingMessage, limitBytes: number, what = 'The body'): AsyncGenerator<Uint8Array> {
  let size = 0;
  try {
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > limitBytes) throw tooLarge(limitBytes, what);
      yield chunk;
    }
  } catch (error) {
    throw isCoreError(error) ? error : interrupted(error);
  }
}

/** The whole body, at most `limitBytes` (JSON bodies only: uploads are streamed). */
export async function readLimitedBody(req: IncomingMessage, limitBytes: number, what = 'The body'): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of limitedBody(req, limitBytes, what)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * After answering a request whose body was not read to the end (too large, refused early): discard the
 * rest as it arrives and close the connection once the answer is out, so a keep-alive connection is never
 * left half-way through a body.
 */
export function finishUnreadBody(req: IncomingMessage): boolean {
  if (req.complete || req.readableEnded) return false;
  req.resume();
  return true;
}
