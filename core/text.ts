/**
 * What text the service stores: no C0 control characters other than TAB, LF and CR, and no lone UTF-16
 * surrogates. NUL is refused by PostgreSQL and made SQLite fail the query; the others cannot be written back
 * as valid JSON or UTF-8 by every reader. Identifiers and search words are stricter still.
 */

/** C0 controls except TAB, LF and CR. */
const BODY_CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;
/** Every C0 control and DEL. */
const IDENTIFIER_CONTROL = /[\u0000-\u001F\u007F]/;

/** What is wrong with a text of a JSON body, or undefined when it is acceptable. */
export function bodyTextProblem(value: string): string | undefined {
  if (BODY_CONTROL.test(value)) return 'must not contain control characters (such as NUL)';
  if (!value.isWellFormed()) return 'must be valid Unicode text (it holds a lone surrogate)';
  return undefined;
}

/** What is wrong with a path parameter or query value, or undefined when it is acceptable. */
export function identifierTextProblem(value: string): string | undefined {
  if (IDENTIFIER_CONTROL.test(value)) return 'must not contain control characters (such as NUL, tabs or line breaks)';
  if (!value.isWellFormed()) return 'must be valid Unicode text (it holds a lone surrogate)';
  return undefined;
}

const BODY_CONTROLS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g;

/**
 * A copy of a value the service made from a document (converted FHIR), with the same text rule applied by
 * repair rather than refusal: control characters dropped, lone surrogates made U+FFFD. A document is data
 * from a network, not a request: it is kept, minus what storage cannot hold (XML 1.0 allows none of these,
 * so they can only come from character references a converter passed through).
 */
export function repairText<T>(value: T): T {
  if (typeof value === 'string') {
    const cleaned = BODY_CONTROL.test(value) ? value.replace(BODY_CONTROLS, '') : value;
    return (cleaned.isWellFormed() ? cleaned : cleaned.toWellFormed()) as T;
  }
  if (Array.isArray(value)) return value.map((item) => repairText(item)) as T;
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) copy[repairText(key)] = repairText(item);
    return copy as T;
  }
  return value;
}

/**
 * Whether `repairText` would change anything in the value: a string or key it would clean. Lets a caller
 * that owns the value (a converter's fresh output) skip the copy when, as nearly always, nothing is wrong.
 */
export function needsTextRepair(value: unknown): boolean {
  if (typeof value === 'string') return BODY_CONTROL.test(value) || !value.isWellFormed();
  if (Array.isArray(value)) return value.some(needsTextRepair);
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) if (needsTextRepair(key) || needsTextRepair(item)) return true;
  }
  return false;
}
