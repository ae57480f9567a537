/**
 * The one walker of FHIR references: every `reference` string at any depth of a resource (or of anything
 * JSON-shaped), read, mapped into a copy, or mapped in place. Deduplication (survivors), consolidation
 * (a document's patient is ours) and the converter's repairs (a retyped resource) all rewrite references
 * through it, so what counts as a reference is decided here alone: a string under the key `reference`.
 */

/** What a reference becomes; `undefined` keeps it as it is. */
export type ReferenceMap = (reference: string) => string | undefined;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every `reference` string at any depth, in document order (appended to `out`). */
export function referencesIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const item of value) referencesIn(item, out);
  } else if (isRecord(value)) {
    for (const key in value) {
      const child = value[key];
      if (key === 'reference' && typeof child === 'string') out.push(child);
      else if (typeof child === 'object' && child !== null) referencesIn(child, out);
    }
  }
  return out;
}

/** A deep copy of `value` (objects and arrays), each `reference` string replaced by what `map` makes of it. */
export function withReferencesMapped<T>(value: T, map: ReferenceMap): T {
  if (Array.isArray(value)) return value.map((item) => withReferencesMapped(item, map)) as T;
  if (!isRecord(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    copy[key] = key === 'reference' && typeof child === 'string' ? (map(child) ?? child) : withReferencesMapped(child, map);
  }
  return copy as T;
}

/** `withReferencesMapped` for a table of references: a deep copy where each reference found in `table` is its value. */
export function withReferencesReplaced<T>(value: T, table: ReadonlyMap<string, string>): T {
  return withReferencesMapped(value, (reference) => table.get(reference));
}

/** Maps each `reference` string of `value` in place; returns how many changed. */
export function mapReferencesInPlace(value: unknown, map: ReferenceMap): number {
  let changed = 0;
  if (Array.isArray(value)) {
    for (const item of value) if (typeof item === 'object' && item !== null) changed += mapReferencesInPlace(item, map);
    return changed;
  }
  if (!isRecord(value)) return 0;
  for (const key in value) {
    const child = value[key];
    if (typeof child === 'object' && child !== null) changed += mapReferencesInPlace(child, map);
    else if (key === 'reference' && typeof child === 'string') {
      const target = map(child);
      if (target !== undefined && target !== child) {
        value[key] = target;
        changed++;
      }
    }
  }
  return changed;
}
