/**
 * Problems and procedures that a document states inside another statement: the problem a medication is
 * given for (its RSON), the diagnosis a procedure or a plan is about (SUBJ), the procedure a plan refers to
 * (REFR), the education given towards a goal. The converter reads statements at entry level only (and a
 * concern's subject, an encounter's reasons), so these were lost. Each becomes a resource of its own type,
 * made by the converter from a copy of the statement in a section of the kind that holds such statements,
 * so every rule that reads a top-level one (negation, status, mood, dates) reads it the same way. Those
 * sections are the converter's input only: they leave the Composition again, which lists the document's
 * own sections. The resource is linked to the one it was nested in where FHIR has the element: a problem
 * given as a reason is the other's `reasonReference`, a statement a request refers to is `basedOn` it.
 */
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { hasTemplate, isCcdaNode, listOf, type CcdaNode } from './ccda-nodes.js';

const ENTRY = '2.16.840.1.113883.10.20.22.4.';
const SECTION = '2.16.840.1.113883.10.20.22.2.';
const PROBLEM_OBSERVATION = ENTRY + '4';
const PROBLEM_CONCERN_ACT = ENTRY + '3';
const PROCEDURES = [ENTRY + '12', ENTRY + '13', ENTRY + '14'];
/** Sections whose entry-level acts the converter reads as Conditions, from their subject observation. */
const PROBLEM_READING_SECTIONS = [SECTION + '5.1', SECTION + '5', SECTION + '5.2', SECTION + '58'];

/** The keys a clinical statement hangs under in the parsed tree. */
const STATEMENT_KEYS = ['act', 'observation', 'substanceAdministration', 'supply', 'encounter', 'procedure', 'organizer'] as const;

/** The copy the converter reads, by the nested statement it was made of (a problem: its observation). */
const copies = new WeakMap<CcdaNode, CcdaNode>();

/** Statements the converter reads where they stand: a problem concern's subject, an encounter's reason. */
function readWhereItStands(holder: CcdaNode, holderKey: string, topLevel: boolean, sectionRoot: string | undefined, relationship: CcdaNode, observation: CcdaNode): boolean {
  if (!topLevel) return false;
  const typeCode = relationship['@_typeCode'];
  if (holderKey === 'act' && typeCode === 'SUBJ' && sectionRoot !== undefined && PROBLEM_READING_SECTIONS.includes(sectionRoot)) {
    const subject = listOf(holder.entryRelationship).find((r) => isCcdaNode(r) && r['@_typeCode'] === 'SUBJ');
    return isCcdaNode(subject) && listOf(subject.observation)[0] === observation;
  }
  return holderKey === 'encounter' && typeCode === 'RSON' && listOf(relationship.observation)[0] === observation;
}

/** A problem lifted out: inside its own concern when the document gave one, else in a concern holding it alone. */
function problemEntry(problem: CcdaNode, concern: CcdaNode | undefined): CcdaNode {
  const time = listOf(problem.effectiveTime).find(isCcdaNode);
  const ended = isCcdaNode(time?.high) && typeof time.high['@_value'] === 'string';
  const { entryRelationship: _, ...act } = concern ?? {
    '@_classCode': 'ACT',
    '@_moodCode': 'EVN',
    templateId: [{ '@_root': PROBLEM_CONCERN_ACT }],
    code: { '@_code': 'CONC', '@_codeSystem': '2.16.840.1.113883.5.6' },
    statusCode: { '@_code': ended ? 'completed' : 'active' },
  };
  const copy: CcdaNode = { ...structuredClone(act), entryRelationship: [{ '@_typeCode': 'SUBJ', observation: [structuredClone(problem)] }] };
  copies.set(problem, copy);
  return { act: [copy] };
}

function procedureEntry(procedure: CcdaNode, key: string): CcdaNode {
  const copy = structuredClone(procedure);
  copies.set(procedure, copy);
  // A Procedure Activity Observation is read as a procedure too (see procedureObservationsAreProcedures).
  return { [key === 'act' ? 'act' : 'procedure']: [copy] };
}

/**
 * Adds to `document`, after its own sections, a problems section and a procedures section holding copies
 * of the problems and procedures nested in other statements; returns how many sections it added (they are
 * the last ones).
 */
