/**
 * How much of a C-CDA document's coded clinical content lands in its FHIR conversion, measured against the
 * XML itself: the document is parsed here with fast-xml-parser (not with the converter's parser or any of
 * its repairs), every entry of the templates below is listed wherever it sits, and each must be matched by
 * a resource of the type its template and mood call for that carries the entry's id as an identifier.
 *
 * Identifiers follow FHIR's rules for HL7 v3 ids: `root` + `extension` is `{system: urn:oid:<root> (or
 * urn:uuid:<root>), value: <extension>}` (a few well-known roots have a URI of their own); a `root` alone is `{system:
 * urn:ietf:rfc:3986, value: urn:uuid:<root> | urn:oid:<root>}`. Each resource matches at most one entry,
 * except a FamilyMemberHistory, which holds all of one relative's observations.
 *
 * A resource carrying the entry's id lands it only if it also says what the entry says about whether the
 * thing happened: the polarity rules below read the statement's `negationInd` and `statusCode` in the XML
 * and check the resource's status, verification status or `doNotPerform`.
 */
import { XMLParser } from 'fast-xml-parser';

const ENTRY = '2.16.840.1.113883.10.20.22.4.';

/** The coded entry templates counted, by the last part of their templateId. */
export const CODED_ENTRY_TEMPLATES: Record<string, string> = {
  '4': 'problem observation',
  '16': 'medication activity',
  '7': 'allergy observation',
  '52': 'immunization activity',
  '2': 'result observation',
  '27': 'vital sign observation',
  '12': 'procedure activity act',
  '13': 'procedure activity observation',
  '14': 'procedure activity procedure',
  '49': 'encounter activity',
  '38': 'social history observation',
  '78': 'smoking status observation',
  '85': 'tobacco use observation',
  '46': 'family history observation',
};

/** The resource type an entry must become; a medication's or a procedure's depends on its mood. */
function expectedType(template: string, mood: string | undefined): string {
  const event = mood === undefined || mood === 'EVN';
  switch (template) {
    case '4':
      return 'Condition';
    case '16':
      return event ? 'MedicationStatement' : 'MedicationRequest';
    case '7':
      return 'AllergyIntolerance';
    case '52':
      return 'Immunization';
    case '12':
    case '13':
    case '14':
      return event ? 'Procedure' : 'ServiceRequest';
    case '49':
      return 'Encounter';
    case '46':
      return 'FamilyMemberHistory';
    default:
      return 'Observation';
  }
}

