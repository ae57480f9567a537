import type { FhirResourceJson } from '../domain/types.js';

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
 * The bundle may come as the JSON text of one (`bundleJson`), as a converter on another thread makes it:
 * text crosses between threads as one copy, an object field by field, and a `fold` on that thread parses it.
 */
export interface CcdaReading {
  searchText: string;
  conversion: { ok: true; bundle: FhirBundle } | { ok: true; bundleJson: string } | { ok: false; code: 'CCDA_INVALID' | 'INTERNAL'; message: string };
}

/** A converted document to fold into a patient's record: the converter's bundle, or the JSON text of it. */
export type FoldDocument = { documentId: string; bundle: FhirBundle } | { documentId: string; bundleJson: string };

/** Converted documents of one patient to fold, in order, into what is stored for them (the core's `foldDocuments`). */
export interface FoldRequest {
  accountId: string;
  patientId: string;
  /** ISO instant written on the records that change. */
  now: string;
  /** Everything stored for the patient now, as `fhirResources.listByPatientJson` gives it. */
  stored: readonly FhirResourceJson[];
  documents: readonly FoldDocument[];
}

/** What a fold changes against what was stored. */
export interface FoldOutcome {
  /** Records to write, new or changed, ordered by `Type/id`. */
  changed: FhirResourceJson[];
  /** Stored records gone afterwards (merged into a survivor), ordered by `Type/id`. */
  removed: { resourceType: string; id: string }[];
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
  /**
   * The core's `foldDocuments(request)`, run where the converter runs: deduplicating documents into a
   * patient's record is the other CPU-bound step of a document, and the thread that answers requests is
   * busy enough with storage. The same outcome as `foldDocuments`, with nothing stored: the caller writes
   * it. RATE_LIMITED (nothing done) when too busy to take it, INTERNAL when the thread failed. When an
   * adapter leaves it out, the core folds on its own thread.
   */
  fold?(request: FoldRequest): Promise<FoldOutcome>;
}
