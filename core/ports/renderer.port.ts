import type { FhirBundle } from './ccda.port.js';

/** Renders a patient's consolidated bundle for people: HTML, or a real PDF document. */
export interface RendererPort {
  /** Bytes of the rendering; an empty bundle renders a document that says there is no data. */
  render(bundle: FhirBundle, format: 'html' | 'pdf'): Promise<Uint8Array>;
  /**
   * Optional. `data` compressed as a gzip file (RFC 1952), for the compressed copy of consolidated JSON
   *. The core cannot import node:zlib; when a renderer does not offer
   * this, the core uses the platform's standard `CompressionStream('gzip')`.
   */
  gzip?(data: Uint8Array): Promise<Uint8Array>;
}
