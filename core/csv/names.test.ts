import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { splitNamesSlowly } from '../matching/normalise.js';
import { parseNameField } from './names.js';

/** parseNameField as its rules read: collapse whitespace (U+FEFF is not), split, keep the field when a name has a letter. */
function parseSlowly(value: string) {
  const text = value.replace(/[^\S\uFEFF]+/g, ' ');
  const names = splitNamesSlowly(text);
  return names.some((name) => /\p{L}/u.test(name)) ? { text, names } : undefined;
}

describe('parseNameField', () => {
  test('property: the fast paths give what the rules as written give', () => {
    const unit = fc.oneof(
      fc.constantFrom('a', 'Z', '1', ' ', '  ', '\t', '\u00a0', '\u2003', '\ufeff', ',', '-', "'", 'é', '李', '\u0301', '😀', '²'),
      fc.string({ unit: 'binary', maxLength: 2 }),
    );
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 10 }).map((parts) => parts.join('')), (value) => {
        expect(parseNameField(value)).toEqual(parseSlowly(value));
      }),
      { numRuns: 3_000 },
    );
  });

  test('single spaces are kept as written; other whitespace collapses', () => {
    expect(parseNameField('Anne Marie')).toEqual({ text: 'Anne Marie', names: ['Anne', 'Marie'] });
    expect(parseNameField('Anne  \tMarie')).toEqual({ text: 'Anne Marie', names: ['Anne', 'Marie'] });
    expect(parseNameField('123, -')).toBeUndefined();
    expect(parseNameField('1 Ø')).toEqual({ text: '1 Ø', names: ['1', 'Ø'] });
  });
});
