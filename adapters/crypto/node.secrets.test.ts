import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { NodeSecrets } from './node.secrets.js';

describe('NodeSecrets', () => {
  const secrets = new NodeSecrets();

  test('sha256Hex matches the published test vectors', () => {
    // FIPS 180-2 examples.
    expect(secrets.sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(secrets.sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  test('sha256Hex hashes the UTF-8 bytes', () => {
    // printf 'é' | sha256sum
    expect(secrets.sha256Hex('é')).toBe('4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c');
  });

  test('randomToken gives base64url text of the asked entropy, different every time', () => {
    const tokens = Array.from({ length: 200 }, () => secrets.randomToken(32));
    for (const token of tokens) {
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(token, 'base64url').length).toBe(32);
    }
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(secrets.randomToken(1)).toMatch(/^[A-Za-z0-9_-]{2}$/);
  });

  test('randomToken refuses a nonsensical size', () => {
    expect(() => secrets.randomToken(0)).toThrow(RangeError);
    expect(() => secrets.randomToken(2.5)).toThrow(RangeError);
  });

  test('property: equal is string equality, including different lengths and unicode', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(secrets.equal(a, b)).toBe(a === b);
        expect(secrets.equal(a, a)).toBe(true);
        expect(secrets.equal(a, `${a}x`)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
