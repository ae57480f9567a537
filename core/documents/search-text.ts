/**
 * The human text of a resource or a C-CDA document, flattened for the search index (Search
 * Patient Data: "resources containing all the words"; "C-CDA documents are included").
 *
 * Only what a person reads is kept: codings' display, text, names, titles, descriptions, notes, values
 * with their units, and dates. Machine parts are left out (ids, references, systems, codes, urls, meta,
 * identifiers, extensions), so a query never matches on an OID or a UUID.
 *
 * Documents and narratives are read by a scanner that looks at each character a bounded number of times,
 * never by a regular expression: patterns such as `<[^>]*>` retry from every `<` of a document that has no
 * `>`, so a 64 KB upload of `<` characters held the thread answering requests for seconds, and 128 KB for a
 * minute.
 */
import { isWhitespaceCode } from '../../contract/fields/whitespace.js';
import type { FhirResource } from '../ports/ccda.port.js';

/** Keys whose string value is human text, wherever they appear. */
const TEXT_KEYS = new Set([
  'display', 'text', 'title', 'description', 'name', 'family', 'given', 'prefix', 'suffix', 'alias',
  'comment', 'comments', 'conclusion', 'summary', 'unit', 'lotNumber', 'patientInstruction',
  'line', 'city', 'state', 'country', 'manufacturer',
]);

/**
 * Subtrees of machine data, never indexed. Machine strings elsewhere (id, reference, system, code, url,
 * status) are left out because only the keys above and values and dates are collected.
 */
const SKIPPED_KEYS = new Set(['meta', 'identifier', 'extension', 'modifierExtension', 'telecom']);

/** Value and date keys: `valueString`, `onsetDateTime`, `effectivePeriod`, `recordedDate`, `issued`, `birthDate`... */
const VALUE_OR_DATE_KEY = /^(value|effective|onset|abatement|occurrence|performed|recorded|authored|issued|date|birthDate|start|end)/;

function collect(value: unknown, key: string, out: string[]): void {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) collect(item, key, out);
    return;
  }
  if (typeof value === 'object') {
    for (const [childKey, child] of Object.entries(value as Record<string, unknown>)) {
      if (SKIPPED_KEYS.has(childKey)) continue;
      if (childKey === 'div' && typeof child === 'string') out.push(markupText(child, undefined));
      else collect(child, childKey, out);
    }
    return;
  }
  if (typeof value === 'string') {
    if (TEXT_KEYS.has(key) || VALUE_OR_DATE_KEY.test(key)) out.push(value);
  } else if (typeof value === 'number' || typeof value === 'boolean') {
    if (key === 'value' || VALUE_OR_DATE_KEY.test(key)) out.push(String(value));
  }
}

/** The parts joined by spaces, every run of whitespace (as `\s` reads it) made one space, trimmed. */
function squash(parts: readonly string[]): string {
  const joined = parts.join(' ');
  let squashed = '';
  let wordStart = -1;
  for (let i = 0; i <= joined.length; i++) {
    if (i === joined.length || isWhitespaceCode(joined.charCodeAt(i))) {
      if (wordStart >= 0) squashed += (squashed === '' ? '' : ' ') + joined.slice(wordStart, i);
      wordStart = -1;
    } else if (wordStart < 0) wordStart = i;
  }
  return squashed;
}

/**
 * The searchable text of one FHIR resource: human strings at any depth, in document order, whitespace
 * collapsed; an empty string when it has none. Contained resources (e.g. a drug) are included.
 */
export function searchTextOf(resource: FhirResource): string {
  const out: string[] = [];
  collect(resource, '', out);
  return squash(out);
}

const NAMED_ENTITIES: ReadonlyMap<string, string> = new Map([
  ['amp', '&'],
  ['lt', '<'],
  ['gt', '>'],
  ['quot', '"'],
  ['apos', "'"],
  ['nbsp', ' '],
]);

const AMPERSAND = 38;
const SEMICOLON = 59;
const HASH = 35;

function isAsciiLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

function isDecimalDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isHexDigit(c: number): boolean {
  return isDecimalDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

/** Where the `;` of the entity reference starting at `amp` is (`&name;`, `&#digits;`, `&#xhex;`), or -1. */
function entityEnd(text: string, amp: number): number {
  let i = amp + 1;
  if (text.charCodeAt(i) === HASH) {
    i++;
    const x = text.charCodeAt(i);
    const hex = x === 120 || x === 88;
    if (hex) i++;
    const digitsStart = i;
    while (i < text.length && (hex ? isHexDigit(text.charCodeAt(i)) : isDecimalDigit(text.charCodeAt(i)))) i++;
    return i > digitsStart && text.charCodeAt(i) === SEMICOLON ? i : -1;
  }
  while (i < text.length && isAsciiLetter(text.charCodeAt(i))) i++;
  return i > amp + 1 && text.charCodeAt(i) === SEMICOLON ? i : -1;
}

/** The text of the entity reference between `&` and `;`: a character, or itself when the name is unknown. */
function entityValue(reference: string): string {
  const body = reference.slice(1, -1);
  if (body.charCodeAt(0) === HASH) {
    const hex = body[1] === 'x' || body[1] === 'X';
    const codePoint = hex ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
    // NUL, surrogates and numbers beyond Unicode are no characters: a space stands for them.
    const valid = Number.isFinite(codePoint) && codePoint > 0 && codePoint <= 0x10ffff && !(codePoint >= 0xd800 && codePoint <= 0xdfff);
    return valid ? String.fromCodePoint(codePoint) : ' ';
  }
  return NAMED_ENTITIES.get(body.toLowerCase()) ?? reference;
}

/** Entity references replaced by their characters, in one pass (`&amp;lt;` is `&lt;`). */
function decodeEntities(text: string): string {
  let amp = text.indexOf('&');
  if (amp < 0) return text;
  let decoded = '';
  let copiedUpTo = 0;
  while (amp >= 0) {
    const end = entityEnd(text, amp);
    if (end < 0) {
      amp = text.indexOf('&', amp + 1);
      continue;
    }
    decoded += text.slice(copiedUpTo, amp) + entityValue(text.slice(amp, end + 1));
    copiedUpTo = end + 1;
    amp = text.indexOf('&', copiedUpTo);
  }
  return decoded + text.slice(copiedUpTo);
}

const GREATER_THAN = 62;
const EQUALS = 61;
const DOUBLE_QUOTE = 34;
const SINGLE_QUOTE = 39;
const DISPLAY_NAME = 'displayName';

/**
 * Skips the tag starting at `lt` and returns the index after its `>` (the text's length when it never
 * ends). A `>` inside a quoted attribute value does not end it. The value of a `displayName` attribute
 * goes to `displayNames`, entities decoded.
 */
function skipTag(xml: string, lt: number, displayNames: string[] | undefined): number {
  const n = xml.length;
  // The last run of characters that may name an attribute, and whether whitespace came before it.
  let nameStart = -1;
  let nameEnd = -1;
  let spaceBeforeName = false;
  let afterSpace = false;
  let i = lt + 1;
  while (i < n) {
    const c = xml.charCodeAt(i);
    if (c === GREATER_THAN) return i + 1;
    if (c === EQUALS) {
      let j = i + 1;
      while (j < n && isWhitespaceCode(xml.charCodeAt(j))) j++;
      const quote = xml.charCodeAt(j);
      if (quote === DOUBLE_QUOTE || quote === SINGLE_QUOTE) {
        const close = xml.indexOf(quote === DOUBLE_QUOTE ? '"' : "'", j + 1);
        if (close < 0) return n;
        const named = nameStart >= 0 && spaceBeforeName && nameEnd - nameStart === DISPLAY_NAME.length && xml.startsWith(DISPLAY_NAME, nameStart);
        if (named && displayNames) displayNames.push(decodeEntities(xml.slice(j + 1, close)));
        i = close + 1;
      } else i = j;
      nameStart = -1;
      afterSpace = false;
      continue;
    }
    if (isWhitespaceCode(c)) afterSpace = true;
    else {
      if (afterSpace || nameStart < 0) {
        nameStart = i;
        spaceBeforeName = afterSpace;
      }
      nameEnd = i + 1;
      afterSpace = false;
    }
    i++;
  }
  return n;
}

const COMMENT = '<!--';
const CDATA = '<![CDATA[';
const PROCESSING_INSTRUCTION = '<?';

/**
 * The text of XML (a document or an XHTML narrative) in one pass: markup (tags, comments, processing
 * instructions, declarations) becomes a space, entities in text are decoded, CDATA sections are text as
 * written. A construct that never ends runs to the end of the text. `displayNames`, when given, receives
 * the `displayName` attribute values in document order.
 */
function markupText(xml: string, displayNames: string[] | undefined): string {
  const parts: string[] = [];
  const n = xml.length;
  let i = 0;
  while (i < n) {
    const lt = xml.indexOf('<', i);
    if (lt < 0) {
      parts.push(decodeEntities(xml.slice(i)));
      break;
    }
    if (lt > i) parts.push(decodeEntities(xml.slice(i, lt)));
    // One space for a run of markup: a document of nothing but tags would otherwise hold a part per tag.
    if (parts[parts.length - 1] !== ' ') parts.push(' ');
    if (xml.startsWith(COMMENT, lt)) {
      const close = xml.indexOf('-->', lt + COMMENT.length);
      i = close < 0 ? n : close + 3;
    } else if (xml.startsWith(CDATA, lt)) {
      const close = xml.indexOf(']]>', lt + CDATA.length);
      if (close >= 0) parts.push(xml.slice(lt + CDATA.length, close), ' ');
      i = close < 0 ? n : close + 3;
    } else if (xml.startsWith(PROCESSING_INSTRUCTION, lt)) {
      const close = xml.indexOf('?>', lt + PROCESSING_INSTRUCTION.length);
      i = close < 0 ? n : close + 2;
    } else i = skipTag(xml, lt, displayNames);
  }
  return parts.join('');
}

/**
 * The human text of a C-CDA document: the text of every element (title, narrative tables, names,
 * addresses) plus the `displayName` of coded elements; tags, comments and processing instructions
 * removed, entities decoded, whitespace collapsed. Never fails on odd input.
 */
export function searchTextOfCcda(xml: string): string {
  const displayNames: string[] = [];
  const text = markupText(xml, displayNames);
  return squash([text, ...displayNames]);
}
