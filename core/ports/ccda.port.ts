/** A FHIR resource as plain JSON (resourceType and id always present after conversion). */
export type FhirResource = { resourceType: string; id?: string } & Record<string, unknown>;

export interface FhirBundle {
  resourceType: 'Bundle';
  type: string;
  entry?: { fullUrl?: string; resource?: FhirResource }[];
}

/** C-CDA XML to FHIR R4. */
export interface CcdaConverterPort {
  /**
   * Converts one C-CDA document to a FHIR Bundle whose resources all have ids. Throws a CoreError
   * `CCDA_INVALID` when the text is not a C-CDA document it can read; never returns a partial bundle
   * silently.
   */
  convert(xml: string): Promise<FhirBundle>;
}
