import fc from 'fast-check';

/**
 * Values an attacker or a careless client sends: control characters, lone surrogates, traversal, injection
 * probes, huge and empty strings, wrong types, deep nesting. Shared by the API fuzz suites.
 */

/** Any UTF-16 code unit, so lone surrogates come up as often as anything else. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit));

const PROBES = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0007',
  '\u001b[31m',
  '\u007f',
  '\ud800',
  'x\udc00',
  '\ufeff',
  '\u202eevil',
  '\u2028',
  'Ā',
  '😀',
  '../../../../etc/passwd',
  '..%2f..%2fetc',
  '%00',
  '%',
  '%zz',
  '/',
  '\\',
  "' OR '1'='1",
  '"; DROP TABLE patients; --',
  '<script>alert(1)</script>',
  '${jndi:ldap://x}',
  '{{7*7}}',
  '=HYPERLINK("http://evil.example","x")',
  'text/plain\r\nX-Injected: 1',
  'null',
  'true',
  'false',
  '-1',
  '0',
  '1e309',
  'NaN',
  '2024-02-30',
  '9999-99-99',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '__proto__',
  'constructor',
];

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...PROBES) },
  { weight: 3, arbitrary: fc.string({ unit: codeUnit, maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('a', '\u0000', '9', 'é'), fc.integer({ min: 1_000, max: 300_000 })).map(([unit, n]) => unit.repeat(n)) },
);

/** Any JSON value, strings hostile, nesting limited: what a body made of junk looks like. */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'name', 'id', 'x\u0000'), fc.string({ maxLength: 8 })), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** The text of a JSON value nested `depth` levels deep (written directly: JSON.stringify would need the stack). */
export function deepJsonText(depth: number, open: '[' | '{' = '{'): string {
  return open === '[' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/**
 * A path segment as a client would put it on the wire. A lone surrogate has no UTF-8 form: it goes out as
 * the three bytes a lenient encoder writes (WTF-8), which no strict decoder accepts.
 */
export function encodeSegment(value: string): string {
  let out = '';
  for (const char of value) {
    const unit = char.charCodeAt(0);
    if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
      out += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    } else {
      out += encodeURIComponent(char);
    }
  }
  return out;
}

/** A header value a client can send at all (fetch refuses CR, LF, NUL and characters past U+00FF). */
export function isSendableHeaderValue(value: string): boolean {
  return !/[\u0000\r\n]|[^\u0000-\u00ff]/.test(value) && value.trim() === value;
}
