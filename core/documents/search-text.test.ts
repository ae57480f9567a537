import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { patientResourcesArb } from '../../spec/arbitraries/fhir.js';
import { searchTextOf, searchTextOfCcda } from './search-text.js';

/**
 * The regular-expression extraction this module used before, as the reference the scanner must agree with
 * on well-formed documents. Its patterns backtrack (a run of `<` without `>` costs the square of its
 * length), so it only ever sees small generated documents here.
 */
function searchTextOfCcdaByRegex(xml: string): string {
  const decode = (text: string) =>
    text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, entity: string) => {
      if (entity[0] === '#') {
        const codePoint = entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10);
        return Number.isFinite(codePoint) && codePoint > 0 && codePoint <= 0x10ffff ? String.fromCodePoint(codePoint) : ' ';
      }
      return ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' } as Record<string, string>)[entity.toLowerCase()] ?? whole;
    });
  const withoutMarkup = xml
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<\?[\s\S]*?\?>/g, ' ')
    .replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, ' $1 ')
    .replace(/<!DOCTYPE[^>]*>/gi, ' ');
  const displayNames = Array.from(withoutMarkup.matchAll(/\sdisplayName\s*=\s*("([^"]*)"|'([^']*)')/g), (m) => m[2] ?? m[3] ?? '');
  const text = withoutMarkup.replace(/<[^>]*>/g, ' ');
  return [decode(text), ...displayNames.map(decode)].join(' ').replace(/\s+/g, ' ').trim();
}

/**
 * Well-formed XML of the shapes C-CDA documents take: a declaration, processing instructions, a doctype,
 * comments, elements with attributes (some `displayName`), text with entities, CDATA sections. Left out is
 * what the reference misreads: `>` inside attribute values, markup-like text (`<`, `&`, `displayName`)
 * inside CDATA sections.
 */
