import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { normaliseState, normaliseStateSlowly, normaliseZip, normaliseZipSlowly } from './addresses.js';
import { normaliseEmail, normalisePhone, normalisePhoneSlowly } from './contacts.js';
import { normaliseSsn, normaliseSsnSlowly } from './identifiers.js';

// Digits, separators, letters of both cases and the non-ASCII characters that upper-case into ASCII.
const unit = fc.oneof(
  fc.constantFrom('0', '1', '5', '9', '-', '+', ' ', '.', '(', ')', '\t', '\u00a0', 'a', 'I', 'l', 'n', 'y', 'Y', 'ı', 'ſ', 'ﬀ', '٣', '１', 'é'),
  fc.string({ unit: 'binary', maxLength: 1 }),
);
const text = fc.array(unit, { maxLength: 14 }).map((units) => units.join(''));
const digitsLike = fc.oneof(
  text,
  fc.stringMatching(/^\+?1?\(?\d{3}\)? ?\d{3}[-. ]?\d{4}$/),
  fc.stringMatching(/^\d{5}(-?\d{4})?$/),
  fc.stringMatching(/^\d{3}[- ]?\d{2}[- ]?\d{4}$/),
);

describe('normalisers: the fast paths give what the rules as written give', () => {
  test('property: states, any two characters', () => {
    fc.assert(fc.property(fc.oneof(text, fc.string({ unit: unit, minLength: 2, maxLength: 2 })), (value) => {
      expect(normaliseState(value)).toBe(normaliseStateSlowly(value));
    }), { numRuns: 3_000 });
    for (let a = 0; a < 128; a++) for (let b = 0; b < 128; b++) {
      const value = String.fromCharCode(a, b);
      expect(normaliseState(value)).toBe(normaliseStateSlowly(value));
    }
    expect(normaliseState('ıl')).toBe('IL');
  });

  test('property: zips, phones and ssns', () => {
    fc.assert(fc.property(digitsLike, (value) => {
      expect(normaliseZip(value)).toBe(normaliseZipSlowly(value));
      expect(normalisePhone(value)).toBe(normalisePhoneSlowly(value));
      expect(normaliseSsn(value)).toBe(normaliseSsnSlowly(value));
    }), { numRuns: 5_000 });
  });

  test('an email keeps its local part and lower-cases its domain', () => {
    expect(normaliseEmail('Ann.Lee@Example.COM')).toBe('Ann.Lee@example.com');
    const plain = 'ann@example.com';
    expect(normaliseEmail(plain)).toBe(plain);
    fc.assert(fc.property(fc.emailAddress(), (value) => {
      const at = value.indexOf('@');
      const expected = value.slice(0, at + 1) + value.slice(at + 1).toLowerCase();
      const result = normaliseEmail(value);
      if (result !== undefined) expect(result).toBe(expected);
    }), { numRuns: 1_000 });
  });
});