/** Roots whose identifiers FHIR names by a URI rather than by `urn:oid:`. */
const KNOWN_ROOTS: Record<string, string> = {
  '2.16.840.1.113883.4.6': 'http://hl7.org/fhir/sid/us-npi',
  '2.16.840.1.113883.4.1': 'http://hl7.org/fhir/sid/us-ssn',
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface CodedEntry {
  /** Last part of the templateId (`4` for a Problem Observation). */
  template: string;
  expectedType: string;
  /** The entry's ids as FHIR identifiers, `system|value`; empty when it has none usable. */
  identifiers: string[];
  /** 1-based line of the element, for messages. */
  line: number;
  /** The statement says the act did not happen, or the finding is absent (`negationInd="true"`). */
  negated: boolean;
  /** The statement was recorded in error (`statusCode` `nullified`). */
  nullified: boolean;
  /**
   * An allergy observation about no particular substance: its playing entity's code absent, a nullFlavor, or
   * a SNOMED CT code for substances in general (see GENERIC_SUBSTANCE_CODES).
   */
  noSubstance: boolean;
  /** The entry's own codes (a problem's or a finding's value, a drug's or a vaccine's code, an act's code), for entries without an id. */
  codes: string[];
  /**
   * Why the entry, read on its own, asserts nothing a clinical resource could say: the statement itself is
   * null-flavored ("no information"), a negated finding with no FHIR R4 form, a negated problem that names
   * no problem, an immunization with no coded vaccine, an observation that does not say what it observed. Undefined for an entry that asserts something.
   */
  placeholder?: string;
}

type Resource = { resourceType: string; id?: string } & Record<string, unknown>;

function codesOf(concept: unknown): string[] {
  const codings = (concept as { coding?: { code?: unknown }[] } | undefined)?.coding;
  return Array.isArray(codings) ? codings.flatMap((coding) => (typeof coding.code === 'string' ? [coding.code] : [])) : [];
}

const NEGATED_STATUS = new Set(['not-done', 'not-taken', 'entered-in-error']);

function enteredInError(resource: Resource): boolean {
  return resource.status === 'entered-in-error' || codesOf(resource.verificationStatus).includes('entered-in-error');
}

/** Problem values that name no particular problem (SNOMED CT problem, disease, clinical finding; LOINC problem, condition). */
export const GENERIC_PROBLEM_CODES = new Set(['55607006', '64572001', '404684003', '75326-9', '75323-6']);
/** SNOMED CT "no current problems or disability". */
const NO_CURRENT_PROBLEMS = '160245001';

/** SNOMED CT codes for "no known allergy" and its drug, environmental and food variants. */
export const NO_KNOWN_ALLERGY_CODES = new Set(['716186003', '409137002', '428607008', '429625007']);

/**
 * What an entry's polarity requires of the resource it lands as. Exactly one rule applies to an entry (or
 * none): `nullified` first, then the negation rule of its resource type, else `affirmed`. A negated entry
 * that becomes an Observation, an Encounter or a FamilyMemberHistory has no rule: R4 gives those no
 * element that says "not" (a negated finding would need its value rewritten), so it lands on its id alone.
 */
export interface PolarityRule {
  name: string;
  /** What the resource must say, for messages. */
  requires: string;
  applies(entry: CodedEntry): boolean;
  holds(resource: Resource, entry: CodedEntry): boolean;
}

const negatedAs = (type: string) => (entry: CodedEntry) => entry.negated && !entry.nullified && entry.expectedType === type;

export const POLARITY_RULES: readonly PolarityRule[] = [
  {
    name: 'nullified-entered-in-error',
    requires: 'status (or verificationStatus) entered-in-error',
    applies: (entry) => entry.nullified,
    holds: enteredInError,
  },
  {
    // "Does not have diabetes" is a refuted diabetes; a negated problem that names problems in general
    // ("no known problems") is the SNOMED CT finding "no current problems", not refuted.
    name: 'negated-condition-refuted',
    requires: 'verificationStatus refuted, or (a generic problem) the no-current-problems code not refuted',
    applies: negatedAs('Condition'),
    holds: (resource, entry) => {
      const refuted = codesOf(resource.verificationStatus).includes('refuted');
      const generic = entry.codes.length > 0 && entry.codes.every((code) => GENERIC_PROBLEM_CODES.has(code));
      return generic ? !refuted && codesOf(resource.code).includes(NO_CURRENT_PROBLEMS) : refuted;
    },
  },
  {
    // "Not allergic to peanuts" is a refuted allergy to peanuts; "no known allergies" (no substance) is
    // the no-known-allergy code, confirmed: refuting that code would say the patient has allergies.
    name: 'negated-allergy-refuted-or-no-known-allergy',
    requires: 'verificationStatus refuted, or (no substance) a no-known-allergy code not refuted',
    applies: negatedAs('AllergyIntolerance'),
    holds: (resource, entry) => {
      const refuted = codesOf(resource.verificationStatus).includes('refuted');
      const noKnown = codesOf(resource.code).some((code) => NO_KNOWN_ALLERGY_CODES.has(code));
      return refuted ? !noKnown : entry.noSubstance && noKnown;
    },
  },
  {
    name: 'negated-procedure-not-done',
    requires: 'status not-done',
    applies: negatedAs('Procedure'),
    holds: (resource) => resource.status === 'not-done',
  },
  {
    name: 'negated-immunization-not-done',
    requires: 'status not-done',
    applies: negatedAs('Immunization'),
    holds: (resource) => resource.status === 'not-done',
  },
  {
    name: 'negated-medication-statement-not-taken',
    requires: 'status not-taken',
    applies: negatedAs('MedicationStatement'),
    holds: (resource) => resource.status === 'not-taken',
  },
  {
    name: 'negated-request-do-not-perform',
    requires: 'doNotPerform true',
    applies: (entry) => negatedAs('MedicationRequest')(entry) || negatedAs('ServiceRequest')(entry),
    holds: (resource) => resource.doNotPerform === true,
  },
  {
    name: 'affirmed-not-negated',
    requires: 'no refuted, not-done, not-taken, entered-in-error or doNotPerform',
    applies: (entry) => !entry.negated && !entry.nullified,
    holds: (resource) =>
      !NEGATED_STATUS.has(String(resource.status)) && resource.doNotPerform !== true && !codesOf(resource.verificationStatus).some((code) => code === 'refuted' || code === 'entered-in-error'),
  },
];

/** The rule the entry's resource must satisfy, if any. */
export function polarityRuleOf(entry: CodedEntry): PolarityRule | undefined {
  return POLARITY_RULES.find((rule) => rule.applies(entry));
}

type Node = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  removeNSPrefix: true,
  isArray: (_name, _path, _leaf, isAttribute) => !isAttribute,
  // Line numbers make failures readable; the parser records a start index per element.
  captureMetaData: true,
});

