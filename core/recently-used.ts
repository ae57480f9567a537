/**
 * A map of at most `capacity` entries that forgets the least recently used one first. For what the core
 * keeps in process per patient: it must not grow with the number of patients.
 */
export class RecentlyUsed<V> {
  /** Least recently used first: a read or a write moves the key to the end. */
  private readonly entries = new Map<string, V>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`RecentlyUsed: capacity must be a positive integer, not ${capacity}`);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value, now the most recently used; undefined when absent or forgotten. */
  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  /** Sets the value as the most recently used, forgetting the least recently used beyond the capacity. */
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.capacity) break;
      this.entries.delete(oldest);
    }
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }
}
