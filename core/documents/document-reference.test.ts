import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { networkFileName, uploadFileName } from './document-reference.js';

/** The name a file keeps, by the regular expressions that once made it; they backtrack, so only small names go through them here. */
function safeNameByRegex(name: string): string {
  const cleaned = name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(-80);
  return cleaned || 'document';
}

describe('file names of documents', () => {
  test('keep letters, digits, dots, dashes and underscores; other runs become one dash; no dash or dot at either end', () => {
    expect(uploadFileName('p', 'd', 'Outside CCD (2023).xml')).toBe('p_d_Outside-CCD-2023-.xml');
    expect(uploadFileName('p', 'd', '..Résumé—final..')).toBe('p_d_Re-sume-final');
    expect(uploadFileName('p', 'd', '-.-')).toBe('p_d_document');
    expect(uploadFileName('p', 'd', undefined)).toBe('p_d_document');
    expect(networkFileName('p', 'n', 'a'.repeat(100)).endsWith(`_${'a'.repeat(80)}`)).toBe(true);
  });

  test('property: the scan gives what the regular expressions gave', () => {
    const unit = fc.oneof(fc.constantFrom('a', 'Z', '0', '.', '-', '_', ' ', '/', 'é', '\u0301', '李', '😀', '\ud800', 'ﬁ'), fc.string({ unit: 'binary', maxLength: 2 }));
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 100 }), (name) => {
        expect(uploadFileName('p', 'd', name)).toBe(`p_d_${safeNameByRegex(name)}`);
      }),
      { numRuns: 3_000 },
    );
  });
});
