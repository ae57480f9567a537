import type { SearchDocument, SearchIndexPort } from '../../core/ports/search-index.port.js';
import { RecentlyUsed } from '../../core/recently-used.js';

/** Patients whose stamps are kept for an index without its own; a forgotten stamp costs one rebuild. */
export const STAMPS_KEPT = 10_000;

/** A search index as an embedder may write one: the stamp methods are theirs to keep or to leave out. */
export type SearchIndexWithoutStamps = Omit<SearchIndexPort, 'stampOf' | 'setStamp'> & Partial<Pick<SearchIndexPort, 'stampOf' | 'setStamp'>>;

/**
 * An index that keeps no stamps (an embedder's own, say), with stamps kept beside it in this object: at
 * most STAMPS_KEPT patients, least recently used forgotten first. A forgotten stamp reads as "holds nothing",
 * so the core rebuilds that patient's index from storage on its next search: never a stale answer. The
 * stamps live as long as this wrapper, which lives as long as the index it wraps, so they are forgotten
 * together with an in-memory index.
 */
class StampsBeside implements SearchIndexPort {
  private readonly stamps = new RecentlyUsed<string>(STAMPS_KEPT);

  readonly serialize?: SearchIndexPort['serialize'];
  readonly restore?: SearchIndexPort['restore'];

  constructor(private readonly index: SearchIndexWithoutStamps) {
    // An index that can be saved and read back keeps that ability: the stamp is never part of the text.
    if (index.serialize && index.restore) {
      this.serialize = index.serialize.bind(index);
      this.restore = index.restore.bind(index);
    }
  }

  upsert(accountId: string, patientId: string, documents: readonly SearchDocument[]): Promise<void> {
    return this.index.upsert(accountId, patientId, documents);
  }
  remove(accountId: string, patientId: string, keys: readonly string[]): Promise<void> {
    return this.index.remove(accountId, patientId, keys);
  }
  search(accountId: string, patientId: string, query: string): Promise<string[]> {
    return this.index.search(accountId, patientId, query);
  }
  async stampOf(accountId: string, patientId: string): Promise<string | undefined> {
    return this.stamps.get(`${accountId}\u0000${patientId}`);
  }
  async setStamp(accountId: string, patientId: string, stamp: string): Promise<void> {
    this.stamps.set(`${accountId}\u0000${patientId}`, stamp);
  }
}

/** The index as it is when it keeps its own stamps; wrapped with stamps beside it otherwise. */
export function withStamps(index: SearchIndexWithoutStamps): SearchIndexPort {
  const maybe = index as Partial<SearchIndexPort>;
  return typeof maybe.stampOf === 'function' && typeof maybe.setStamp === 'function' ? (index as SearchIndexPort) : new StampsBeside(index);
}
