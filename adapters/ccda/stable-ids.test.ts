import fc from 'fast-check';
import { expect, test } from 'vitest';
import { replaceRandomUuids, uuidFromSeed, uuidStarts, uuidsIn } from './stable-ids.js';

/** The plain definition the scanner must agree with. */
const UUID_PATTERN = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

function replacedByPattern(json: string, keep: ReadonlySet<string>, seedPrefix: string): string {
  const replacements = new Map<string, string>();
  return json.replace(UUID_PATTERN, (uuid) => {
    const lower = uuid.toLowerCase();
    if (keep.has(lower)) return uuid;
    let replacement = replacements.get(lower);
    if (!replacement) {
      replacement = uuidFromSeed(`${seedPrefix}:generated:${replacements.size}`);
      replacements.set(lower, replacement);
    }
    return replacement;
  });
}

/** Text made of hex runs, hyphens and other characters, where UUID shapes (whole, cut, overlapping) are frequent. */
const uuidish = fc
  .array(
    fc.oneof(
      fc.constantFrom('-', 'x', '"', ' ', '#med-', 'urn:uuid:'),
      fc.stringMatching(/^[0-9a-fA-F]{1,14}$/),
      fc.uuid().map((uuid) => uuid.toUpperCase()),
      fc.uuid(),
      fc.uuid().map((uuid) => uuid.slice(0, 30)),
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));

test('the hyphen-hopping scanner finds exactly what the regular expression finds, where it finds it', () => {
  fc.assert(
    fc.property(uuidish, (text) => {
      expect(uuidStarts(text)).toEqual(Array.from(text.matchAll(UUID_PATTERN), (match) => match.index));
      expect(uuidsIn(text)).toEqual(new Set(Array.from(text.matchAll(UUID_PATTERN), (match) => match[0].toLowerCase())));
    }),
    { numRuns: 2000 },
  );
});

test('replacing random UUIDs gives the text the regular expression gives, kept ones and repeats included', () => {
  fc.assert(
    fc.property(uuidish, fc.array(fc.uuid(), { maxLength: 3 }), (text, kept) => {
      const keep = new Set([...kept, ...[...uuidsIn(text)].slice(0, 1)]);
      expect(replaceRandomUuids(text, keep, 'seed')).toBe(replacedByPattern(text, keep, 'seed'));
    }),
    { numRuns: 2000 },
  );
});

test('edge shapes: a longer hex run before the hyphen, back-to-back UUIDs, a UUID at the very end', () => {
  const a = '0123abcd-0123-4567-89ab-0123456789ab';
  for (const text of [`ff${a}`, `${a}${a}`, `${a}-${a}`, `x${a}`, a, a.slice(0, 35), `${a.slice(0, 9)}${a}`]) {
    expect(uuidStarts(text)).toEqual(Array.from(text.matchAll(UUID_PATTERN), (match) => match.index));
  }
});
