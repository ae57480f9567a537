import fc from 'fast-check';
import { expect, test } from 'vitest';
import { replaceRandomUuids, uuidFromSeed, uuidStarts, uuidsIn, withRandomUuidsReplaced } from './stable-ids.js';

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

/** JSON-like values made of UUID-ish strings (as values and keys), with what JSON leaves out or turns to null. */
const jsonish = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    uuidish,
    fc.integer(),
    fc.constantFrom(true, false, null, undefined, Number.NaN, Number.POSITIVE_INFINITY, 1.5),
    fc.constant(new Date(Date.UTC(2020, 0, 2))),
    tie('list'),
    tie('object'),
  ),
  list: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(uuidish, tie('value'), { maxKeys: 5 }),
}));

test('replacing random UUIDs in a value gives what the JSON text round trip gives, ids numbered in the same order', () => {
  fc.assert(
    fc.property(jsonish.value, fc.array(fc.uuid(), { maxLength: 3 }), (value, kept) => {
      const text = JSON.stringify(value);
      const keep = new Set([...kept, ...[...uuidsIn(text ?? '')].slice(0, 1)]);
      const byText = text === undefined ? undefined : JSON.parse(replaceRandomUuids(text, keep, 'seed'));
      const byWalk = withRandomUuidsReplaced(value, keep, 'seed');
      expect(byWalk).toStrictEqual(byText);
      expect(JSON.stringify(byWalk)).toBe(JSON.stringify(byText));
    }),
    { numRuns: 1000 },
  );
});

test('the copy shares no object with the value it was made of', () => {
  const shared = { reference: 'Practitioner/0123abcd-0123-4567-89ab-0123456789ab' };
  const value = { a: shared, b: [shared] };
  const copied = withRandomUuidsReplaced(value, new Set(), 'seed') as { a: unknown; b: unknown[] };
  expect(copied.a).not.toBe(shared);
  expect(copied.b[0]).not.toBe(copied.a);
  expect(copied.a).toEqual(copied.b[0]);
  expect(shared.reference).toBe('Practitioner/0123abcd-0123-4567-89ab-0123456789ab');
});
