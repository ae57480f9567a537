/**
 * Repairs the document tree produced by @medplum/ccda's `convertXmlToCcda` so that `convertCcdaToFhir`
 * 4.5 can walk it. The parser only turns a fixed list of paths into arrays, and the converter assumes
 * more than that; every repair below answers a crash or a silent loss seen on real HL7 examples:
 *
 * - `ClinicalDocument/participant` is one object when the document has one participant, and the converter
 *   iterates it ("e is not iterable"): it becomes a list.
 * - Several `documentationOf` elements arrive as a list where the converter reads one: the first is kept.
 * - A custodian without `representedCustodianOrganization`, or a `patientRole` without `patient`, would
 *   be dereferenced blindly: the custodian is dropped, the patient becomes empty.
 * - Sections and observations without `templateId` (or observations without `statusCode`) are read at
 *   index 0: they get an empty one.
 * - The converter dispatches a section's entries on the section's FIRST templateId and knows only some
 *   variants. A section whose ids include a known one gets it moved first; a section whose variant has
 *   the same entry templates as a known one (entries-optional vs entries-required, later versions,
 *   diagnosis sections that wrap Problem Observations, medications administered) gets the known id
 *   prepended. Hospital discharge and admission medications wrap Medication Activities in an act; they are
 *   lifted into the entry.
 * - C-CDA ids that are a bare UUID become the FHIR id, but the HL7 examples reuse one UUID for several
 *   entries, which would give several resources one id. Each such id occurrence gets its own UUID derived
 *   from the document, so ids are unique and stable.
 * - Every clinical statement (act, observation, substance administration, supply, encounter, procedure,
 *   organizer) gets a link: a UUID derived from the document, put first among its ids. The converter takes
 *   the first bare-UUID id as the resource id and never writes it as an identifier, so each resource made
 *   of a statement has the link as its id, and the repairs find the statement it came from (see
 *   SourceLinks). The statement's own ids stay as the document wrote them.
 */
import { liftNestedStatements } from './nested-statements.js';
import { applyTreeRules, sectionsOf } from './tree-rules.js';
import { isUuid, uuidFromSeed } from './stable-ids.js';

type Node = Record<string, unknown>;

const OID = '2.16.840.1.113883.10.20.22.2.';

/** Section templateIds the 4.5 converter dispatches on (its processAct, processSubstanceAdministration, processOrganizer, processObservation). */
const HANDLED_SECTION_TEMPLATES = new Set(
  [
    '6.1', '6', '6.1.2', '6.2', // allergies
    '5.1', '5', '5.2', // problems
    '10', // plan of care
    '58', // health concerns
    '60', // goals
    '7.1', // procedures
    '18', '65', // payers, notes (skipped by the converter on purpose)
    '1.1', // medications
    '2', '2.1', // immunizations
    '500', // care teams
  ].map((suffix) => OID + suffix),
);

/** Section variants whose entries use the same entry templates as a handled section. */
const SECTION_TEMPLATE_ALIASES: Record<string, string> = {
  // Medications: entries optional and the 2014+ versions carry the same Medication Activity entries.
  [OID + '1']: OID + '1.1',
  [OID + '1.2']: OID + '1.1',
  [OID + '1.1.2']: OID + '1.1',
  // Anesthesia: Medication Activity entries.
  [OID + '25']: OID + '1.1',
  [OID + '25.2']: OID + '1.1',
  // Hospital discharge and admission medications, once their acts are lifted (see liftWrappedMedications).
  [OID + '11']: OID + '1.1',
  [OID + '11.1']: OID + '1.1',
  [OID + '44']: OID + '1.1',
  // Medications administered: Medication Activity entries.
  [OID + '38']: OID + '1.1',
  // Immunizations, later versions.
  [OID + '2.1.2']: OID + '2.1',
  [OID + '2.2']: OID + '2.1',
  // Procedures: entries optional and later versions.
  [OID + '7']: OID + '7.1',
  [OID + '7.1.2']: OID + '7.1',
  [OID + '7.2']: OID + '7.1',
  // Problems, the real 2014 id (the converter's constant has a typo).
  [OID + '5.1.2']: OID + '5.1',
  // Diagnosis sections: an act whose SUBJ entryRelationship is a Problem Observation, like a Problem Concern Act.
  [OID + '43']: OID + '5.1', // admission diagnosis
  [OID + '24']: OID + '5.1', // discharge diagnosis
  [OID + '24.2']: OID + '5.1',
  [OID + '34']: OID + '5.1', // preoperative diagnosis
  [OID + '34.2']: OID + '5.1',
  [OID + '35']: OID + '5.1', // postoperative diagnosis
  [OID + '36']: OID + '5.1', // postprocedure diagnosis
  [OID + '36.2']: OID + '5.1',
};

