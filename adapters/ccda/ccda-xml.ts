/**
 * A C-CDA document's XML read in one pass into the tree @medplum/ccda's `convertXmlToCcda` gives (the
 * `ClinicalDocument` element as fast-xml-parser builds it with the options that function uses), for the
 * plain XML that C-CDA documents are written in. The library's way takes three passes over the text (a
 * well-formedness check, an ordered tree, then its compression into this shape) and costs about two thirds
 * of a conversion; this reader checks well-formedness while it builds the final tree.
 *
 * It answers `undefined`, and the caller takes the library's way, for anything outside that plain XML: a
 * DOCTYPE, a CDATA section, a processing instruction inside the root, an entity other than the five XML
 * defines or a character reference, a name outside ASCII, an attribute without a quoted value, a comment
 * holding `--`, a closing tag that does not match, text outside the root, nesting deeper than
 * MAX_FAST_DEPTH, names the tree cannot hold as keys. So a document it accepts is well-formed XML, and the
 * tree it gives is the library's, key order included (a test compares the two on every document of the
 * corpus and on generated ones); on anything else the library decides, with its own error messages.
 *
 * The shape, as the library makes it: an element is an object of its children by name (a name seen twice,
 * or listed in REPEATING_PATHS, holds a list), then `#text` (the element's text pieces, each trimmed, joined
 * without a separator), then its attributes as `@_name`; an element with only text is that text, an empty
 * one is `''`. Text and attribute values keep their line breaks (CR LF and CR read as LF), and the five
 * entities and their usual character references are decoded as the library decodes them, in its order;
 * other character references stay as written.
 */

/**
 * The element paths @medplum/ccda's parser always reads as lists (its `isArray` rule: the dotted path of
 * an element ends with one of these). Kept equal to the library's own list by a test.
 */
export const REPEATING_PATHS: readonly string[] = [
  'ClinicalDocument.recordTarget', '.id', '.templateId', '.name', '.addr', '.telecom', '.streetAddressLine', '.author', '.effectiveTime',
  'name.given', 'name.suffix', 'name.prefix', 'patient.raceCode', 'patient.sdtc:raceCode', 'patient.ethnicGroupCode', 'patient.languageCommunication',
  'component.structuredBody.component', 'component.structuredBody.component.section', 'component.section', 'component.observation', 'component.act',
  'code.translation', 'value.translation', 'section.entry', 'entry.act', 'entry.organizer', 'entry.substanceAdministration', 'entry.observation',
  'entry.encounter', 'entry.procedure', 'encounter.performer', 'encounter.participant', 'encounter.entryRelationship', 'entryRelationship.observation',
  'entryRelationship.substanceAdministration', 'entryRelationship.act', 'organizer.component', 'substanceAdministration.consumable.manufacturedProduct',
  'substanceAdministration.entryRelationship', 'substanceAdministration.performer', 'act.entryRelationship', 'act.performer', 'observation.participant',
  'observation.entryRelationship', 'observation.referenceRange', 'consumable.manufacturedProduct', 'manufacturedProduct.manufacturedMaterial',
  'manufacturedProduct.manufacturerOrganization', 'manufacturedProduct.manufacturedLabeledDrug', 'manufacturedMaterial.code', 'manufacturedMaterial.lotNumberText',
];

/** Deeper than this the library's way is taken: real documents nest a few dozen levels, and past a few thousand the library fails in its own way. */
export const MAX_FAST_DEPTH = 256;

type Tree = Record<string, unknown>;

/**
 * Whether the library reads the element or attribute at `path` (last segment `name`) as a list. A path ends
 * with a dotted suffix only when its last segment is the suffix's last segment, so the suffixes are looked
 * up by that segment; a suffix without a dot could end inside a segment and is tried on every path.
 */
class RepeatRule {
  private readonly byLastSegment = new Map<string, string[]>();
  private readonly undotted: string[] = [];

  constructor(suffixes: readonly string[]) {
    for (const suffix of suffixes) {
      const dot = suffix.lastIndexOf('.');
      if (dot === -1) {
        this.undotted.push(suffix);
        continue;
      }
      const last = suffix.slice(dot + 1);
      const list = this.byLastSegment.get(last) ?? [];
      list.push(suffix);
      this.byLastSegment.set(last, list);
    }
  }

  repeats(name: string, path: string): boolean {
    const suffixes = this.byLastSegment.get(name);
    if (suffixes) for (const suffix of suffixes) if (path.endsWith(suffix)) return true;
    for (const suffix of this.undotted) if (path.endsWith(suffix)) return true;
    return false;
  }
}

const REPEATS = new RepeatRule(REPEATING_PATHS);