export function liftNestedStatements(document: CcdaNode, sections: readonly CcdaNode[]): number {
  const problems: CcdaNode[] = [];
  const procedures: CcdaNode[] = [];
  const visit = (holder: CcdaNode, holderKey: string, topLevel: boolean, sectionRoot: string | undefined) => {
    for (const relationship of listOf(holder.entryRelationship).filter(isCcdaNode)) {
      for (const key of STATEMENT_KEYS) {
        for (const statement of listOf(relationship[key]).filter(isCcdaNode)) {
          if (key === 'act' && hasTemplate(statement, PROBLEM_CONCERN_ACT)) {
            // A concern given as a reason: its problems are lifted inside copies of it.
            for (const inner of listOf(statement.entryRelationship).filter(isCcdaNode)) {
              for (const problem of listOf(inner.observation).filter(isCcdaNode)) {
                if (!hasTemplate(problem, PROBLEM_OBSERVATION) || copies.has(problem)) continue;
                if (readWhereItStands(holder, holderKey, topLevel, sectionRoot, relationship, problem)) continue;
                problems.push(problemEntry(problem, statement));
              }
            }
          } else if (key === 'observation' && hasTemplate(statement, PROBLEM_OBSERVATION)) {
            if (!copies.has(statement) && !readWhereItStands(holder, holderKey, topLevel, sectionRoot, relationship, statement)) problems.push(problemEntry(statement, undefined));
          } else if (PROCEDURES.some((root) => hasTemplate(statement, root)) && !copies.has(statement)) {
            procedures.push(procedureEntry(statement, key));
          }
          visit(statement, key, false, sectionRoot);
        }
      }
    }
  };
  for (const section of sections) {
    const root = listOf(section.templateId).filter(isCcdaNode)[0]?.['@_root'];
    for (const entry of listOf(section.entry).filter(isCcdaNode)) {
      for (const key of STATEMENT_KEYS) for (const statement of listOf(entry[key]).filter(isCcdaNode)) visit(statement, key, true, typeof root === 'string' ? root : undefined);
    }
  }
  const added = [
    { template: SECTION + '5.1', entries: problems },
    { template: SECTION + '7.1', entries: procedures },
  ].filter((section) => section.entries.length > 0);
  if (added.length === 0) return 0;
  const body = isCcdaNode(document.component) ? document.component.structuredBody : undefined;
  if (!isCcdaNode(body)) return 0;
  body.component = [...listOf(body.component), ...added.map(({ template, entries }) => ({ section: [{ templateId: [{ '@_root': template }], entry: entries }] }))];
  return added.length;
}

/** The link normaliseParsedCcda gave the statement: the id of the resource made of it. */
type LinkOf = (element: CcdaNode) => string | undefined;

/** What FHIR lets a resource name as its reason (every one of these takes a Condition). */
const REASONED = new Set(['MedicationStatement', 'MedicationRequest', 'Procedure', 'ServiceRequest', 'Immunization', 'Encounter']);
/** What may be based on a request. */
const BASED_ON_REQUEST = new Set(['Procedure', 'ServiceRequest']);

/**
 * Links each resource made of a lifted statement to the resource made of the statement that held it: a
 * problem given as a reason (RSON, directly or inside a concern) is a `reasonReference`; a procedure a
 * request holds is `basedOn` that request. Nothing else is linked: FHIR R4 has no element for it.
 */
export function linkLiftedStatements(resources: readonly FhirResource[], sourceOf: (resource: FhirResource) => CcdaNode | undefined, linkOf: LinkOf): void {
  const byId = new Map(resources.map((resource) => [resource.id, resource]));
  const madeOf = (statement: CcdaNode) => {
    const copy = copies.get(statement);
    const id = copy ? linkOf(copy) : undefined;
    return id === undefined ? undefined : byId.get(id);
  };
  const append = (resource: FhirResource, key: string, reference: string) => {
    const list = (resource[key] as { reference?: string }[] | undefined) ?? [];
    if (!list.some((item) => item.reference === reference)) resource[key] = [...list, { reference }];
  };
  for (const host of resources) {
    const source = sourceOf(host);
    if (!source) continue;
    for (const relationship of listOf(source.entryRelationship).filter(isCcdaNode)) {
      for (const key of STATEMENT_KEYS) {
        for (const statement of listOf(relationship[key]).filter(isCcdaNode)) {
          const held = hasTemplate(statement, PROBLEM_CONCERN_ACT) ? listOf(statement.entryRelationship).filter(isCcdaNode).flatMap((inner) => listOf(inner.observation).filter(isCcdaNode)) : [statement];
          for (const lifted of held.flatMap((node) => madeOf(node) ?? [])) {
            if (relationship['@_typeCode'] === 'RSON' && lifted.resourceType === 'Condition' && REASONED.has(host.resourceType)) append(host, 'reasonReference', `Condition/${lifted.id}`);
            else if (host.resourceType === 'ServiceRequest' && BASED_ON_REQUEST.has(lifted.resourceType)) append(lifted, 'basedOn', `ServiceRequest/${host.id}`);
          }
        }
      }
    }
  }
}