const wellFormedXml: fc.Arbitrary<string> = (() => {
  const name = fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9]{0,6}(:[a-zA-Z][a-zA-Z0-9]{0,4})?$/);
  const plain = fc.string({ unit: fc.constantFrom('a', 'b', 'Z', '0', '9', ' ', ' ', '\n', '\t', ',', '.', ';', ':', '-', '/', '(', 'é', '李', '\u00a0', '"', "'"), maxLength: 12 });
  const entity = fc.constantFrom('&amp;', '&lt;', '&gt;', '&quot;', '&apos;', '&nbsp;', '&#38;', '&#160;', '&#x26;', '&#X41;', '&AMP;', '&unknown;', '&#0;', '&#x110000;');
  const text = fc.array(fc.oneof({ weight: 3, arbitrary: plain }, { weight: 1, arbitrary: entity }), { maxLength: 4 }).map((parts) => parts.join(''));
  const attributeValue = fc.array(fc.oneof(plain.map((v) => v.replace(/["']/g, '')), entity), { maxLength: 3 }).map((parts) => parts.join(''));
  const quoted = fc.tuple(attributeValue, fc.boolean()).map(([value, single]) => (single ? `'${value}'` : `"${value}"`));
  const spaces = fc.constantFrom(' ', '  ', '\n  ', '\t');
  const attribute = fc
    .tuple(fc.oneof(name, fc.constant('displayName'), fc.constant('code')), fc.constantFrom('=', ' = ', '= '), quoted, spaces)
    .map(([n, eq, value, space]) => `${space}${n}${eq}${value}`);
  const comment = fc.string({ unit: fc.constantFrom('a', ' ', '<', '>', '&', '-', 'x', '"'), maxLength: 10 }).filter((c) => !c.includes('--') && !c.endsWith('-')).map((c) => `<!--${c}-->`);
  const pi = fc.tuple(name, fc.string({ unit: fc.constantFrom('a', ' ', '=', '"', '>', '<'), maxLength: 8 })).map(([target, data]) => `<?${target} ${data}?>`);
  const cdata = fc.string({ unit: fc.constantFrom('a', ' ', 'b', '>', ']', '"', '1'), maxLength: 10 }).filter((c) => !c.includes(']]>') && !c.endsWith(']') ).map((c) => `<![CDATA[${c}]]>`);
  const { element } = fc.letrec<{ element: string; node: string }>((tie) => ({
    element: fc
      .tuple(name, fc.array(attribute, { maxLength: 3 }), fc.array(tie('node'), { maxLength: 4 }), fc.boolean())
      .map(([tag, attributes, children, selfClosing]) =>
        selfClosing && children.length === 0 ? `<${tag}${attributes.join('')}/>` : `<${tag}${attributes.join('')}>${children.join('')}</${tag}>`,
      ),
    node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, text, text, comment, pi, cdata, tie('element')),
  }));
  const prolog = fc.tuple(
    fc.constantFrom('', '<?xml version="1.0" encoding="UTF-8"?>\n'),
    fc.constantFrom('', '<?xml-stylesheet type="text/xsl" href="CDA.xsl"?>\n'),
    fc.constantFrom('', '<!DOCTYPE ClinicalDocument>\n', '<!doctype html SYSTEM "about:legacy">'),
    fc.constantFrom('', '<!-- generated -->\n'),
  );
  return fc.tuple(prolog, element, fc.constantFrom('', '\n', '\n<!-- end -->\n')).map(([parts, root, tail]) => parts.join('') + root + tail);
})();

/**
 * Inputs on which a backtracking pattern over the document takes time in the square of its length (or
 * worse). At 200,000 characters that is minutes; a scan is milliseconds. The test timeout below is far
 * from either: it catches the shape of the cost, not a speed.
 */
const N = 200_000;
const HOSTILE_DOCUMENTS: Record<string, string> = {
  '`<` run': '<'.repeat(N),
  'unterminated comments': '<!--'.repeat(N / 4),
  'unterminated processing instructions': '<?'.repeat(N / 2),
  'unterminated CDATA sections': '<![CDATA['.repeat(N / 9),
  'unterminated doctypes': '<!DOCTYPE'.repeat(N / 9),
  'an unterminated tag with attributes': `<a${' b="c"'.repeat(N / 7)}`,
  'an unterminated attribute value': `<a b="${'x'.repeat(N)}`,
  'deep nesting': `${'<a>'.repeat(N / 7)}text${'</a>'.repeat(N / 7)}`,
  '`&` runs': '&'.repeat(N),
  'long entity-like runs': `${'&#x'.repeat(N / 6)}${'1'.repeat(N / 2)}`,
  'displayName without a value': ' displayName='.repeat(N / 13),
  'displayName with an unterminated value': `<a displayName="${'x'.repeat(N)}`,
  'whitespace runs': `a${' \t\n'.repeat(N / 3)}b`,
};
const GENEROUS = 20_000;

describe('searchTextOf', () => {
  test('keeps displays, text, names, notes, values with units and dates; leaves out machine data', () => {
    const text = searchTextOf({
      resourceType: 'Observation',
      id: '5f0c1a2e-0000-4000-8000-000000000001',
      meta: { profile: ['http://example.org/profile'] },
      identifier: [{ system: 'urn:oid:2.16.840.1.113883.19', value: 'MRN-99' }],
      extension: [{ url: 'https://medplum.com/x', valueString: '#result1' }],
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '2339-0', display: 'Glucose [Mass/volume] in Blood' }], text: 'Blood glucose' },
      subject: { reference: 'Patient/123', display: 'Jane Doe' },
      effectiveDateTime: '2012-08-06T10:30:00-05:00',
      valueQuantity: { value: 182, unit: 'mg/dL', system: 'http://unitsofmeasure.org', code: 'mg/dL' },
      note: [{ text: 'Fasting sample' }],
      performer: [{ reference: 'Practitioner/9' }],
    });
    for (const expected of ['Glucose [Mass/volume] in Blood', 'Blood glucose', 'Jane Doe', '2012-08-06T10:30:00-05:00', '182', 'mg/dL', 'Fasting sample']) {
      expect(text).toContain(expected);
    }
    for (const absent of ['5f0c1a2e', 'profile', 'MRN-99', '2.16.840', '#result1', 'final', '2339-0', 'loinc', 'Patient/123', 'Practitioner/9', 'unitsofmeasure']) {
      expect(text).not.toContain(absent);
    }
  });

  test('names, narrative and contained drugs are searchable', () => {
    expect(searchTextOf({ resourceType: 'Patient', id: 'p', name: [{ given: ['Isabella', 'Isa'], family: 'Jones', prefix: ['Ms'] }], birthDate: '1947-05-01' })).toBe(
      'Isabella Isa Jones Ms 1947-05-01',
    );
    expect(searchTextOf({ resourceType: 'Composition', id: 'c', title: 'Summary', section: [{ text: { status: 'generated', div: '<div><b>Asthma</b> &amp; cough</div>' } }] })).toBe(
      'Summary Asthma & cough',
    );
    const request = {
      resourceType: 'MedicationRequest',
      id: 'm',
      contained: [{ resourceType: 'Medication', id: 'med-1', code: { coding: [{ display: 'albuterol 0.09 MG/ACTUAT' }] } }],
      medicationReference: { reference: '#med-1' },
    };
    expect(searchTextOf(request)).toBe('albuterol 0.09 MG/ACTUAT');
  });

  test('never contains a resource id or a reference', () => {
    fc.assert(
      fc.property(patientResourcesArb(), (resources) => {
        for (const resource of resources) {
          const text = searchTextOf(resource);
          expect(text).not.toMatch(/[A-Za-z]+\/[a-z]+-\d+/);
          expect(text.split(' ')).not.toContain(resource.id);
        }
      }),
      { numRuns: 50 },
    );
  });
});

