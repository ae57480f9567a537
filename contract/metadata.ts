import { z } from 'zod';
import { CoreError } from './errors.js';

/** `meta.data` holds at most 50 pairs, keys <= 40 chars, values <= 500 chars. */
export const METADATA_MAX_PAIRS = 50;
export const METADATA_MAX_KEY_LENGTH = 40;
export const METADATA_MAX_VALUE_LENGTH = 500;

export type WebhookMetadata = Record<string, string>;

interface MetadataProblem {
  message: string;
  key?: string;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** The first rule the input breaks, or undefined. One walk shared by `validateMetadata` and the zod schema. */
function findMetadataProblem(input: unknown): MetadataProblem | undefined {
  if (!isPlainObject(input)) {
    return { message: 'metadata must be an object of string keys and string values' };
  }
  const entries = Object.entries(input);
  for (const [index, [key, value]] of entries.entries()) {
    if (index >= METADATA_MAX_PAIRS) {
      return { key, message: `metadata: at most ${METADATA_MAX_PAIRS} pairs are allowed, got ${entries.length} (first one over the limit: "${key}")` };
    }
    if (key.length === 0 || key.length > METADATA_MAX_KEY_LENGTH) {
      return { key, message: `metadata key "${key}" must be 1 to ${METADATA_MAX_KEY_LENGTH} characters, got ${key.length}` };
    }
    if (typeof value !== 'string') {
      return { key, message: `metadata value of "${key}" must be a string, got ${value === null ? 'null' : typeof value}` };
    }
    if (value.length > METADATA_MAX_VALUE_LENGTH) {
      return { key, message: `metadata value of "${key}" must be at most ${METADATA_MAX_VALUE_LENGTH} characters, got ${value.length}` };
    }
  }
  return undefined;
}

/**
 * Validates the metadata a caller attaches to a request (it is echoed as `meta.data` on every webhook the
 * request causes). `undefined` and `null` mean "no metadata". Returns a fresh plain object.
 *
 * @throws CoreError `METADATA_INVALID` whose message and `details.key` name the offending key (no `key`
 *   when the input is not an object at all). Values are never echoed in the error: they may be PHI.
 */
export function validateMetadata(input: unknown): WebhookMetadata | undefined {
  if (input === undefined || input === null) return undefined;
  const problem = findMetadataProblem(input);
  if (problem) {
    throw new CoreError('METADATA_INVALID', problem.message, problem.key === undefined ? undefined : { details: { key: problem.key } });
  }
  // Object.fromEntries defines own properties, so a `__proto__` key stays data and never touches the prototype.
  return Object.fromEntries(Object.entries(input as Record<string, string>));
}

/** The same rules as a zod schema, for request schemas and for the client library's parsing of `meta.data`. */
export const webhookMetadataSchema = z.custom<WebhookMetadata>((value) => findMetadataProblem(value) === undefined, {
  error: (issue) => findMetadataProblem(issue.input)?.message ?? 'metadata is invalid',
});