/** Sections whose Medication Activities are each wrapped in an act (Discharge Medication, Admission Medication). */
const WRAPPED_MEDICATION_SECTIONS = new Set([OID + '11', OID + '11.1', OID + '44']);

export function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asList(value: unknown): unknown[] {
  if (value === undefined || value === null || value === '') return [];
  return Array.isArray(value) ? value : [value];
}

function rootsOf(templateIds: unknown): string[] {
  return asList(templateIds).flatMap((t) => (isNode(t) && typeof t['@_root'] === 'string' ? [t['@_root']] : []));
}

export interface NormaliseOptions {
  /** Seed for the per-occurrence ids (the document's hash): the same document gets the same ids. */
  seed: string;
  /** Whether to apply the tree rules (tree-rules.ts) too; default true. */
  treeRules?: boolean;
}

/** The elements of the document that converted resources were made of. */
export interface SourceLinks {
  /** The clinical statement a resource was made of, by the resource's id; undefined for anything else. */
  elementOf(resourceId: string | undefined): Node | undefined;
  /** The element's ids as the document wrote them (its link left out). */
  idsOf(element: Node): Node[];
  /** The id of the resource made of the element, if one was. */
  linkOf(element: Node): string | undefined;
}

/** The UUIDs given to bare-UUID C-CDA ids, so later passes can tell them from the converter's random ones. */
export interface NormaliseResult {
  document: Node;
  assignedUuids: Set<string>;
  links: SourceLinks;
  /** How many sections were added after the document's own for statements nested in others (see nested-statements.ts). */
  liftedSections: number;
}

/** The elements the converter turns into resources, by the name they hang under. */
const STATEMENTS = new Set(['act', 'observation', 'substanceAdministration', 'supply', 'encounter', 'procedure', 'organizer']);

