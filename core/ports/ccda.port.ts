/** A FHIR resource as plain JSON (resourceType and id always present after conversion). */
export type FhirResource = { resourceType: string; id?: string } & Record<string, unknown>;

export interface FhirBundle {
  resourceType: 'Bundle';
  type: string;
  entry?: { fullUrl?: string; resource?: FhirResource }[];
}

/**
 * A C-CDA document read once for both uses: its search text, and its conversion or why there is none
 * (`message` as the CoreError `convert` would have thrown says it: CCDA_INVALID's reason, INTERNAL's fact).
 */
export interface CcdaReading {
  searchText: string;
  conversion: { ok: true; bundle: FhirBundle } | { ok: false; code: 'CCDA_INVALID' | 'INTERNAL'; message: string };
}

/** C-CDA XML to FHIR R4. */
export interface CcdaConverterPort {
  /**
   * Converts one C-CDA document to a FHIR Bundle whose resources all have ids. Throws a CoreError
   * `CCDA_INVALID` when the text is not a C-CDA document it can read; never returns a partial bundle
   * silently.
   */
  convert(xml: string): Promise<FhirBundle>;
  /**
   * The human text of a C-CDA document, for search (the core's `searchTextOfCcda`), computed where the
   * converter runs (a pool thread), so a large or hostile document never holds the thread that answers
   * requests. Never fails on odd input; RATE_LIMITED when the converter is too busy to take it. When an
   * adapter leaves it out, the core computes the text itself.
   */
  searchText?(xml: string): Promise<string>;
  /**
   * `searchText` and `convert` of one document in one go, where the converter runs: the text crosses to
   * the converter's thread once, and a conversion started as the document lands is ready when its turn to
   * be folded comes. A document the converter cannot read is an answer (`conversion.ok` false), never a
   * throw; RATE_LIMITED (nothing done) when the converter is too busy to take it. When an adapter leaves
   * it out, the core calls the two others.
   */
  read?(xml: string): Promise<CcdaReading>;
}
