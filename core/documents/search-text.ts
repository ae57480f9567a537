/**
 * The human text of a resource or a C-CDA document, flattened for the search index (Search
 * Patient Data: "resources containing all the words"; "C-CDA documents are included").
 *
 * Only what a person reads is kept: codings' display, text, names, titles, descriptions, notes, values
 * with their units, and dates. Machine parts are left out (ids, references, systems, codes, urls, meta,
 * identifiers, extensions), so a query never matches on an OID or a UUID.
 */
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

function narrativeText(div: string): string {
  return decodeEntities(div.replace(/<[^>]*>/g, ' '));
}

function collect(value: unknown, key: string, out: string[]): void {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) collect(item, key, out);
    return;
  }
  if (typeof value === 'object') {
    for (const [childKey, child] of Object.entries(value as Record<string, unknown>)) {
      if (SKIPPED_KEYS.has(childKey)) continue;
      if (childKey === 'div' && typeof child === 'string') out.push(narrativeText(child));
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

function squash(parts: string[]): string {
  return parts.join(' ').replace(/\s+/g, ' ').trim();
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

const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, entity: string) => {
    if (entity[0] === '#') {
      const codePoint = entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10);
      return Number.isFinite(codePoint) && codePoint > 0 && codePoint <= 0x10ffff ? String.fromCodePoint(codePoint) : ' ';
    }
    return NAMED_ENTITIES[entity.toLowerCase()] ?? whole;
  });
}

/**
 * The human text of a C-CDA document: the text of every element (title, narrative tables, names,
 * addresses) plus the `displayName` of coded elements, tags, comments and processing instructions
 * removed, entities decoded, whitespace collapsed. A light regex pass: it never fails on odd input.
 */
export function searchTextOfCcda(xml: string): string {
  const withoutMarkup = xml
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<\?[\s\S]*?\?>/g, ' ')
    .replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, ' $1 ')
    .replace(/<!DOCTYPE[^>]*>/gi, ' ');
  const displayNames = Array.from(withoutMarkup.matchAll(/\sdisplayName\s*=\s*("([^"]*)"|'([^']*)')/g), (m) => m[2] ?? m[3] ?? '');
  const text = withoutMarkup.replace(/<[^>]*>/g, ' ');
  return squash([decodeEntities(text), ...displayNames.map(decodeEntities)]);
}
