import MiniSearch, { type Options, type Query, type SearchOptions } from 'minisearch';
import type { SearchDocument, SearchIndexPort } from '../../core/ports/search-index.port.js';

/** Words are split on whitespace and punctuation, as MiniSearch does by default. */
const SEPARATORS = /[\n\r\p{Z}\p{P}]+/u;

/** Case and accents never matter: "Hôpital" is found by "hopital". The plain version of `normaliseTerm`. */
export function normaliseTermPlain(term: string): string {
  return term.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

const NOT_ASCII = /[^\u0000-\u007f]/;

/**
 * `normaliseTermPlain`, with a shortcut for terms of ASCII only (nearly every term of a clinical
 * document), which have no accent to take off and decompose to themselves: Unicode normalisation and the
 * mark pattern were most of what indexing a converted document cost this thread. A property test holds the
 * two equal.
 */
export function normaliseTerm(term: string): string {
  return NOT_ASCII.test(term) ? normaliseTermPlain(term) : term.toLowerCase();
}

function tokenize(text: string): string[] {
  return text.split(SEPARATORS).filter((token) => token !== '');
}

/** Edits a query term tolerates (search-index.port.ts): none below 4 characters, one from 4, two from 8. */
export function editsAllowed(term: string): number {
  const length = [...term].length;
  return length >= 8 ? 2 : length >= 4 ? 1 : 0;
}

const MIN_PREFIX_LENGTH = 3;
/** Results found through a transposed variant rank like fuzzy results, below exact ones. */
const VARIANT_BOOST = 0.45;
/** More terms than this in one query are ignored: nobody types them, and each costs a lookup. */
const MAX_TERMS = 32;

/**
 * The term with two neighbouring characters swapped, for each pair that differs. MiniSearch measures
 * plain Levenshtein distance, where "metfromin" is two edits from "metformin"; the port counts a
 * transposition as one. Searching the swapped variants with one edit fewer restores that.
 */
export function transpositionsOf(term: string): string[] {
  const chars = [...term];
  const variants = new Set<string>();
  for (let i = 0; i + 1 < chars.length; i++) {
    if (chars[i] === chars[i + 1]) continue;
    const swapped = [...chars];
    [swapped[i], swapped[i + 1]] = [swapped[i + 1]!, swapped[i]!];
    variants.add(swapped.join(''));
  }
  variants.delete(term);
  return [...variants];
}

function termQuery(term: string): Query {
  const edits = editsAllowed(term);
  const prefix = [...term].length >= MIN_PREFIX_LENGTH;
  const exact: Query = { queries: [term], fuzzy: edits, prefix };
  if (edits === 0) return exact;
  const swappedOnce = transpositionsOf(term);
  const variants: Query[] = [{ combineWith: 'OR', queries: swappedOnce, fuzzy: edits - 1, prefix, boostTerm: () => VARIANT_BOOST }];
  if (edits === 2) {
    // Two transpositions are two edits as well.
    const swappedTwice = new Set(swappedOnce.flatMap(transpositionsOf));
    swappedTwice.delete(term);
    for (const once of swappedOnce) swappedTwice.delete(once);
    variants.push({ combineWith: 'OR', queries: [...swappedTwice], fuzzy: 0, prefix, boostTerm: () => VARIANT_BOOST / 2 });
  }
  return { combineWith: 'OR', queries: [exact, ...variants] };
}

/** MiniSearch reads a serialized index back only with the options it was built with. */
const INDEX_OPTIONS: Options<SearchDocument> = {
  idField: 'key',
  fields: ['text'],
  storeFields: [],
  tokenize,
  processTerm: (term) => normaliseTerm(term) || null,
};

function newIndex(): MiniSearch<SearchDocument> {
  return new MiniSearch<SearchDocument>(INDEX_OPTIONS);
}

/**
 * Names the serialized form. A change to the tokenizer, the term normalisation or the header below must
 * change it: a text written before would otherwise be read back as an index that matches differently.
 */
const SERIALIZED_FORMAT = 'carebridge-minisearch-1';

/** The first line of a serialized patient index; MiniSearch's own JSON follows on the second. */
interface SerializedHeader {
  format: string;
  /** Text length per key, for the budget: `[key, length]`. */
  textLengths: Array<[string, number]>;
}

function isSerializedHeader(value: unknown): value is SerializedHeader {
  const header = value as SerializedHeader | null;
  return (
    typeof header === 'object' &&
    header !== null &&
    header.format === SERIALIZED_FORMAT &&
    Array.isArray(header.textLengths) &&
    header.textLengths.every((entry) => Array.isArray(entry) && typeof entry[0] === 'string' && Number.isInteger(entry[1]) && entry[1] >= 0)
  );
}

/**
 * What one patient's index is estimated to hold on the heap, from the text given to it. Measured on the
 * sandbox C-CDA documents converted and indexed for many patients (heap after GC divided by the text
 * indexed): about 9 bytes of heap per character of text, plus a few hundred bytes per document (its
 * id, term frequencies, field length) and a few kilobytes per patient (an empty MiniSearch and its options).
 * An estimate on the generous side keeps the real heap under the budget.
 */
export const ESTIMATED_BYTES_PER_TEXT_CHARACTER = 10;
export const ESTIMATED_BYTES_PER_DOCUMENT = 400;
export const ESTIMATED_BYTES_PER_PATIENT = 4_096;

/** The default budget of the indexes held in memory: a few hundred patients of ordinary size. */
export const DEFAULT_SEARCH_CACHE_BYTES = 64 * 1024 * 1024;

export interface MiniSearchIndexOptions {
  /**
   * Estimated bytes of per-patient indexes kept in memory (default 64 MB). When more would be held, the
   * patients searched or changed least recently are forgotten, index and stamp together, and rebuilt
   * from storage on their next search.
   */
  budgetBytes?: number;
}

/** One patient's index, the stamp of the stored data it reflects, and what it is estimated to weigh. */
interface PatientIndex {
  index: MiniSearch<SearchDocument>;
  stamp: string | undefined;
  /** Text length per key, so a replaced or removed document gives back what it was counted for. */
  textLengths: Map<string, number>;
  bytes: number;
}

function documentBytes(textLength: number): number {
  return ESTIMATED_BYTES_PER_DOCUMENT + textLength * ESTIMATED_BYTES_PER_TEXT_CHARACTER;
}

/**
 * The embedded search index (minisearch 7), one index per (account, patient), held in memory within a
 * byte budget: least recently used patients are forgotten first. It is not persisted by itself: a
 * patient's index forgotten (by the budget or a restart) is restored by the core from the text `serialize`
 * gave it, or rebuilt from storage, on its next search; the core knows to because the stamp is forgotten
 * with the index.
 *
 * The patient used last is kept even when it alone weighs more than the budget: its search runs right
 * after its index is built, and forgetting it in between would answer with nothing.
 *
 * Matching (search-index.port.ts): case- and accent-insensitive; every query term must match (AND); a
 * term of 4+ characters tolerates one edit, 8+ two, a transposition counting as one; a term of 3+
 * characters also matches longer words it begins. A query with no words matches nothing.
 */
export class MiniSearchIndex implements SearchIndexPort {
  /** Least recently used first: every use moves a patient to the end. */
  private readonly patients = new Map<string, PatientIndex>();
  private readonly budgetBytes: number;
  private bytesHeld = 0;
  private evictions = 0;

  constructor(options: MiniSearchIndexOptions = {}) {
    const budgetBytes = options.budgetBytes ?? DEFAULT_SEARCH_CACHE_BYTES;
    if (!Number.isFinite(budgetBytes) || budgetBytes <= 0) throw new Error(`MiniSearchIndex: budgetBytes must be a positive number, not ${budgetBytes}`);
    this.budgetBytes = budgetBytes;
  }

  /** What is held now, by the estimate the budget is applied to; for tests, benchmarks and monitoring. */
  get usage(): { patients: number; bytes: number; budgetBytes: number; evictions: number } {
    return { patients: this.patients.size, bytes: this.bytesHeld, budgetBytes: this.budgetBytes, evictions: this.evictions };
  }

  async upsert(accountId: string, patientId: string, documents: readonly SearchDocument[]): Promise<void> {
    if (documents.length === 0) return;
    const scope = scopeKey(accountId, patientId);
    let patient = this.touch(scope);
    if (!patient) {
      patient = { index: newIndex(), stamp: undefined, textLengths: new Map(), bytes: ESTIMATED_BYTES_PER_PATIENT };
      this.patients.set(scope, patient);
      this.bytesHeld += patient.bytes;
    }
    // The last copy of a key in one call wins, as if the calls were made one by one.
    const latest = new Map(documents.map((document) => [document.key, { key: document.key, text: document.text }]));
    let bytes = 0;
    for (const document of latest.values()) {
      const previous = patient.textLengths.get(document.key);
      if (previous === undefined) patient.index.add(document);
      else {
        patient.index.replace(document);
        bytes -= documentBytes(previous);
      }
      patient.textLengths.set(document.key, document.text.length);
      bytes += documentBytes(document.text.length);
    }
    patient.bytes += bytes;
    this.bytesHeld += bytes;
    this.evictBeyondBudget();
  }

  async remove(accountId: string, patientId: string, keys: readonly string[]): Promise<void> {
    const patient = this.touch(scopeKey(accountId, patientId));
    if (!patient) return;
    for (const key of new Set(keys)) {
      const previous = patient.textLengths.get(key);
      if (previous === undefined) continue;
      patient.index.discard(key);
      patient.textLengths.delete(key);
      patient.bytes -= documentBytes(previous);
      this.bytesHeld -= documentBytes(previous);
    }
  }

  async search(accountId: string, patientId: string, query: string): Promise<string[]> {
    const patient = this.touch(scopeKey(accountId, patientId));
    if (!patient || patient.index.documentCount === 0) return [];
    const terms = [...new Set(tokenize(query).map(normaliseTerm).filter((term) => term !== ''))].slice(0, MAX_TERMS);
    if (terms.length === 0) return [];
    const options: SearchOptions = { combineWith: 'AND' };
    return patient.index.search({ combineWith: 'AND', queries: terms.map(termQuery) }, options).map((result) => String(result.id));
  }

  /** Undefined when the patient's index is not held (never built, forgotten by the budget, or a restart). */
  async stampOf(accountId: string, patientId: string): Promise<string | undefined> {
    return this.touch(scopeKey(accountId, patientId))?.stamp;
  }

  /**
   * Recorded only while the patient's index is held: a stamp with no index behind it would claim data
   * the index does not have. A patient with nothing indexed has no stamp, which the core reads as empty.
   */
  async setStamp(accountId: string, patientId: string, stamp: string): Promise<void> {
    const patient = this.touch(scopeKey(accountId, patientId));
    if (patient) patient.stamp = stamp;
  }

  async serialize(accountId: string, patientId: string): Promise<string | undefined> {
    const patient = this.touch(scopeKey(accountId, patientId));
    if (!patient) return undefined;
    const header: SerializedHeader = { format: SERIALIZED_FORMAT, textLengths: [...patient.textLengths] };
    // JSON.stringify escapes line breaks inside strings, so the first one ends the header.
    return `${JSON.stringify(header)}\n${JSON.stringify(patient.index)}`;
  }

  /** Loading MiniSearch's serialized form rebuilds its term tree without tokenizing any text again. */
  async restore(accountId: string, patientId: string, serialized: string): Promise<boolean> {
    const newline = serialized.indexOf('\n');
    if (newline < 0) return false;
    let header: unknown;
    let index: MiniSearch<SearchDocument>;
    try {
      header = JSON.parse(serialized.slice(0, newline));
      if (!isSerializedHeader(header)) return false;
      index = MiniSearch.loadJSON<SearchDocument>(serialized.slice(newline + 1), INDEX_OPTIONS);
    } catch {
      return false;
    }
    const textLengths = new Map(header.textLengths);
    if (index.documentCount !== textLengths.size || [...textLengths.keys()].some((key) => !index.has(key))) return false;
    let bytes = ESTIMATED_BYTES_PER_PATIENT;
    for (const length of textLengths.values()) bytes += documentBytes(length);

    const scope = scopeKey(accountId, patientId);
    const previous = this.patients.get(scope);
    if (previous) {
      this.patients.delete(scope);
      this.bytesHeld -= previous.bytes;
    }
    this.patients.set(scope, { index, stamp: undefined, textLengths, bytes });
    this.bytesHeld += bytes;
    this.evictBeyondBudget();
    return true;
  }

  /** The patient's index, moved to the most recently used end. */
  private touch(scope: string): PatientIndex | undefined {
    const patient = this.patients.get(scope);
    if (patient) {
      this.patients.delete(scope);
      this.patients.set(scope, patient);
    }
    return patient;
  }

  private evictBeyondBudget(): void {
    for (const [scope, patient] of this.patients) {
      if (this.bytesHeld <= this.budgetBytes || this.patients.size <= 1) return;
      this.patients.delete(scope);
      this.bytesHeld -= patient.bytes;
      this.evictions++;
    }
  }
}

function scopeKey(accountId: string, patientId: string): string {
  return `${accountId}\u0000${patientId}`;
}
