/**
 * Rules applied to the parsed C-CDA before @medplum/ccda converts it, one per kind of entry the converter
 * would drop or turn into the wrong resource. Each reshapes the tree into a form the converter already
 * reads right (so the resource it makes has all its fields), and never invents content: every element it
 * adds is a copy of, or a wrapper around, what the document says.
 */
import { hasTemplate, isCcdaNode, listOf, type CcdaNode } from './ccda-nodes.js';

const ENTRY = '2.16.840.1.113883.10.20.22.4.';
const SECTION = '2.16.840.1.113883.10.20.22.2.';
export const PROBLEM_OBSERVATION = ENTRY + '4';
const ALLERGY_OBSERVATION = ENTRY + '7';
const PROCEDURE_ACTIVITY_OBSERVATION = ENTRY + '13';
export const HEALTH_CONCERN_ACT = ENTRY + '132';
export const RISK_CONCERN_ACT = ENTRY + '136';
const PROBLEM_CONCERN_ACT = ENTRY + '3';
/** The problems section the converter dispatches Problem Concern Acts on. */
const PROBLEMS_SECTION = SECTION + '5.1';
const HEALTH_CONCERNS_SECTION = SECTION + '58';

/**
 * Sections whose Problem Observations are entries of their own, not wrapped in a concern, with the
 * Condition category their problems belong to.
 */
export const SECTIONS_WITH_BARE_PROBLEMS: Record<string, 'encounter-diagnosis' | 'problem-list-item'> = {
  [SECTION + '28']: 'encounter-diagnosis', // procedure findings
  [SECTION + '37']: 'encounter-diagnosis', // complications
  [SECTION + '14']: 'problem-list-item', // functional status
  [SECTION + '20']: 'problem-list-item', // past medical history
};

export interface TreeRule {
  name: string;
  /** Reshapes `section` in place; returns how many entries it changed. */
  apply(section: CcdaNode): number;
}

const observationsOf = (relationship: unknown): CcdaNode[] => listOf(isCcdaNode(relationship) ? relationship.observation : undefined).filter(isCcdaNode);
const entriesOf = (section: CcdaNode): CcdaNode[] => listOf(section.entry).filter(isCcdaNode);
const sectionHas = (section: CcdaNode, root: string) => hasTemplate(section, root);

/**
 * A Procedure Activity Observation (a procedure that yields no specimen and changes nothing, an EKG say)
 * is a procedure: the converter reads it as an Observation. It is moved to where the converter reads
 * procedures, in the same entry; its id, code, status, time and target site read the same there.
 */
export const procedureObservationsAreProcedures: TreeRule = {
  name: 'procedure activity observations are procedures',
  apply(section) {
    let changed = 0;
    for (const entry of entriesOf(section)) {
      if (entry.observation === undefined) continue;
      const observations = listOf(entry.observation).filter(isCcdaNode);
      const procedures = observations.filter((observation) => hasTemplate(observation, PROCEDURE_ACTIVITY_OBSERVATION));
      if (procedures.length === 0) continue;
      entry.procedure = [...listOf(entry.procedure), ...procedures];
      const rest = observations.filter((observation) => !procedures.includes(observation));
      if (rest.length > 0) entry.observation = rest;
      else delete entry.observation;
      changed += procedures.length;
    }
    return changed;
  },
};

/**
 * A concern act (problem or allergy) may hold several observations; the converter makes a resource of the
 * first only. The act is split into one act per observation, each a copy of the act (its ids, status,
 * time and author) holding that one observation, so each becomes a resource of its own.
 */
export const everyObservationOfAConcern: TreeRule = {
  name: 'every observation of a concern',
  apply(section) {
    let changed = 0;
    for (const entry of entriesOf(section)) {
      if (entry.act === undefined) continue;
      const acts = listOf(entry.act).filter(isCcdaNode);
      const split = acts.flatMap((act) => {
        const subjects = listOf(act.entryRelationship)
          .filter((relationship) => isCcdaNode(relationship) && relationship['@_typeCode'] === 'SUBJ')
          .flatMap(observationsOf)
          .filter((observation) => hasTemplate(observation, PROBLEM_OBSERVATION) || hasTemplate(observation, ALLERGY_OBSERVATION));
        if (subjects.length < 2) return [act];
        changed += subjects.length - 1;
        return subjects.map((subject) => concernHolding(act, subject, (relationship) => !observationsOf(relationship).some((o) => subjects.includes(o))));
      });
      if (split.length !== acts.length) entry.act = split;
    }
    return changed;
  },
};