/** Mutates and returns `document` (the `ClinicalDocument` node). */
export function normaliseParsedCcda(document: Node, options: NormaliseOptions): NormaliseResult {
  if (isNode(document.participant)) document.participant = [document.participant];
  if (Array.isArray(document.documentationOf)) document.documentationOf = document.documentationOf[0];

  const custodian = document.custodian;
  if (custodian !== undefined) {
    const assigned = isNode(custodian) ? custodian.assignedCustodian : undefined;
    if (!isNode(assigned) || !isNode(assigned.representedCustodianOrganization)) delete document.custodian;
  }

  for (const target of asList(document.recordTarget)) {
    if (isNode(target) && isNode(target.patientRole) && !isNode(target.patientRole.patient)) {
      target.patientRole.patient = {};
    }
  }

  const body = isNode(document.component) ? document.component.structuredBody : undefined;
  if (isNode(body)) {
    // An empty `<component> </component>` parses as text, which the converter cannot walk: it holds nothing.
    body.component = asList(body.component).filter(isNode);
    for (const component of body.component as Node[]) {
      component.section = asList(component.section).filter(isNode);
      for (const section of component.section as Node[]) normaliseSection(section);
    }
  }

  let liftedSections = 0;
  if (options.treeRules ?? true) {
    applyTreeRules(document);
    liftedSections = liftNestedStatements(document, sectionsOf(document));
  }

  const assignedUuids = new Set<string>();
  const linked = new Map<string, Node>();
  const linkIds = new WeakSet<Node>();
  // A statement's own ids stay as written: its link, not they, becomes the resource id.
  const statementIds = new WeakSet<Node>();
  let occurrence = 0;
  let links = 0;
  walk(document, (node, key) => {
    if (key === 'observation' && !isNode(node.statusCode)) node.statusCode = {};
    if ((key === 'observation' || key === 'section') && rootsOf(node.templateId).length === 0) {
      node.templateId = [{}];
    }
    if (STATEMENTS.has(key)) {
      const ids = asList(node.id).filter(isNode);
      for (const id of ids) statementIds.add(id);
      const uuid = uuidFromSeed(`${options.seed}:source:${links++}`);
      const link = { '@_root': uuid };
      linkIds.add(link);
      node.id = [link, ...ids];
      linked.set(uuid, node);
      assignedUuids.add(uuid);
    }
    if (key === 'id' && !linkIds.has(node) && !statementIds.has(node) && typeof node['@_root'] === 'string' && !node['@_extension'] && isUuid(node['@_root'])) {
      const uuid = uuidFromSeed(`${options.seed}:id:${occurrence++}`);
      node['@_root'] = uuid;
      assignedUuids.add(uuid);
    }
  });

  return {
    document,
    assignedUuids,
    liftedSections,
    links: {
      elementOf: (resourceId) => (resourceId === undefined ? undefined : linked.get(resourceId)),
      idsOf: (element) => asList(element.id).filter((id): id is Node => isNode(id) && !linkIds.has(id)),
      linkOf: (element) => {
        const first = asList(element.id)[0];
        return isNode(first) && linkIds.has(first) ? String(first['@_root']) : undefined;
      },
    },
  };
}

function normaliseSection(section: Node): void {
  const roots = rootsOf(section.templateId);
  if (roots.some((root) => WRAPPED_MEDICATION_SECTIONS.has(root))) liftWrappedMedications(section);

  const templates = asList(section.templateId).filter(isNode);
  const handled = templates.find((t) => HANDLED_SECTION_TEMPLATES.has(String(t['@_root'])));
  if (handled) {
    section.templateId = [handled, ...templates.filter((t) => t !== handled)];
    return;
  }
  const alias = roots.map((root) => SECTION_TEMPLATE_ALIASES[root]).find((value) => value !== undefined);
  if (alias) section.templateId = [{ '@_root': alias }, ...templates];
}

/** Discharge and Admission Medication acts wrap Medication Activities; the converter reads them only at entry level. */
function liftWrappedMedications(section: Node): void {
  for (const entry of asList(section.entry)) {
    if (!isNode(entry)) continue;
    const lifted: unknown[] = [];
    for (const act of asList(entry.act)) {
      if (!isNode(act)) continue;
      for (const relationship of asList(act.entryRelationship)) {
        if (isNode(relationship)) lifted.push(...asList(relationship.substanceAdministration));
      }
    }
    if (lifted.length > 0) {
      entry.substanceAdministration = [...asList(entry.substanceAdministration), ...lifted];
      delete entry.act;
    }
  }
}

/** Depth-first, in document order, calling `visit` on every object node with the key it hangs under. */
function walk(root: Node, visit: (node: Node, key: string) => void): void {
  const stack: [unknown, string][] = [[root, 'ClinicalDocument']];
  while (stack.length > 0) {
    const [value, key] = stack.pop()!;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], key]);
      continue;
    }
    if (!isNode(value)) continue;
    visit(value, key);
    const entries = Object.entries(value);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [childKey, child] = entries[i]!;
      if (!childKey.startsWith('@_') && childKey !== '#text') stack.push([child, childKey]);
    }
  }
}