function identifiersOf(node: Node): string[] {
  return ((node.id as Node[] | undefined) ?? []).flatMap((id) => {
    const root = typeof id['@_root'] === 'string' ? id['@_root'].trim() : '';
    const extension = typeof id['@_extension'] === 'string' ? id['@_extension'].trim() : '';
    if (!root || id['@_nullFlavor'] !== undefined) return [];
    if (extension) return [`${KNOWN_ROOTS[root] ?? (UUID.test(root) ? `urn:uuid:${root.toLowerCase()}` : `urn:oid:${root}`)}|${extension}`];
    return [`urn:ietf:rfc:3986|${UUID.test(root) ? `urn:uuid:${root.toLowerCase()}` : `urn:oid:${root}`}`];
  });
}

/**
 * "Substance" and "drug or medicament": documents negate an allergy to these to say "no known (drug)
 * allergies", as HL7's own CCD example does.
 */
export const GENERIC_SUBSTANCE_CODES = new Set(['105590001', '410942007']);

/** Whether an allergy observation names its substance: participant/participantRole/playingEntity/code with a specific code. */
function substanceCoded(observation: Node): boolean {
  return ((observation.participant as Node[] | undefined) ?? []).some((participant) =>
    ((participant.participantRole as Node[] | undefined) ?? []).some((role) =>
      ((role.playingEntity as Node[] | undefined) ?? []).some((entity) =>
        ((entity.code as Node[] | undefined) ?? []).some(
          (code) => typeof code['@_code'] === 'string' && code['@_nullFlavor'] === undefined && !GENERIC_SUBSTANCE_CODES.has(code['@_code']),
        ),
      ),
    ),
  );
}

const nodes = (value: unknown): Node[] => (Array.isArray(value) ? (value as Node[]) : []);
const codeValues = (concepts: Node[]): string[] =>
  concepts.flatMap((concept) => [concept, ...nodes(concept.translation)]).flatMap((c) => (typeof c['@_code'] === 'string' && c['@_nullFlavor'] === undefined ? [c['@_code']] : []));

/** The drug or vaccine codes of a substance administration: consumable/manufacturedProduct/manufacturedMaterial/code. */
function materialCodes(node: Node): string[] {
  return codeValues(nodes(node.consumable).flatMap((c) => nodes(c.manufacturedProduct)).flatMap((p) => nodes(p.manufacturedMaterial)).flatMap((m) => nodes(m.code)));
}

