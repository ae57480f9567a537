import type { RendererPort } from '../ports/renderer.port.js';

/** The standard Compression Streams API (WHATWG), a global in Node 18+, Deno, Bun and browsers; no import. */
type CompressionStreamConstructor = new (format: 'gzip') => { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> };

/**
 * `data` as a gzip file: by the renderer port when its adapter offers it, else by the platform's standard
 * `CompressionStream` (the core may not import node:zlib, but it may use what every runtime provides,
 * like TextEncoder). Pure: bytes in, bytes out.
 */
export async function gzip(renderer: RendererPort, data: Uint8Array): Promise<Uint8Array> {
  if (renderer.gzip) return renderer.gzip(data);
  const Compression = (globalThis as { CompressionStream?: CompressionStreamConstructor }).CompressionStream;
  if (!Compression) throw new Error('gzip: neither the renderer nor the platform offers compression');
  const stream = new Compression('gzip');
  const writer = stream.writable.getWriter();
  const written = writer.write(data).then(() => writer.close());
  const chunks: Uint8Array[] = [];
  const reader = stream.readable.getReader();
  for (let part = await reader.read(); !part.done; part = await reader.read()) chunks.push(part.value);
  await written;
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
