import { CoreError } from '../errors.js';
import { bodyTextProblem, identifierTextProblem } from '../text.js';

/**
 * The one rule for text that reaches the API, applied to every path parameter, query value and JSON body
 * before any route sees it. Text that breaks storage or later reads never gets in: NUL is refused by
 * PostgreSQL and made SQLite fail the query; other C0 controls and lone UTF-16 surrogates cannot be written
 * back as valid JSON or UTF-8 by every reader. Path and query values are identifiers and search words, so
 * they also refuse TAB, CR, LF and DEL; body text may hold line breaks and tabs (descriptions, notes).
 */

/** Deeper JSON than this is refused: no resource of the API nests anywhere near it, and recursion over a
 * deeper value (validation, copies, serialisation) can exhaust the stack. */
export const MAX_JSON_DEPTH = 64;

/** Field paths are built from the client's own keys: an answer repeats at most this much of one. */
const MAX_FIELD_LENGTH = 200;

function invalid(field: string, problem: string): CoreError {
  const named = field.length > MAX_FIELD_LENGTH ? `${field.slice(0, MAX_FIELD_LENGTH)}…` : field;
  return new CoreError('VALIDATION_FAILED', `${named}: ${problem}`, { details: { field: named } });
}

/** Refuses path parameters that break the text rule, naming the parameter (never echoing the value). */
export function checkPathParams(params: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(params)) {
    const problem = identifierTextProblem(value);
    if (problem) throw invalid(`path ${name}`, problem);
  }
}

/** Refuses query parameters whose name or any value breaks the text rule. */
export function checkQuery(query: Readonly<Record<string, string | readonly string[] | undefined>>): void {
  for (const [name, value] of Object.entries(query)) {
    if (identifierTextProblem(name)) throw invalid('query', 'parameter names must not contain control characters');
    const values = typeof value === 'string' ? [value] : (value ?? []);
    for (const one of values) {
      const problem = identifierTextProblem(one);
      if (problem) throw invalid(`query ${name}`, problem);
    }
  }
}

/**
 * Refuses a JSON body nested deeper than `MAX_JSON_DEPTH` or holding a key or string that breaks the text
 * rule, naming where (`content.0.attachment.title`). Walks with its own stack, so a hostile depth cannot
 * overflow the call stack here either.
 */
export function checkJsonBody(body: unknown): void {
  if (typeof body === 'string') {
    const problem = bodyTextProblem(body);
    if (problem) throw invalid('body', problem);
    return;
  }
  if (typeof body !== 'object' || body === null) return;
  const pending: { value: object; path: string; depth: number }[] = [{ value: body, path: '', depth: 1 }];
  while (pending.length > 0) {
    const { value, path, depth } = pending.pop()!;
    if (depth > MAX_JSON_DEPTH) throw invalid(path || 'body', `is nested deeper than ${MAX_JSON_DEPTH} levels`);
    const entries: [string, unknown][] = Array.isArray(value) ? value.map((item, i) => [String(i), item]) : Object.entries(value);
    for (const [key, item] of entries) {
      const at = path ? `${path}.${key}` : key;
      if (!Array.isArray(value) && bodyTextProblem(key)) throw invalid(path || 'body', 'field names must not contain control characters or lone surrogates');
      if (typeof item === 'string') {
        const problem = bodyTextProblem(item);
        if (problem) throw invalid(at, problem);
      } else if (typeof item === 'object' && item !== null) {
        pending.push({ value: item, path: at, depth: depth + 1 });
      }
    }
  }
}