function entryCodes(template: string, node: Node): string[] {
  switch (template) {
    case '4':
    case '46':
      return codeValues(nodes(node.value));
    case '7': {
      const substances = nodes(node.participant).flatMap((p) => nodes(p.participantRole)).flatMap((r) => nodes(r.playingEntity)).flatMap((e) => nodes(e.code));
      return [...codeValues(substances), ...codeValues(nodes(node.value))];
    }
    case '16':
    case '52':
      return materialCodes(node);
    default:
      return codeValues(nodes(node.code));
  }
}

/** The text of each narrative element by its ID (`<content ID="x">No information</content>`), built on first use. */
function narrativeOf(tree: unknown): (id: string) => string | undefined {
  let texts: Map<string, string> | undefined;
  const textOf = (value: unknown): string =>
    typeof value === 'string' || typeof value === 'number'
      ? String(value)
      : Array.isArray(value)
        ? value.map(textOf).join(' ')
        : typeof value === 'object' && value !== null
          ? Object.entries(value).filter(([key]) => !key.startsWith('@_')).map(([, child]) => textOf(child)).join(' ')
          : '';
  return (id) => {
    if (!texts) {
      texts = new Map();
      const stack: unknown[] = [tree];
      while (stack.length > 0) {
        const value = stack.pop();
        if (Array.isArray(value)) stack.push(...value);
        else if (typeof value === 'object' && value !== null) {
          const node = value as Node;
          if (typeof node['@_ID'] === 'string') texts.set(node['@_ID'], textOf(node).trim());
          for (const [key, child] of Object.entries(node)) if (!key.startsWith('@_')) stack.push(child);
        }
      }
    }
    return texts.get(id);
  };
}

/** The pregnancy observation, whose negation has a FHIR form ("not pregnant"). */
const PREGNANCY = '2.16.840.1.113883.10.20.15.3.8';