/** A copy of `act` whose subject is `observation`, keeping the relationships `keep` accepts. */
function concernHolding(act: CcdaNode, observation: CcdaNode, keep: (relationship: CcdaNode) => boolean): CcdaNode {
  const { entryRelationship, ...rest } = act;
  const others = listOf(entryRelationship).filter((relationship): relationship is CcdaNode => isCcdaNode(relationship) && keep(relationship));
  return {
    ...structuredClone(rest),
    entryRelationship: [{ '@_typeCode': 'SUBJ', observation: [observation] }, ...structuredClone(others)],
  };
}

/**
 * Procedure findings, complications, functional status and past medical history list Problem Observations
 * as entries of their own; the converter reads them as Observations whose value is the problem. Each is wrapped in a concern
 * act (status from whether the problem has ended, nothing else added), and the section is read as a
 * problems section, so each becomes a Condition with its onset and end.
 */
export const problemsOutsideProblemSections: TreeRule = {
  name: 'problems outside problem sections',
  apply(section) {
    const root = Object.keys(SECTIONS_WITH_BARE_PROBLEMS).find((candidate) => sectionHas(section, candidate));
    if (root === undefined) return 0;
    const category = SECTIONS_WITH_BARE_PROBLEMS[root]!;
    let changed = 0;
    for (const entry of entriesOf(section)) {
      const observations = listOf(entry.observation).filter(isCcdaNode);
      const problems = observations.filter((observation) => hasTemplate(observation, PROBLEM_OBSERVATION));
      if (problems.length === 0) continue;
      entry.act = [...listOf(entry.act), ...problems.map((problem) => wrapInConcern(problem, category))];
      const rest = observations.filter((observation) => !problems.includes(observation));
      if (rest.length > 0) entry.observation = rest;
      else delete entry.observation;
      changed += problems.length;
    }
    if (changed > 0) section.templateId = [{ '@_root': PROBLEMS_SECTION }, ...listOf(section.templateId)];
    return changed;
  },
};

/** Concern acts this module made around a bare Problem Observation (they have no ids of their own), with the category of their problem. */
export const wrappingConcerns = new WeakMap<CcdaNode, string>();

function wrapInConcern(problem: CcdaNode, category: string): CcdaNode {
  const time = listOf(problem.effectiveTime).find(isCcdaNode);
  const ended = isCcdaNode(time?.high) && typeof time.high['@_value'] === 'string';
  const act: CcdaNode = {
    '@_classCode': 'ACT',
    '@_moodCode': 'EVN',
    templateId: [{ '@_root': PROBLEM_CONCERN_ACT }],
    code: { '@_code': 'CONC', '@_codeSystem': '2.16.840.1.113883.5.6' },
    statusCode: { '@_code': ended ? 'completed' : 'active' },
    entryRelationship: [{ '@_typeCode': 'SUBJ', observation: [problem] }],
  };
  wrappingConcerns.set(act, category);
  return act;
}

/**
 * A health concern (or a risk concern) points at its problems with REFR (or SPRT) relationships, which the
 * converter does not follow: it looks for a SUBJ and finds none, so the care plan's concerns are lost. Each
 * problem becomes a concern of its own (a copy of the health concern act holding that problem), and the
 * other observations the concern refers to (tobacco use, say) become entries of the section, so they are
 * converted as the observations they are.
 */
export const healthConcernsFollowed: TreeRule = {
  name: 'health concerns followed',
  apply(section) {
    if (!sectionHas(section, HEALTH_CONCERNS_SECTION)) return 0;
    let changed = 0;
    for (const entry of entriesOf(section)) {
      const acts = listOf(entry.act).filter(isCcdaNode);
      const lifted: CcdaNode[] = [];
      let here = 0;
      const replaced = acts.flatMap((act) => {
        if (!hasTemplate(act, HEALTH_CONCERN_ACT) && !hasTemplate(act, RISK_CONCERN_ACT)) return [act];
        const relationships = listOf(act.entryRelationship).filter(isCcdaNode);
        const referred = relationships.filter((relationship) => ['REFR', 'SPRT', 'SUBJ'].includes(String(relationship['@_typeCode'])));
        const problems = referred.flatMap(observationsOf).filter((observation) => hasTemplate(observation, PROBLEM_OBSERVATION));
        const others = referred.flatMap(observationsOf).filter((observation) => !problems.includes(observation) && listOf(observation.templateId).length > 0);
        if (problems.length === 0 && others.length === 0) return [act];
        lifted.push(...others);
        here += problems.length + others.length;
        const keep = (relationship: CcdaNode) => !referred.includes(relationship);
        return problems.map((problem) => concernHolding(act, problem, keep));
      });
      if (here === 0) continue;
      changed += here;
      entry.act = replaced;
      if (lifted.length > 0) entry.observation = [...listOf(entry.observation), ...lifted];
    }
    return changed;
  },
};

/**
 * Statements the converter reads only at entry level, found among an organizer's components: the procedure
 * that produced a result (some systems put it in the result organizer), the medication activities of a
 * medication organizer (a course given in steps). They were lost; each is moved beside the organizer, in
 * the same entry, and an organizer left with no component goes.
 */
