import fc from 'fast-check';
import { expect, test } from 'vitest';
import { mapReferencesInPlace, referencesIn, withReferencesMapped } from './references.js';

/** JSON-shaped values where `reference` keys (strings or not) are common. */
const json = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string({ maxLength: 6 }),
    fc.integer(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('reference', 'subject', 'id', 'entry', 'x'), tie('value'), { maxKeys: 4 }),
  ),
})).value;

test('mapped into a copy or in place, the same references change, and the copy leaves its input as it was', () => {
  fc.assert(
    fc.property(json, (value) => {
      const before = JSON.stringify(value);
      const map = (reference: string) => (reference.length % 2 === 0 ? `R/${reference}` : undefined);
      const copy = withReferencesMapped(value, map);
      expect(JSON.stringify(value)).toBe(before);
      const inPlace = structuredClone(value);
      const changed = mapReferencesInPlace(inPlace, map);
      expect(inPlace).toEqual(copy);
      expect(referencesIn(copy)).toEqual(referencesIn(value).map((reference) => map(reference) ?? reference));
      expect(changed).toBe(referencesIn(value).filter((reference) => map(reference) !== undefined).length);
    }),
    { numRuns: 500 },
  );
});

test('only a string under the key `reference` is a reference, at any depth, in document order', () => {
  const value = { reference: 'A/1', subject: { reference: 'B/2' }, entry: [{ reference: 3 }, { item: { reference: 'C/3' } }], display: 'reference' };
  expect(referencesIn(value)).toEqual(['A/1', 'B/2', 'C/3']);
});
