/**
 * A resource's dates: every string of it that starts like a date (`YYYY-`). The date repairs each say what
 * they make of such a string; the strings are found and rewritten in one walk of the resource for all of
 * them (repairConvertedResources), since walking every resource, a Composition's narrative included, once
 * per rule was most of their cost.
 */
import type { FhirResource } from '../../core/ports/ccda.port.js';

/** Whether a text could be a date (four digits and a dash): the only strings the date repairs look at. */
export const mayBeDate = (text: string) =>
  text.length >= 7 && text.charCodeAt(4) === 45 && text.charCodeAt(0) >= 48 && text.charCodeAt(0) <= 57 && text.charCodeAt(3) >= 48 && text.charCodeAt(3) <= 57;

/**
 * Replaces, in place, each date-like string of the resource (at any depth) by what the rewrites make of
 * it, one after the other; `changed[i]` is set when the i-th rewrite changed a string.
 */
export function rewriteDates(resource: FhirResource, rewrites: readonly ((text: string) => string)[], changed: boolean[] = []): boolean[] {
  const rewrite = (text: string): string => {
    let current = text;
    for (let i = 0; i < rewrites.length; i++) {
      const next = rewrites[i]!(current);
      if (next !== current) {
        changed[i] = true;
        current = next;
      }
    }
    return current;
  };
  const visit = (container: Record<string, unknown> | unknown[], key: string | number) => {
    const value = (container as Record<string, unknown>)[key as string];
    if (typeof value === 'string') {
      if (!mayBeDate(value)) return;
      const next = rewrite(value);
      if (next !== value) (container as Record<string, unknown>)[key as string] = next;
    } else if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) visit(value, i);
    } else if (value !== null && typeof value === 'object') {
      for (const child in value) visit(value as Record<string, unknown>, child);
    }
  };
  for (const key in resource) visit(resource, key);
  return changed;
}
