import type { IncomingMessage } from 'node:http';
import { CoreError, isCoreError } from '../core/errors.js';

/** A Node request carries a body (a declared length above 0, or chunked). */
export function nodeHasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = Number(req.headers['content-length'] ?? 0);
  return Number.isFinite(length) && length > 0;
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
 * A request body as an async iterable, failing with PAYLOAD_TOO_LARGE past `limitBytes` (counted on the
 * bytes as they arrive, whatever the headers declared) and with BAD_REQUEST if the client goes away.
 * Nothing is buffered here.
 */
export async function* limitedBody(source: AsyncIterable<Uint8Array>, limitBytes: number, what: string): AsyncGenerator<Uint8Array> {
  let size = 0;
  try {
    for await (const chunk of source) {
      size += chunk.byteLength;
      if (size > limitBytes) throw tooLarge(limitBytes, what);
      yield chunk;
    }
  } catch (error) {
    throw isCoreError(error) ? error : interrupted(error);
  }
}

/**
 * A Node request's body, limited. Stopping early (too large, or the consumer gives up) leaves the
 * connection open so the host can still answer; the host then drains and closes it (`finishUnreadBody`).
 */
export function nodeBody(req: IncomingMessage, limitBytes: number, what: string): AsyncIterable<Uint8Array> {
  return limitedBody(req.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>, limitBytes, what);
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
