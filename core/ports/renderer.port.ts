import type { FhirBundle } from './ccda.port.js';

/** Renders a patient's consolidated bundle for people: HTML, or a real PDF document. */
export interface RendererPort {
  /** Bytes of the rendering; an empty bundle renders a document that says there is no data. */
  render(bundle: FhirBundle, format: 'html' | 'pdf'): Promise<Uint8Array>;
}