export const statementsInOrganizers: TreeRule = {
  name: 'statements in organizers',
  apply(section) {
    let changed = 0;
    for (const entry of entriesOf(section)) {
      for (const organizer of listOf(entry.organizer).filter(isCcdaNode)) {
        const components = listOf(organizer.component).filter(isCcdaNode);
        for (const kind of ['procedure', 'substanceAdministration'] as const) {
          const lifted = components.flatMap((component) => listOf(component[kind]).filter(isCcdaNode));
          if (lifted.length === 0) continue;
          for (const component of components) delete component[kind];
          entry[kind] = [...listOf(entry[kind]), ...lifted];
          changed += lifted.length;
        }
        organizer.component = components.filter((component) => Object.keys(component).some((key) => !key.startsWith('@_')));
      }
      const organizers = listOf(entry.organizer).filter(isCcdaNode);
      const kept = organizers.filter((organizer) => listOf(organizer.component).length > 0);
      if (kept.length < organizers.length) {
        if (kept.length > 0) entry.organizer = kept;
        else delete entry.organizer;
      }
    }
    return changed;
  },
};

/** Diagnosis acts an encounter may hold, with the role their problems play (none for a plain encounter diagnosis). */
const ENCOUNTER_DIAGNOSIS_ACTS: Record<string, 'AD' | 'DD' | ''> = { [ENTRY + '80']: '', [ENTRY + '33']: 'DD', [ENTRY + '34']: 'AD' };
const diagnosisRoleOf = (act: CcdaNode) => Object.entries(ENCOUNTER_DIAGNOSIS_ACTS).find(([root]) => hasTemplate(act, root))?.[1];

/** Problems moved out of an encounter's diagnosis acts, with the diagnosis role their act gave them. */
export const encounterDiagnosisRoles = new WeakMap<CcdaNode, 'AD' | 'DD' | ''>();

/**
 * An encounter's diagnoses (Encounter Diagnosis acts, each holding Problem Observations) are not read by
 * the converter, which makes a Condition only of an encounter's RSON observations. Each diagnosis's
 * problems are moved there, so each becomes a Condition the Encounter names as a diagnosis; its category
 * is `encounter-diagnosis` (see wrappingConcerns).
 */
export const encounterDiagnosesFollowed: TreeRule = {
  name: 'encounter diagnoses followed',
  apply(section) {
    let changed = 0;
    for (const entry of entriesOf(section)) {
      for (const encounter of listOf(entry.encounter).filter(isCcdaNode)) {
        const relationships = listOf(encounter.entryRelationship).filter(isCcdaNode);
        const diagnoses = relationships.filter((relationship) => listOf(relationship.act).some((act) => isCcdaNode(act) && diagnosisRoleOf(act) !== undefined));
        if (diagnoses.length === 0) continue;
        const problems: CcdaNode[] = [];
        for (const act of diagnoses.flatMap((relationship) => listOf(relationship.act).filter(isCcdaNode))) {
          const role = diagnosisRoleOf(act);
          for (const problem of listOf(act.entryRelationship).flatMap(observationsOf).filter((o) => hasTemplate(o, PROBLEM_OBSERVATION))) {
            wrappingConcerns.set(problem, 'encounter-diagnosis');
            encounterDiagnosisRoles.set(problem, role ?? '');
            problems.push(problem);
          }
        }
        encounter.entryRelationship = [
          ...relationships.filter((relationship) => !diagnoses.includes(relationship)),
          ...problems.map((problem) => ({ '@_typeCode': 'RSON', observation: [problem] })),
        ];
        changed += problems.length;
      }
    }
    return changed;
  },
};

export const TREE_RULES: readonly TreeRule[] = [
  procedureObservationsAreProcedures,
  problemsOutsideProblemSections,
  healthConcernsFollowed,
  everyObservationOfAConcern,
  encounterDiagnosesFollowed,
  statementsInOrganizers,
];

/** The sections the converter reads: those of the body's components, in document order (not nested ones). */
export function sectionsOf(document: CcdaNode): CcdaNode[] {
  const body = isCcdaNode(document.component) ? document.component.structuredBody : undefined;
  if (!isCcdaNode(body)) return [];
  return listOf(body.component).flatMap((component) => (isCcdaNode(component) ? listOf(component.section).filter(isCcdaNode) : []));
}

/** Applies every rule to every section of `document`; returns how many entries each rule changed, by name. */
export function applyTreeRules(document: CcdaNode, rules: readonly TreeRule[] = TREE_RULES): Record<string, number> {
  const sections = sectionsOf(document);
  const changed: Record<string, number> = {};
  for (const rule of rules) changed[rule.name] = sections.reduce((sum, section) => sum + rule.apply(section), 0);
  return changed;
}
