export interface SearchDocument {
  /** `ResourceType/id` */
  key: string;
  /** All searchable text of the resource or document, already flattened. */
  text: string;
}

/**
 * An embedded full-text index per patient. Matching: case-insensitive; every term of the query must
 * match (AND); a term of 4+ characters tolerates one edit, 8+ two edits (a transposition is one edit);
 * prefixes of 3+ characters match longer words.
 *
 * An index may forget a patient at any time (a restart, a memory budget): then it answers as if it had
 * never been given anything for that patient, stamp included, and the core rebuilds it from storage.
 */
export interface SearchIndexPort {
  /** Adds or replaces documents by key in the patient's index. Idempotent. */
  upsert(accountId: string, patientId: string, documents: readonly SearchDocument[]): Promise<void>;
  /** Removes the keys; missing keys are ignored. */
  remove(accountId: string, patientId: string, keys: readonly string[]): Promise<void>;
  /** Keys of matching documents, best match first; an empty list when nothing matches or the index is empty. */
  search(accountId: string, patientId: string, query: string): Promise<string[]>;

  /**
   * The stamp last recorded for the patient with `setStamp`, or `undefined` when this index holds no record
   * of it (never stamped, or an in-memory index after a restart). The core stamps an index with a digest of
   * the stored data it reflects and rebuilds the patient's index from storage when the stamps differ, so an
   * index that forgets (restart, eviction) must forget the stamp with the data. An embedder's index without
   * stamps is given them by the host (adapters/search/stamped.search-index.ts keeps them beside it).
   */
  stampOf(accountId: string, patientId: string): Promise<string | undefined>;
  /**
   * Records the stamp of what the patient's index now reflects, replacing the previous one. Idempotent. An
   * index that holds nothing for the patient (never given a document, or forgotten) may ignore it, so
   * `stampOf` keeps answering `undefined`: a stamp must never outlive its data.
   */
  setStamp(accountId: string, patientId: string, stamp: string): Promise<void>;

  /**
   * Optional, with `restore`. The patient's index as text that `restore` reads back (in this process or
   * another), or `undefined` when this index holds nothing for the patient (never given a document, or
   * forgotten). The stamp is not part of it: whoever keeps the text keeps the stamp beside it. Leaves the
   * index as it was.
   */
  serialize?(accountId: string, patientId: string): Promise<string | undefined>;
  /**
   * Optional, with `serialize`. Replaces whatever the index holds for the patient with the index of a text
   * `serialize` produced, unstamped (`stampOf` answers `undefined` until `setStamp`). Returns false and
   * changes nothing when it cannot read the text (damaged, or written by another adapter or version).
   * Idempotent. An index kept within a budget may forget the patient right after, as after `upsert`.
   */
  restore?(accountId: string, patientId: string, serialized: string): Promise<boolean>;
}
