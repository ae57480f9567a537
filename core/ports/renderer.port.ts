import type { FhirBundle } from './ccda.port.js';

/** What a rendering is, said on it: the core decides, the renderer only prints. */
export interface RenderContext {
  /** The patient's consolidated record (all or part of it), or one document of it. */
  kind: 'medical-record' | 'document';
  /** The heading a person reads first and the file's title, e.g. "Medical record of Jane Doe" or a document's own title. */
  title: string;
  /** The patient's name as people write it ("Jane Doe"); printed on every page of a PDF. */
  patientName: string;
  /** When the rendering was made, read from the clock port by the caller. */
  generatedAt: Date;
}

/** Renders a patient's bundle for people: HTML, or a real PDF document. */
export interface RendererPort {
  /**
   * Bytes of the rendering: titled from `context`, a section per kind of data with a human name, in
   * clinical order, rows newest first with dates written for people, exact duplicate rows once. A PDF
   * carries the patient's name and "Page N of M" on every page. An empty bundle renders a document that
   * says there is no data. The same bundle and context always give the same HTML.
   */
  render(bundle: FhirBundle, format: 'html' | 'pdf', context: RenderContext): Promise<Uint8Array>;
  /**
   * Optional. `data` compressed as a gzip file (RFC 1952), for the compressed copy of consolidated JSON.
   * The core cannot import node:zlib; when a renderer does not offer
   * this, the core uses the platform's standard `CompressionStream('gzip')`.
   */
  gzip?(data: Uint8Array): Promise<Uint8Array>;
}
