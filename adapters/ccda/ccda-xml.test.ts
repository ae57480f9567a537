import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { convertXmlToCcda } from '@medplum/ccda';
import fc from 'fast-check';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, test } from 'vitest';
import { sandboxDocumentsDir } from '../../runtime/sandbox-documents.js';
import { loadCorpus } from '../../spec/support/ccda-corpus.js';
import { MAX_FAST_DEPTH, readPlainCcdaXml, REPEATING_PATHS } from './ccda-xml.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';

/** What the converter read before this reader: the library's tree, or that it refused the text. */
function libraryReading(xml: string): { valid: boolean; json?: string } {
  if (XMLValidator.validate(xml) !== true) return { valid: false };
  return { valid: true, json: JSON.stringify(convertXmlToCcda(xml)) };
}

/** The reader agrees with the library: a document it accepts is one the library accepts, read to the same tree, keys in the same order. */
function expectAgreement(xml: string): boolean {
  const plain = readPlainCcdaXml(xml);
  if (!plain) return false;
  const library = libraryReading(xml);
  expect(library.valid, 'a document the reader accepts is well-formed for the library too').toBe(true);
  expect(JSON.stringify(plain.tree)).toBe(library.json);
  return true;
}

describe('the one-pass C-CDA reader', () => {
  test("its list of repeating paths is the library's", () => {
    // The library keeps the list inside its bundle: read out of its text, so an upgrade that changes it fails here.
    const require = createRequire(import.meta.url);
    const bundle = readFileSync(path.join(path.dirname(require.resolve('@medplum/ccda')), '..', 'esm', 'index.mjs'), 'utf8');
    const literal = /=(\["ClinicalDocument\.recordTarget"[^\]]*\])/.exec(bundle);
    expect(literal, 'the list in @medplum/ccda').not.toBeNull();
    expect(REPEATING_PATHS).toEqual(JSON.parse(literal![1]!));
  });

  test('reads every document of the corpus and the sandbox as the library does, and nearly all of them itself', () => {
    const sandbox = readdirSync(sandboxDocumentsDir())
      .filter((name) => name.endsWith('.xml'))
      .map((name) => readFileSync(path.join(sandboxDocumentsDir(), name), 'utf8'));
    const documents = [...loadCorpus().map((document) => document.xml), ...sandbox];
    let read = 0;
    for (const xml of documents) if (expectAgreement(xml)) read++;
    // Those left to the library hold CDATA sections; were the reader to give up on plain documents, this falls.
    expect(read / documents.length).toBeGreaterThan(0.95);
  });

  test.each([
    ['a CDATA section', '<ClinicalDocument><text><![CDATA[a < b]]></text></ClinicalDocument>'],
    ['a DOCTYPE', '<!DOCTYPE ClinicalDocument><ClinicalDocument/>'],
    ['an entity XML does not define', '<ClinicalDocument><text>a&nbsp;b</text></ClinicalDocument>'],
    ['a bare ampersand', '<ClinicalDocument><text>a & b</text></ClinicalDocument>'],
    ['a processing instruction inside the root', '<ClinicalDocument><?pi x?></ClinicalDocument>'],
    ['a closing tag that does not match', '<ClinicalDocument><a></b></ClinicalDocument>'],
    ['a closing tag with white space', '<ClinicalDocument><a></a ></ClinicalDocument>'],
    ['two roots', '<ClinicalDocument/><ClinicalDocument/>'],
    ['text outside the root', 'x<ClinicalDocument/>'],
    ['an unclosed root', '<ClinicalDocument><a/>'],
    ['an attribute without a value', '<ClinicalDocument a/>'],
    ['an unquoted attribute', '<ClinicalDocument a=1/>'],
    ['a repeated attribute', '<ClinicalDocument a="1" a="2"/>'],
    ['a repeated attribute among many', `<ClinicalDocument ${Array.from({ length: 5_000 }, (_, i) => `a${i}="${i}"`).join(' ')} a42="again"/>`],
    ['attributes not separated by space', '<ClinicalDocument a="1"b="2"/>'],
    ['< in an attribute', '<ClinicalDocument a="<"/>'],
    ['a comment holding --', '<ClinicalDocument><!-- a -- b --></ClinicalDocument>'],
    ['a declaration after the start', ' <?xml version="1.0"?><ClinicalDocument/>'],
    ['a name outside ASCII', '<ClinicalDocument><café/></ClinicalDocument>'],
    ['a name the tree cannot hold', '<ClinicalDocument><__proto__/></ClinicalDocument>'],
    ['nesting deeper than the bound', `<ClinicalDocument>${'<a>'.repeat(MAX_FAST_DEPTH)}${'</a>'.repeat(MAX_FAST_DEPTH)}</ClinicalDocument>`],
    ['no root', '<?xml version="1.0"?>'],
  ])('leaves %s to the library', (_, xml) => {
    expect(readPlainCcdaXml(xml)).toBeUndefined();
  });

  test.each([
    ['text split by a comment is one piece', '<ClinicalDocument><t>a <!-- x --> b</t></ClinicalDocument>', { t: 'a  b' }],
    ['text split by an element is trimmed pieces, joined', '<ClinicalDocument><t> a <b/> c </t></ClinicalDocument>', { t: { b: '', '#text': 'ac' } }],
    ['entities decoded once, in order', '<ClinicalDocument><t>&amp;lt; &#60; &#x3C; &#x3c; &#160;</t></ClinicalDocument>', { t: '&lt; < < &#x3c; &#160;' }],
    ['CR LF read as LF, values trimmed', '<ClinicalDocument a=" x\r\ny "><t>\r\n1\r2\r\n</t></ClinicalDocument>', { t: '1\n2', '@_a': 'x\ny' }],
    ['many attributes, in document order', `<ClinicalDocument ${Array.from({ length: 40 }, (_, i) => `a${i}="${i}"`).join(' ')}/>`, Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`@_a${i}`, String(i)]))],
    ['repeating paths as lists, once or twice', '<ClinicalDocument><id root="1"/><code/><code/></ClinicalDocument>', { id: [{ '@_root': '1' }], code: ['', ''] }],
    ['the root elsewhere is no ClinicalDocument', '<Other/>', undefined],
  ])('%s, as the library reads it', (_, xml, tree) => {
    expect(readPlainCcdaXml(xml)).toEqual({ tree });
    expectAgreement(xml);
  });

  const names = ['ClinicalDocument', 'id', 'templateId', 'name', 'given', 'section', 'entry', 'component', 'structuredBody', 'observation', 'code', 'translation', 'value', 'sdtc:raceCode', 'patient', 'text', 'a_b', 'x.y-z'];
  const attributeNames = ['root', 'extension', 'code', 'value', 'xsi:type', 'nullFlavor', 'id', 'xmlns'];
  const pieces = ['a', 'B 1', ' ', '\n', '\t', '\r\n', '\r', '>', ']]', 'é', '\u00a0', '\u2028', '&amp;', '&lt;', '&gt;', '&quot;', '&apos;', '&#60;', '&#x3C;', '&#x3c;', '&#160;', '&#39;', '&amp;lt;', '&#38;'];
  const text = fc.array(fc.constantFrom(...pieces), { maxLength: 6 }).map((parts) => parts.join(''));
  const attributeValue = fc.tuple(fc.constantFrom('"', "'"), text).map(([quote, value]) => quote + value.replace(quote === '"' ? /"/g : /'/g, quote === '"' ? '&quot;' : '&apos;') + quote);
  const attributes = fc
    .uniqueArray(fc.tuple(fc.constantFrom(...attributeNames), attributeValue, fc.constantFrom(' ', '\n', '  ', ' \t')), { selector: ([name]) => name, maxLength: 3 })
    .map((list) => list.map(([name, value, space]) => `${space}${name}${space.length > 1 ? ' = ' : '='}${value}`).join(''));
  const { element } = fc.letrec<{ element: string; content: string }>((tie) => ({
    element: fc.tuple(fc.constantFrom(...names), attributes, fc.option(tie('content'), { nil: undefined, depthSize: 'small' })).map(([name, attrs, content]) =>
      content === undefined ? `<${name}${attrs}/>` : `<${name}${attrs}>${content}</${name}>`,
    ),
    content: fc
      .array(fc.oneof({ depthSize: 'small' }, { arbitrary: tie('element'), weight: 3 }, { arbitrary: text, weight: 2 }, { arbitrary: text.map((t) => `<!--${t.replace(/-/g, '')}-->`), weight: 1 }), {
        maxLength: 5,
      })
      .map((items) => items.join('')),
  }));
  const document = fc
    .tuple(fc.boolean(), attributes, element, fc.constantFrom('', '\n', '<!-- c -->\n'))
    .map(([declaration, attrs, body, tail]) => `${declaration ? '<?xml version="1.0" encoding="UTF-8"?>\n<?xml-stylesheet type="text/xsl" href="CDA.xsl"?>\n' : ''}<ClinicalDocument${attrs}>${body}</ClinicalDocument>${tail}`);

  test('reads generated plain documents as the library does', () => {
    fc.assert(
      fc.property(document, (xml) => {
        expect(expectAgreement(xml), 'a plain document is read, not left to the library').toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  test('accepts a damaged document only when the library accepts it, and then reads it as the library does', () => {
    const damage = fc.constantFrom('<', '>', '&', '"', "'", '/', '--', '<!', '<?x?>', '</a>', '<![CDATA[x]]>', '=', ' ', '&#;', '&x;');
    fc.assert(
      fc.property(document, fc.nat(), damage, fc.nat(3), (xml, at, inserted, removed) => {
        const where = at % (xml.length + 1);
        expectAgreement(xml.slice(0, where) + inserted + xml.slice(where + removed));
      }),
      { numRuns: 600 },
    );
  });

  // Shaped to make a cost grow with the square of the length: at 8 MB that is minutes, a scan milliseconds.
  // The timeout is far from both: it catches the square, not a slow machine.
  test('reads hostile documents in time proportional to their length', { timeout: 20_000 }, () => {
    const MB = 1024 * 1024;
    const hostile = {
      'text between comments': `<ClinicalDocument>${'a<!---->'.repeat(MB)}</ClinicalDocument>`,
      'text between elements': `<ClinicalDocument>${'a<b/>'.repeat(1.6 * MB)}</ClinicalDocument>`,
      references: `<ClinicalDocument>${'&amp;'.repeat(1.6 * MB)}</ClinicalDocument>`,
      attributes: `<ClinicalDocument ${Array.from({ length: 200_000 }, (_, i) => `a${i}="&lt;"`).join(' ')}/>`,
      'an unclosed comment': `<ClinicalDocument><!--${'-'.repeat(8 * MB)}`,
      'a `<` run': '<'.repeat(8 * MB),
    };
    for (const [shape, xml] of Object.entries(hostile)) expect(() => readPlainCcdaXml(xml), shape).not.toThrow();
  });

  test('a document the reader leaves to the library converts as before, and bad XML is refused with the line it breaks on', async () => {
    const converter = new MedplumCcdaConverter();
    const [sandbox] = readdirSync(sandboxDocumentsDir()).filter((name) => name.endsWith('.xml'));
    const xml = readFileSync(path.join(sandboxDocumentsDir(), sandbox!), 'utf8');
    // A CDATA section in a narrative's text: the library reads this one.
    const withCdata = xml.replace('</title>', '<![CDATA[ & more]]></title>');
    expect(readPlainCcdaXml(withCdata)).toBeUndefined();
    expect((await converter.convert(withCdata)).entry?.length).toBeGreaterThan(0);
    await expect(converter.convert('<ClinicalDocument>\n<a>\n</b></ClinicalDocument>')).rejects.toMatchObject({ code: 'CCDA_INVALID', message: expect.stringContaining('line 3') });
  });
});