describe('searchTextOfCcda', () => {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet type="text/xsl" href="CDA.xsl"?>
<!-- a comment that is not text -->
<ClinicalDocument xmlns="urn:hl7-org:v3">
  <title>Community Health &amp; Hospitals: History &#38; Physical</title>
  <code code="34117-2" codeSystem="2.16.840.1.113883.6.1" displayName="History and physical note"/>
  <component><structuredBody><component><section>
    <text><table><tr><td>Metoprolol</td><td>25&#160;mg</td></tr></table><![CDATA[raw note]]></text>
  </section></component></structuredBody></component>
</ClinicalDocument>`;

  test('keeps element text and coded display names; drops tags, comments, declarations and codes', () => {
    const text = searchTextOfCcda(xml);
    expect(text).toContain('Community Health & Hospitals: History & Physical');
    expect(text).toContain('Metoprolol');
    expect(text).toContain('25 mg');
    expect(text).toContain('raw note');
    expect(text).toContain('History and physical note');
    for (const absent of ['<', '>', 'comment', 'xml-stylesheet', '34117-2', '2.16.840', 'urn:hl7-org']) expect(text).not.toContain(absent);
  });

  test('never throws, whatever the text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 500 }), (value) => {
        expect(typeof searchTextOfCcda(value)).toBe('string');
      }),
      { numRuns: 200 },
    );
  });

  test('property: on well-formed XML it gives what the regular expressions it replaced gave', () => {
    fc.assert(
      fc.property(wellFormedXml, (xml) => {
        expect(searchTextOfCcda(xml)).toBe(searchTextOfCcdaByRegex(xml));
      }),
      { numRuns: 2_000 },
    );
  });

  test('a display name may hold `>`; entities are decoded once; a CDATA section is text as written', () => {
    expect(searchTextOfCcda('<code displayName="BP &gt; 140 > 90"/>')).toBe('BP > 140 > 90');
    expect(searchTextOfCcda('<p>&amp;lt;</p>')).toBe('&lt;');
    expect(searchTextOfCcda('<p><![CDATA[a &amp; <b>]]></p>')).toBe('a &amp; <b>');
  });

  for (const [name, xml] of Object.entries(HOSTILE_DOCUMENTS)) {
    test(`hostile input takes time in proportion to its length: ${name} (${xml.length.toLocaleString('en-US')} characters)`, { timeout: GENEROUS }, () => {
      expect(typeof searchTextOfCcda(xml)).toBe('string');
      expect(typeof searchTextOfCcda(`${xml}<b>after</b>`)).toBe('string');
    });
  }
});

describe('searchTextOf narratives', () => {
  for (const [name, xml] of Object.entries(HOSTILE_DOCUMENTS)) {
    test(`a hostile narrative takes time in proportion to its length: ${name}`, { timeout: GENEROUS }, () => {
      expect(typeof searchTextOf({ resourceType: 'Composition', id: 'c', text: { status: 'generated', div: xml } })).toBe('string');
    });
  }
});