// The library's decoding, in its order: each pattern over the whole value, `&amp;` last, so `&amp;lt;` is `&lt;`.
const APOS = /&(apos|#39|#x27);/g;
const GT = /&(gt|#62|#x3E);/g;
const LT = /&(lt|#60|#x3C);/g;
const QUOT = /&(quot|#34|#x22);/g;
const AMP = /&(amp|#38|#x26);/g;

function decoded(value: string): string {
  if (value.indexOf('&') === -1) return value;
  return value.replace(APOS, "'").replace(GT, '>').replace(LT, '<').replace(QUOT, '"').replace(AMP, '&');
}

const GT_CODE = 62;
const SLASH = 47;
const EQUALS = 61;
const QUESTION = 63;
const BANG = 33;

const isSpace = (code: number) => code === 32 || code === 10 || code === 9 || code === 13;
const isNameStart = (code: number) => (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || code === 95 || code === 58;
const isNameChar = (code: number) => isNameStart(code) || (code >= 48 && code <= 57) || code === 45 || code === 46;

/** Names that would not be plain keys of the tree (the library renames or trips on them): its way decides. */
const AWKWARD_NAMES = new Set(['__proto__', 'hasOwnProperty']);

/** Where `&` may stand: one of the five entities, or a decimal or hexadecimal character reference. */
const REFERENCE = /^&(?:lt|gt|amp|apos|quot|#[0-9]+|#x[0-9a-fA-F]+);/;

/** Whether every `&` in `text` starts a reference the reader accepts. */
function referencesAreValid(text: string): boolean {
  for (let at = text.indexOf('&'); at !== -1; at = text.indexOf('&', at + 1)) {
    if (!REFERENCE.test(text.slice(at, at + 12))) return false;
  }
  return true;
}

interface Frame {
  name: string;
  path: string;
  children: Tree;
  keys: number;
  /** The element's text pieces so far, joined; undefined while there is none. */
  text: string | undefined;
  /** Attributes in document order, name then value, names with the `@_` prefix. */
  attributes: string[] | undefined;
}

/** Thrown inside the reader to hand the document to the library; never leaves this module. */
const NOT_PLAIN = Symbol('not plain XML');

/**
 * `tree`: the `ClinicalDocument` element of `input` as `convertXmlToCcda` gives it (undefined when the
 * root is another element, as the library gives); undefined when the document is outside the plain XML
 * this reader takes, for the library to read.
 */
export function readPlainCcdaXml(input: string): { tree: unknown } | undefined {
  try {
    return { tree: read(input.indexOf('\r') === -1 ? input : input.replace(/\r\n?/g, '\n')) };
  } catch (error) {
    if (error === NOT_PLAIN) return undefined;
    throw error;
  }
}

function read(xml: string): unknown {
  const length = xml.length;
  let at = xml.charCodeAt(0) === 0xfeff ? 1 : 0;
  const stack: Frame[] = [];
  let root: { name: string; value: unknown } | undefined;
  /** Text of the current element since its last piece ended (comments do not end a piece). */
  let pending = '';

  const notPlain = (): never => {
    throw NOT_PLAIN;
  };

  const readName = (): string => {
    const start = at;
    if (at >= length || !isNameStart(xml.charCodeAt(at))) notPlain();
    at++;
    while (at < length && isNameChar(xml.charCodeAt(at))) at++;
    const name = xml.slice(start, at);
    if (AWKWARD_NAMES.has(name)) notPlain();
    return name;
  };

  const skipSpace = () => {
    while (at < length && isSpace(xml.charCodeAt(at))) at++;
  };

  /** Ends the current text piece: trimmed, decoded, and kept when not empty. */
  const savePending = (frame: Frame) => {
    if (pending === '') return;
    const piece = pending.trim();
    pending = '';
    if (piece.length === 0) return;
    const text = decoded(piece);
    frame.text = frame.text === undefined ? text : frame.text + text;
  };

  const close = (frame: Frame) => {
    const children = frame.children;
    let value: unknown;
    if (frame.text !== undefined) children['#text'] = frame.text;
    if (frame.attributes) {
      const attributes = frame.attributes;
      for (let i = 0; i < attributes.length; i += 2) {
        const name = attributes[i]!;
        children[name] = REPEATS.repeats(name, `${frame.path}.${name}`) ? [attributes[i + 1]] : attributes[i + 1];
      }
      value = children;
    } else if (frame.keys === 0) value = frame.text ?? '';
    else value = children;
    const parent = stack[stack.length - 1];
    if (!parent) {
      root = { name: frame.name, value: REPEATS.repeats(frame.name, frame.path) ? [value] : value };
      return;
    }
    const siblings = parent.children;
    if (Object.prototype.hasOwnProperty.call(siblings, frame.name)) {
      const existing = siblings[frame.name];
      if (Array.isArray(existing)) existing.push(value);
      else siblings[frame.name] = [existing, value];
    } else {
      siblings[frame.name] = REPEATS.repeats(frame.name, frame.path) ? [value] : value;
      parent.keys++;
    }
  };

  while (at < length) {
    const lt = xml.indexOf('<', at);
    const frame = stack[stack.length - 1];
    const textEnd = lt === -1 ? length : lt;
    if (textEnd > at) {
      if (frame) {
        // The segment alone is searched: a search for `&` from here to the end of the document, once per
        // segment, made a document of many short ones cost the square of its length.
        const segment = xml.slice(at, textEnd);
        if (!referencesAreValid(segment)) notPlain();
        pending += segment;
      } else {
        // Outside the root only white space.
        for (let i = at; i < textEnd; i++) if (!isSpace(xml.charCodeAt(i))) notPlain();
      }
    }
    if (lt === -1) break;
    at = lt + 1;
    const next = xml.charCodeAt(at);
    if (next === BANG) {
      if (!xml.startsWith('--', at + 1)) notPlain();
      const end = xml.indexOf('-->', at + 3);
      if (end === -1 || xml.slice(at + 3, end).includes('--')) notPlain();
      at = end + 3;
      continue;
    }
    if (next === QUESTION) {
      // Processing instructions only before and after the root; the declaration only at the very start.
      if (frame) notPlain();
      at++;
      const name = readName();
      if (name.toLowerCase() === 'xml' && lt !== (xml.charCodeAt(0) === 0xfeff ? 1 : 0)) notPlain();
      const end = xml.indexOf('?>', at);
      if (end === -1 || /["']/.test(xml.slice(at, end))) {
        // A quoted value could hold `?>`; the library reads around quotes, which this reader leaves to it.
        if (end === -1 || !quotesBalanced(xml.slice(at, end))) notPlain();
      }
      at = end + 2;
      continue;
    }
    if (next === SLASH) {
      if (!frame) notPlain();
      at++;
      const name = readName();
      if (name !== frame!.name || xml.charCodeAt(at) !== GT_CODE) notPlain();
      at++;
      savePending(frame!);
      stack.pop();
      close(frame!);
      continue;
    }
    // An opening tag.
    if (!frame && root) notPlain();
    if (frame) savePending(frame);
    pending = '';
    const name = readName();
    const path = frame ? `${frame.path}.${name}` : name;
    let attributes: string[] | undefined;
    let seen: Set<string> | undefined;
    let selfClosing = false;
    for (;;) {
      const spaceStart = at;
      skipSpace();
      const code = xml.charCodeAt(at);
      if (code === GT_CODE) {
        at++;
        break;
      }
      if (code === SLASH) {
        if (xml.charCodeAt(at + 1) !== GT_CODE) notPlain();
        at += 2;
        selfClosing = true;
        break;
      }
      // Attributes are separated from the name and each other by white space.
      if (at === spaceStart) notPlain();
      const attribute = `@_${readName()}`;
      skipSpace();
      if (xml.charCodeAt(at) !== EQUALS) notPlain();
      at++;
      skipSpace();
      const quote = xml.charCodeAt(at);
      if (quote !== 34 && quote !== 39) notPlain();
      const end = xml.indexOf(quote === 34 ? '"' : "'", at + 1);
      if (end === -1) notPlain();
      const raw = xml.slice(at + 1, end);
      if (raw.indexOf('<') !== -1) notPlain();
      if (!referencesAreValid(raw)) notPlain();
      at = end + 1;
      attributes ??= [];
      if (attributes.length < 16) {
        for (let i = 0; i < attributes.length; i += 2) if (attributes[i] === attribute) notPlain();
      } else {
        // A hostile element with thousands of attributes is checked in time proportional to them.
        seen ??= new Set(attributes.filter((_, i) => i % 2 === 0));
        if (seen.has(attribute)) notPlain();
        seen.add(attribute);
      }
      attributes.push(attribute, decoded(raw.trim()));
    }
    if (stack.length >= MAX_FAST_DEPTH) notPlain();
    const element: Frame = { name, path, children: {}, keys: 0, text: undefined, attributes };
    if (selfClosing) close(element);
    else stack.push(element);
  }
  if (stack.length > 0 || !root) notPlain();
  return root!.name === 'ClinicalDocument' ? root!.value : undefined;
}

/** Whether quotes in a processing instruction pair up, so the first `?>` is its end as the library reads it. */
function quotesBalanced(text: string): boolean {
  let open = '';
  for (const char of text) {
    if (open) {
      if (char === open) open = '';
    } else if (char === '"' || char === "'") open = char;
  }
  return open === '';
}