function placeholderOf(template: string, node: Node, negated: boolean, narrative: (id: string) => string | undefined): string | undefined {
  if (node['@_nullFlavor'] !== undefined) return `the statement is null-flavored (${String(node['@_nullFlavor'])})`;
  const type = expectedType(template, typeof node['@_moodCode'] === 'string' ? node['@_moodCode'] : undefined);
  const pregnancy = nodes(node.templateId).some((t) => t['@_root'] === PREGNANCY) || codeValues(nodes(node.value)).includes('77386006');
  if (negated && type === 'Observation' && !pregnancy) return 'a negated finding (no FHIR R4 form)';
  if (negated && template === '4' && codeValues(nodes(node.value)).length === 0) return 'a negated problem naming no problem';
  if (template === '52' && materialCodes(node).length === 0) return 'an immunization without a coded vaccine';
  // What a finding, problem, drug or procedure is, in words only: none, or words that say there is none
  // ("No vital sign data is applicable"), inline or in the narrative the original text points to.
  const words = (concepts: Node[]) =>
    concepts
      .flatMap((c) => (Array.isArray(c.originalText) ? (c.originalText as unknown[]) : []))
      .map((o) => {
        if (typeof o === 'string') return o;
        const reference = nodes((o as Node).reference)[0]?.['@_value'];
        return typeof reference === 'string' ? (narrative(reference.replace(/^#/, '')) ?? 'named in the narrative') : (o as Node)['#text'];
      })
      .find((t): t is string => typeof t === 'string' && t.trim() !== '');
  const denies = (text: string | undefined) => text !== undefined && /^\s*(no|none|not|nil|n\/a)\b/i.test(text);
  const code = nodes(node.code)[0];
  const named = code !== undefined && (codeValues([code]).length > 0 || nodes(code.originalText).length > 0 || typeof code.originalText === 'string');
  if (type === 'Observation' && (!named || (codeValues([code!]).length === 0 && denies(words([code!]))))) return 'an observation without a code';
  if (template === '4' && codeValues(nodes(node.value)).length === 0 && (words(nodes(node.value)) === undefined || denies(words(nodes(node.value))))) return 'a problem observation naming no problem';
  if (template === '16' && materialCodes(node).length === 0) {
    const material = nodes(node.consumable).flatMap((c) => nodes(c.manufacturedProduct)).flatMap((p) => nodes(p.manufacturedMaterial));
    const name = material.flatMap((m) => (Array.isArray(m.name) ? (m.name as unknown[]) : [])).map((n) => (typeof n === 'string' ? n : (n as Node)['#text'])).find((t): t is string => typeof t === 'string');
    if (denies(words(material.flatMap((m) => nodes(m.code))) ?? name)) return 'a medication naming no drug';
  }
  if ((template === '12' || template === '14') && codeValues(nodes(node.code)).length === 0 && (words(nodes(node.code)) === undefined || denies(words(nodes(node.code))))) return 'a procedure naming none';
  return undefined;
}

/** Every coded entry of the document, in document order, nested ones included. */
export function codedEntriesOf(document: string): CodedEntry[] {
  // The parser's start indexes count a CRLF as one character; on LF-only text they are plain offsets.
  const xml = document.replace(/\r\n?/g, '\n');
  const lineStarts = [0];
  for (let i = xml.indexOf('\n'); i >= 0; i = xml.indexOf('\n', i + 1)) lineStarts.push(i + 1);
  const lineOf = (index: number) => {
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (lineStarts[middle]! <= index) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
  const metadata = XMLParser.getMetaDataSymbol() as unknown as symbol;
  const found: CodedEntry[] = [];
  const visit = (value: unknown) => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const node = value as Node;
    const template = ((node.templateId as Node[] | undefined) ?? [])
      .map((templateId) => String(templateId['@_root'] ?? ''))
      .filter((root) => root.startsWith(ENTRY))
      .map((root) => root.slice(ENTRY.length))
      .find((suffix) => CODED_ENTRY_TEMPLATES[suffix] !== undefined);
    if (template !== undefined) {
      const mood = typeof node['@_moodCode'] === 'string' ? node['@_moodCode'] : undefined;
      const start = (node as Record<symbol, { startIndex?: number } | undefined>)[metadata]?.startIndex ?? 0;
      const status = (node.statusCode as Node[] | undefined)?.[0]?.['@_code'];
      const negated = String(node['@_negationInd']).trim().toLowerCase() === 'true';
      const placeholder = placeholderOf(template, node, negated, narrative);
      found.push({
        codes: entryCodes(template, node),
        ...(placeholder ? { placeholder } : {}),
        template,
        expectedType: expectedType(template, mood),
        identifiers: identifiersOf(node),
        line: lineOf(start),
        negated,
        nullified: status === 'nullified',
        noSubstance: template === '7' && !substanceCoded(node),
      });
    }
    for (const [key, child] of Object.entries(node)) if (!key.startsWith('@_')) visit(child);
  };
  const tree = parser.parse(xml);
  const narrative = narrativeOf(tree);
  visit(tree);
  return found;
}

function resourceIdentifiers(resource: Resource): Set<string> {
  const list = Array.isArray(resource.identifier) ? (resource.identifier as { system?: unknown; value?: unknown }[]) : [];
  return new Set(list.filter((id) => typeof id.system === 'string' && typeof id.value === 'string').map((id) => `${String(id.system)}|${String(id.value)}`));
}

/** Every code a resource states for what it is about: its code, vaccine, drug (inline or contained), value, type, relatives' conditions. */
function resourceCodes(resource: Resource): Set<string> {
  const concepts: unknown[] = [resource.code, resource.vaccineCode, resource.medicationCodeableConcept, resource.valueCodeableConcept];
  for (const key of ['type', 'contained', 'condition']) {
    for (const item of Array.isArray(resource[key]) ? (resource[key] as Record<string, unknown>[]) : []) concepts.push(key === 'type' ? item : item.code);
  }
  return new Set(concepts.flatMap(codesOf));
}

export interface CoverageResult {
  entries: number;
  landed: number;
  /** Entries without a match, with the type they should have become. */
  missing: (CodedEntry & { reason: string })[];
  /** Per template: [landed, entries]. */
  byTemplate: Record<string, [number, number]>;
  /** Per polarity rule: [held, applied] over the entries a resource of their type carries the id of. */
  byRule: Record<string, [number, number]>;
}

/** The resource's statements about polarity, for messages: `status=completed verificationStatus=confirmed`. */
function polarityOf(resource: Resource): string {
  const parts = [`status=${String(resource.status ?? '-')}`];
  if (resource.verificationStatus !== undefined) parts.push(`verificationStatus=${codesOf(resource.verificationStatus).join(',') || '-'}`);
  if (resource.doNotPerform !== undefined) parts.push(`doNotPerform=${String(resource.doNotPerform)}`);
  if (resource.resourceType === 'AllergyIntolerance') parts.push(`code=${codesOf(resource.code).join(',') || '-'}`);
  return parts.join(' ');
}

/**
 * Matches each coded entry of `xml` to a distinct resource of its type carrying its id and satisfying the
 * entry's polarity rule.
 */
export function coverageOf(xml: string, resources: readonly Resource[]): CoverageResult {
  const entries = codedEntriesOf(xml);
  const candidates = resources.map((resource) => ({ resource, identifiers: resourceIdentifiers(resource), codes: resourceCodes(resource), used: false }));
  const byTemplate: Record<string, [number, number]> = {};
  const byRule: Record<string, [number, number]> = {};
  const missing: CoverageResult['missing'] = [];
  let landed = 0;
  // An entry with no id is traced by its codes instead: a resource of its type carrying one of them.
  const traceable = (entry: CodedEntry) =>
    candidates.filter(
      (c) =>
        c.resource.resourceType === entry.expectedType &&
        (entry.identifiers.length > 0 ? entry.identifiers.some((id) => c.identifiers.has(id)) : entry.codes.some((code) => c.codes.has(code))),
    );
  // Entries with fewer possible matches claim theirs first, so a greedy match does not starve them.
  const order = entries
    .map((entry, index) => ({ entry, index, options: traceable(entry).length }))
    .sort((a, b) => a.options - b.options || a.index - b.index);
  for (const { entry } of order) {
    const tally = (byTemplate[entry.template] ??= [0, 0]);
    tally[1]++;
    if (entry.placeholder !== undefined) {
      // Nothing to assert: it lands when no resource of its type asserts it.
      const asserted = entry.identifiers.length > 0 && traceable(entry).some((c) => !c.used);
      if (!asserted) {
        tally[0]++;
        landed++;
        continue;
      }
      missing.push({ ...entry, reason: `${entry.placeholder}, yet a ${entry.expectedType} asserts it` });
      continue;
    }
    const rule = polarityRuleOf(entry);
    const free = traceable(entry).filter((c) => !c.used || entry.expectedType === 'FamilyMemberHistory');
    const match = free.find((c) => !rule || rule.holds(c.resource, entry));
    if (rule && free.length > 0) {
      const ruleTally = (byRule[rule.name] ??= [0, 0]);
      ruleTally[1]++;
      if (match) ruleTally[0]++;
    }
    if (match) {
      match.used = true;
      tally[0]++;
      landed++;
      continue;
    }
    const sameType = resources.filter((r) => r.resourceType === entry.expectedType).length;
    const traced = resources.filter((r) => entry.identifiers.some((id) => resourceIdentifiers(r).has(id))).map((r) => r.resourceType);
    const reason =
      entry.identifiers.length === 0 && free.length === 0
        ? `the entry has no id, and no ${entry.expectedType} carries its codes (${entry.codes.join(', ') || 'none'})`
        : free.length === 0 && traceable(entry).length > 0
          ? `the ${entry.expectedType} carrying its id is matched to another entry with the same id`
          : rule && free.length > 0
          ? `${rule.name}: the ${entry.expectedType} needs ${rule.requires}, has ${polarityOf(free[0]!.resource)}`
          : traced.length > 0
            ? `its id is on ${traced.join(', ')} only`
            : `no resource carries its id (${sameType} ${entry.expectedType} in the bundle)`;
    missing.push({ ...entry, reason });
  }
  missing.sort((a, b) => a.line - b.line);
  return { entries: entries.length, landed, missing, byTemplate, byRule };
}
