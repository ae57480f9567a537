import MiniSearch, { type Query, type SearchOptions } from 'minisearch';
import type { SearchDocument, SearchIndexPort } from '../../core/ports/search-index.port.js';

/** Words are split on whitespace and punctuation, as MiniSearch does by default. */
const SEPARATORS = /[\n\r\p{Z}\p{P}]+/u;

/** Case and accents never matter: "Hôpital" is found by "hopital". */
function normaliseTerm(term: string): string {
  return term.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
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

function newIndex(): MiniSearch<SearchDocument> {
  return new MiniSearch<SearchDocument>({
    idField: 'key',
    fields: ['text'],
    storeFields: [],
    tokenize,
    processTerm: (term) => normaliseTerm(term) || null,
  });
}

/**
 * The embedded search index (minisearch 7), one index per (account, patient), held in memory. It is
 * not persisted: after a restart a host rebuilds a patient's index from storage (e.g. on first search).
 *
 * Matching (search-index.port.ts): case- and accent-insensitive; every query term must match (AND); a
 * term of 4+ characters tolerates one edit, 8+ two, a transposition counting as one; a term of 3+
 * characters also matches longer words it begins. A query with no words matches nothing.
 */
export class MiniSearchIndex implements SearchIndexPort {
  private readonly indexes = new Map<string, MiniSearch<SearchDocument>>();

  async upsert(accountId: string, patientId: string, documents: readonly SearchDocument[]): Promise<void> {
    if (documents.length === 0) return;
    const scope = scopeKey(accountId, patientId);
    let index = this.indexes.get(scope);
    if (!index) {
      index = newIndex();
      this.indexes.set(scope, index);
    }
    // The last copy of a key in one call wins, as if the calls were made one by one.
    const latest = new Map(documents.map((document) => [document.key, { key: document.key, text: document.text }]));
    for (const document of latest.values()) {
      if (index.has(document.key)) index.replace(document);
      else index.add(document);
    }
  }

  async remove(accountId: string, patientId: string, keys: readonly string[]): Promise<void> {
    const scope = scopeKey(accountId, patientId);
    const index = this.indexes.get(scope);
    if (!index) return;
    for (const key of new Set(keys)) if (index.has(key)) index.discard(key);
    if (index.documentCount === 0) this.indexes.delete(scope);
  }

  async search(accountId: string, patientId: string, query: string): Promise<string[]> {
    const index = this.indexes.get(scopeKey(accountId, patientId));
    if (!index) return [];
    const terms = [...new Set(tokenize(query).map(normaliseTerm).filter((term) => term !== ''))].slice(0, MAX_TERMS);
    if (terms.length === 0) return [];
    const options: SearchOptions = { combineWith: 'AND' };
    return index.search({ combineWith: 'AND', queries: terms.map(termQuery) }, options).map((result) => String(result.id));
  }
}

function scopeKey(accountId: string, patientId: string): string {
  return `${accountId}\u0000${patientId}`;
}
