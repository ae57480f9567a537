/**
 * The storage engine under MemoryStorage: keyed rows with secondary indexes, and a copy-on-write overlay
 * that a transaction writes into and that is applied to its table on commit (or dropped on rollback).
 *
 * Rows are stored as private copies and never mutated in place: a write replaces the row object, so an
 * overlay can tell whether the base row changed under it by reference.
 */

/** Index name -> function giving the index keys of a row (a row may sit under several keys, or none). */
export type IndexSpec<T> = Record<string, (row: T) => readonly string[]>;

/** What repositories read and write through: a table, or a transaction's overlay on it. */
export interface TableView<T> {
  get(key: string): T | undefined;
  /** Primary keys of the rows under `indexKey` in the named index. */
  keysBy(index: string, indexKey: string): string[];
  /** Number of rows under `indexKey`, without materialising them. */
  countBy(index: string, indexKey: string): number;
  /**
   * The index keys with rows under them, in no promised order; a key leaves once no row is under it. An
   * overlay may also list a key whose rows it has all rewritten (`keysBy` then finds none).
   */
  indexKeys(index: string): string[];
  set(key: string, row: T): void;
  delete(key: string): boolean;
}

class SecondaryIndex<T> {
  private readonly entries = new Map<string, Set<string>>();

  constructor(private readonly keysOf: (row: T) => readonly string[]) {}

  add(primaryKey: string, row: T): void {
    for (const indexKey of this.keysOf(row)) {
      let keys = this.entries.get(indexKey);
      if (!keys) {
        keys = new Set();
        this.entries.set(indexKey, keys);
      }
      keys.add(primaryKey);
    }
  }

  remove(primaryKey: string, row: T): void {
    for (const indexKey of this.keysOf(row)) {
      const keys = this.entries.get(indexKey);
      if (!keys) continue;
      keys.delete(primaryKey);
      if (keys.size === 0) this.entries.delete(indexKey);
    }
  }

  lookup(indexKey: string): ReadonlySet<string> {
    return this.entries.get(indexKey) ?? EMPTY;
  }

  indexKeys(): IterableIterator<string> {
    return this.entries.keys();
  }
}

const EMPTY: ReadonlySet<string> = new Set();

function buildIndexes<T>(spec: IndexSpec<T>): Map<string, SecondaryIndex<T>> {
  return new Map(Object.entries(spec).map(([name, keysOf]) => [name, new SecondaryIndex(keysOf)]));
}

function indexOf<T>(indexes: Map<string, SecondaryIndex<T>>, name: string): SecondaryIndex<T> {
  const index = indexes.get(name);
  if (!index) throw new Error(`unknown index ${name}`);
  return index;
}

export class Table<T> implements TableView<T> {
  private readonly rows = new Map<string, T>();
  private readonly indexes: Map<string, SecondaryIndex<T>>;

  constructor(readonly spec: IndexSpec<T>) {
    this.indexes = buildIndexes(spec);
  }

  get(key: string): T | undefined {
    return this.rows.get(key);
  }

  keysBy(index: string, indexKey: string): string[] {
    return [...indexOf(this.indexes, index).lookup(indexKey)];
  }

  /** The live key set of an index entry; overlays filter it lazily instead of copying it. */
  keySetBy(index: string, indexKey: string): ReadonlySet<string> {
    return indexOf(this.indexes, index).lookup(indexKey);
  }

  countBy(index: string, indexKey: string): number {
    return indexOf(this.indexes, index).lookup(indexKey).size;
  }

  indexKeys(index: string): string[] {
    return [...indexOf(this.indexes, index).indexKeys()];
  }

  set(key: string, row: T): void {
    const previous = this.rows.get(key);
    if (previous !== undefined) for (const index of this.indexes.values()) index.remove(key, previous);
    this.rows.set(key, row);
    for (const index of this.indexes.values()) index.add(key, row);
  }

  delete(key: string): boolean {
    const previous = this.rows.get(key);
    if (previous === undefined) return false;
    for (const index of this.indexes.values()) index.remove(key, previous);
    this.rows.delete(key);
    return true;
  }
}

const DELETED = Symbol('deleted');

/**
 * A transaction's private view of a table: reads see the table plus the transaction's own writes; the
 * table sees nothing until `commit`.
 *
 * The overlay's own indexes are brought up to date only when an index is read: a batch of writes that is
 * never looked up by index inside its transaction (a bulk import's) is indexed once, by the table at
 * commit, rather than twice.
 */
export class TableOverlay<T> implements TableView<T> {
  private readonly writes = new Map<string, T | typeof DELETED>();
  /** The base row each written key had when the transaction first wrote it (undefined: absent). */
  private readonly baseSeen = new Map<string, T | undefined>();
  private readonly indexes: Map<string, SecondaryIndex<T>>;
  /** The version of each written row the overlay's indexes hold. */
  private readonly indexed = new Map<string, T>();
  /** Keys written since the indexes were last brought up to date. */
  private readonly unindexed = new Set<string>();

  constructor(private readonly base: Table<T>) {
    this.indexes = buildIndexes(base.spec);
  }

  get(key: string): T | undefined {
    const written = this.writes.get(key);
    if (written === DELETED) return undefined;
    return written ?? this.base.get(key);
  }

  keysBy(index: string, indexKey: string): string[] {
    this.updateIndexes();
    const keys: string[] = [];
    for (const key of this.base.keySetBy(index, indexKey)) if (!this.writes.has(key)) keys.push(key);
    for (const key of indexOf(this.indexes, index).lookup(indexKey)) keys.push(key);
    return keys;
  }

  countBy(index: string, indexKey: string): number {
    if (this.writes.size === 0) return this.base.countBy(index, indexKey);
    return this.keysBy(index, indexKey).length;
  }

  indexKeys(index: string): string[] {
    this.updateIndexes();
    const keys = new Set(this.base.indexKeys(index));
    for (const key of indexOf(this.indexes, index).indexKeys()) keys.add(key);
    return [...keys];
  }

  set(key: string, row: T): void {
    this.remember(key);
    this.writes.set(key, row);
    this.unindexed.add(key);
  }

  delete(key: string): boolean {
    if (this.get(key) === undefined) return false;
    this.remember(key);
    this.writes.set(key, DELETED);
    this.unindexed.add(key);
    return true;
  }

  /**
   * Keys the transaction created that another writer created meanwhile (outside the transaction): applying
   * the overlay would silently overwrite them, so the commit is refused instead.
   */
  insertConflicts(): string[] {
    const conflicts: string[] = [];
    for (const [key, seen] of this.baseSeen) {
      if (seen === undefined && this.writes.get(key) !== DELETED && this.base.get(key) !== undefined) conflicts.push(key);
    }
    return conflicts;
  }

  commit(): void {
    for (const [key, row] of this.writes) {
      if (row === DELETED) this.base.delete(key);
      else this.base.set(key, row);
    }
  }

  private remember(key: string): void {
    if (!this.baseSeen.has(key)) this.baseSeen.set(key, this.base.get(key));
  }

  private updateIndexes(): void {
    for (const key of this.unindexed) {
      const previous = this.indexed.get(key);
      if (previous !== undefined) for (const index of this.indexes.values()) index.remove(key, previous);
      const written = this.writes.get(key);
      if (written === undefined || written === DELETED) {
        this.indexed.delete(key);
      } else {
        for (const index of this.indexes.values()) index.add(key, written);
        this.indexed.set(key, written);
      }
    }
    this.unindexed.clear();
  }
}
