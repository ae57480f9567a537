/**
 * What a converted resource asserts: the rules for negation, nullFlavor, status and mood, in one place.
 *
 * The converter reads an entry's codes and ignores whether the document says the thing happened, is
 * true, or is denied, so "does not have diabetes" came out as an active diabetes and "not allergic to
 * peanuts" as a peanut allergy. Each rule below reads the C-CDA statement the resource was made of and
 * writes the FHIR form that says exactly what the document says:
 *
 * - A negated problem (`negationInd="true"` on the Problem Observation) is a `refuted` Condition, not
 *   active; "no known problems" (a negated generic problem) is the SNOMED "no current problems" finding.
 * - A negated allergy to a named substance is a `refuted` AllergyIntolerance; a negated allergy with no
 *   substance ("no known allergies", "no known drug allergies") is the SNOMED no-known-allergy code.
 * - An allergy's type and category come from the allergy type the document gives (drug, food,
 *   environmental; allergy or intolerance), else from the substance's code system; never a guess.
 * - A refused or not-done procedure or immunization is `not-done` with the document's reason; a negated
 *   medication order is `doNotPerform`, a negated medication history `not-taken` with its reason.
 * - A withdrawn (`nullified`) record is `entered-in-error`; statuses (pending, aborted, cancelled, held)
 *   follow the statement's statusCode.
 * - "Not pregnant" is the pregnancy status observation with the value "not pregnant".
 * - A statement that asserts nothing (the statement itself null-flavored: "no information") and any
 *   other negated statement FHIR R4 has no faithful form for are left out of the clinical resources,
 *   with the reason recorded on the document's Composition; the document keeps them. Nothing is ever
 *   turned into its opposite.
 */
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { attributeOf, firstNode, hasTemplate, isCcdaNode, listOf, textOf, type CcdaNode } from './ccda-nodes.js';
import { canonicalSystem } from './code-systems.js';
import { textOfElement } from './narrative.js';
import type { RepairContext, RepairRule } from './repair-rule.js';

type Json = Record<string, unknown>;
type Coding = { system?: string; code?: string; display?: string };
type CodeableConcept = { coding?: Coding[]; text?: string };

const SNOMED = 'http://snomed.info/sct';
const LOINC = 'http://loinc.org';
const CONDITION_CLINICAL = 'http://terminology.hl7.org/CodeSystem/condition-clinical';
const CONDITION_VERIFICATION = 'http://terminology.hl7.org/CodeSystem/condition-verification';
const ALLERGY_CLINICAL = 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical';
const ALLERGY_VERIFICATION = 'http://terminology.hl7.org/CodeSystem/allergyintolerance-verification';
const ENTRY = '2.16.840.1.113883.10.20.22.4.';
const PREGNANCY_OBSERVATION = '2.16.840.1.113883.10.20.15.3.8';

const concept = (system: string, code: string, display: string): CodeableConcept => ({ coding: [{ system, code, display }] });
const isTrue = (node: CcdaNode | undefined, name: string) => attributeOf(node, name) === 'true';
const statusCodeOf = (node: CcdaNode | undefined) => attributeOf(listOf(node?.statusCode).find(isCcdaNode), 'code');
const codeOfConcept = (value: unknown): string | undefined => (attributeOf(value, 'nullFlavor') ? undefined : attributeOf(value, 'code'));

/** The observation a concern act is about (its first SUBJ observation); undefined when it holds none. */
export function subjectOf(element: CcdaNode): CcdaNode | undefined {
  for (const relationship of listOf(element.entryRelationship)) {
    if (!isCcdaNode(relationship) || relationship['@_typeCode'] !== 'SUBJ') continue;
    const observation = firstNode(relationship.observation);
    if (observation) return observation;
  }
  return undefined;
}

/** The statement a resource asserts: a concern act's subject observation, or the statement itself. */
function statementOf(resource: FhirResource, context: RepairContext | undefined): { source: CcdaNode; statement: CcdaNode } | undefined {
  const source = context?.sourceOf(resource);
  if (!source) return undefined;
  // A problem or allergy observation is the statement; a concern or diagnosis act holds it as its subject.
  const isObservation = hasTemplate(source, ENTRY + '4') || hasTemplate(source, ENTRY + '7');
  const wraps = resource.resourceType === 'Condition' || resource.resourceType === 'AllergyIntolerance';
  return { source, statement: wraps && !isObservation ? (subjectOf(source) ?? source) : source };
}

/**
 * A reason the document gives for an act (not) done: an RSON relationship's observation or act, or the
 * "reason care action performed or not" observation (LOINC 77301-0), as a CodeableConcept.
 */
function reasonOf(statement: CcdaNode): CodeableConcept | undefined {
  for (const relationship of listOf(statement.entryRelationship)) {
    if (!isCcdaNode(relationship)) continue;
    for (const element of [...listOf(relationship.observation), ...listOf(relationship.act)]) {
      if (!isCcdaNode(element)) continue;
      const code = firstNode(element.code);
      const isReason = relationship['@_typeCode'] === 'RSON' || attributeOf(code, 'code') === '77301-0';
      if (!isReason) continue;
      // A reason observation's value is the reason; an Immunization Refusal Reason carries it in its code.
      const carrier = firstNode(element.value) ?? code;
      const reason = codeableConceptOf(carrier);
      if (reason) return reason;
    }
  }
  return undefined;
}

/** A CD/CE element as a CodeableConcept: its code and translations, systems as FHIR URIs; undefined when it has none. */
export function codeableConceptOf(element: CcdaNode | undefined): CodeableConcept | undefined {
  if (!element) return undefined;
  const codings = [element, ...listOf(element.translation).filter(isCcdaNode)].flatMap((candidate): Coding[] => {
    const code = codeOfConcept(candidate);
    const system = attributeOf(candidate, 'codeSystem');
    if (!code || !system) return [];
    const display = attributeOf(candidate, 'displayName');
    return [{ system: canonicalSystem(system), code, ...(display ? { display } : {}) }];
  });
  const text = typeof element.originalText === 'string' ? element.originalText.trim() : undefined;
  if (codings.length === 0 && !text) return undefined;
  return { ...(codings.length > 0 ? { coding: codings } : {}), ...(text ? { text } : {}) };
}

function setIfDifferent(resource: FhirResource, key: string, value: unknown): boolean {
  if (JSON.stringify(resource[key]) === JSON.stringify(value)) return false;
  resource[key] = value;
  return true;
}

/** Problem values that name no particular problem: negated, they mean "no known problems". */
const GENERIC_PROBLEMS = new Set(['55607006', '64572001', '404684003', '75326-9', '75323-6']);
const NO_CURRENT_PROBLEMS = concept(SNOMED, '160245001', 'No current problems or disability');

export const negatedProblems: RepairRule = {
  name: 'negated problems refuted',
  apply(resource, context) {
    if (resource.resourceType !== 'Condition') return false;
    const found = statementOf(resource, context);
    if (!found || !isTrue(found.statement, 'negationInd')) return false;
    const value = firstNode(found.statement.value);
    const code = codeOfConcept(value);
    if (code === undefined) {
      // "Not (no information)": no problem is named, so nothing is denied nor asserted.
      context?.leaveOut?.(resource, 'a negated problem observation that names no problem');
      return context?.leaveOut !== undefined;
    }
    if (GENERIC_PROBLEMS.has(code)) {
      let changed = setIfDifferent(resource, 'code', NO_CURRENT_PROBLEMS);
      changed = setIfDifferent(resource, 'verificationStatus', concept(CONDITION_VERIFICATION, 'confirmed', 'Confirmed')) || changed;
      return setIfDifferent(resource, 'clinicalStatus', concept(CONDITION_CLINICAL, 'active', 'Active')) || changed;
    }
    // Nothing of a ruled-out problem is active in the patient: the concern may be, the condition is not.
    const changed = setIfDifferent(resource, 'verificationStatus', concept(CONDITION_VERIFICATION, 'refuted', 'Refuted'));
    return setIfDifferent(resource, 'clinicalStatus', concept(CONDITION_CLINICAL, 'inactive', 'Inactive')) || changed;
  },
};

type AllergyCategory = 'food' | 'medication' | 'environment' | 'biologic';

/** Allergy types (the Allergy - Intolerance Observation's value): what the allergy is to and of which kind. */
const ALLERGY_TYPES: Record<string, { category?: AllergyCategory; type?: 'allergy' | 'intolerance'; noKnown: [string, string] }> = {
  '416098002': { category: 'medication', type: 'allergy', noKnown: ['409137002', 'No known drug allergy'] },
  '59037007': { category: 'medication', type: 'intolerance', noKnown: ['409137002', 'No known drug allergy'] },
  '419511003': { category: 'medication', noKnown: ['409137002', 'No known drug allergy'] },
  '414285001': { category: 'food', type: 'allergy', noKnown: ['429625007', 'No known food allergy'] },
  '235719002': { category: 'food', type: 'intolerance', noKnown: ['429625007', 'No known food allergy'] },
  '418471000': { category: 'food', noKnown: ['429625007', 'No known food allergy'] },
  '426232007': { category: 'environment', type: 'allergy', noKnown: ['428607008', 'No known environmental allergy'] },
  '232347008': { category: 'environment', type: 'allergy', noKnown: ['428607008', 'No known environmental allergy'] },
  '419199007': { type: 'allergy', noKnown: ['716186003', 'No known allergy'] },
  '418038007': { noKnown: ['716186003', 'No known allergy'] },
  '420134006': { noKnown: ['716186003', 'No known allergy'] },
  '609328004': { type: 'allergy', noKnown: ['716186003', 'No known allergy'] },
};
const NO_KNOWN_ALLERGY: [string, string] = ['716186003', 'No known allergy'];

/** Code systems of medicinal products: a substance coded in one is a medication. */
const DRUG_SYSTEMS = new Set(['2.16.840.1.113883.6.88', '2.16.840.1.113883.6.69', '2.16.840.1.113883.3.26.1.5', '2.16.840.1.113883.6.345', '2.16.840.1.113883.4.209']);
/** Substances that are no food nor drug whatever the allergy type says: latex (SNOMED substance codes). */
const ENVIRONMENT_SUBSTANCES = new Set(['111088007', '1003755004', '406464009', '256417003']);

function substanceOf(observation: CcdaNode): CcdaNode | undefined {
  for (const participant of listOf(observation.participant)) {
    if (!isCcdaNode(participant)) continue;
    const entity = firstNode(firstNode(participant.participantRole)?.playingEntity);
    const code = firstNode(entity?.code);
    if (code) return code;
  }
  return undefined;
}

/** "Substance" and "drug or medicament": a negated allergy to these says "no known (drug) allergies". */
const GENERIC_SUBSTANCES = new Set(['105590001', '410942007']);

/** Whether the substance element names anything in particular: a code, or text of its own. */
function namesASubstance(code: CcdaNode | undefined): boolean {
  if (!code) return false;
  const coded = codeOfConcept(code);
  if (coded !== undefined) return !GENERIC_SUBSTANCES.has(coded);
  if (listOf(code.translation).some((translation) => codeOfConcept(translation) !== undefined)) return true;
  return typeof code.originalText === 'string' && code.originalText.trim() !== '';
}

function allergyCategoryOf(allergyType: string | undefined, substance: CcdaNode | undefined): AllergyCategory | undefined {
  const codes = substance ? [substance, ...listOf(substance.translation).filter(isCcdaNode)] : [];
  if (codes.some((code) => ENVIRONMENT_SUBSTANCES.has(attributeOf(code, 'code') ?? ''))) return 'environment';
  // A substance coded as a medicinal product is one, whatever allergy type was picked for it.
  if (codes.some((code) => DRUG_SYSTEMS.has(attributeOf(code, 'codeSystem') ?? ''))) return 'medication';
  return allergyType === undefined ? undefined : ALLERGY_TYPES[allergyType]?.category;
}

/**
 * An allergy's category and type from the data: a substance coded as a medicinal product (RxNorm, NDC,
 * NDF-RT) is a medication and latex environmental, else the allergy type the document gives says. The converter files
 * every allergy under `food` (penicillin and latex included); where nothing tells, there is no category.
 */
export const allergyCategoryAndType: RepairRule = {
  name: 'allergy category and type',
  apply(resource, context) {
    if (resource.resourceType !== 'AllergyIntolerance') return false;
    const found = statementOf(resource, context);
    if (!found) return false;
    const allergyType = codeOfConcept(firstNode(found.statement.value));
    const category = allergyCategoryOf(allergyType, substanceOf(found.statement));
    const type = allergyType === undefined ? undefined : ALLERGY_TYPES[allergyType]?.type;
    let changed = false;
    if (category === undefined) {
      if (resource.category !== undefined) {
        delete resource.category;
        changed = true;
      }
    } else changed = setIfDifferent(resource, 'category', [category]);
    if (type === undefined) {
      if (resource.type !== undefined) {
        delete resource.type;
        changed = true;
      }
    } else changed = setIfDifferent(resource, 'type', type) || changed;
    return changed;
  },
};

export const negatedAllergies: RepairRule = {
  name: 'negated allergies refuted',
  apply(resource, context) {
    if (resource.resourceType !== 'AllergyIntolerance') return false;
    const found = statementOf(resource, context);
    if (!found || !isTrue(found.statement, 'negationInd')) return false;
    if (namesASubstance(substanceOf(found.statement))) {
      const changed = setIfDifferent(resource, 'verificationStatus', concept(ALLERGY_VERIFICATION, 'refuted', 'Refuted'));
      return setIfDifferent(resource, 'clinicalStatus', concept(ALLERGY_CLINICAL, 'inactive', 'Inactive')) || changed;
    }
    // No substance: the statement is that there is no known allergy (of the type given).
    const allergyType = codeOfConcept(firstNode(found.statement.value));
    const [code, display] = (allergyType === undefined ? undefined : ALLERGY_TYPES[allergyType]?.noKnown) ?? NO_KNOWN_ALLERGY;
    let changed = setIfDifferent(resource, 'code', concept(SNOMED, code, display));
    changed = setIfDifferent(resource, 'verificationStatus', concept(ALLERGY_VERIFICATION, 'confirmed', 'Confirmed')) || changed;
    changed = setIfDifferent(resource, 'clinicalStatus', concept(ALLERGY_CLINICAL, 'active', 'Active')) || changed;
    for (const key of ['category', 'type', 'reaction', 'criticality']) {
      if (resource[key] === undefined) continue;
      delete resource[key];
      changed = true;
    }
    return changed;
  },
};

/** Procedure statuses by the statement's statusCode. */
const PROCEDURE_STATUS: Record<string, string> = {
  completed: 'completed',
  active: 'in-progress',
  aborted: 'stopped',
  cancelled: 'not-done',
  held: 'on-hold',
  suspended: 'on-hold',
  new: 'preparation',
  nullified: 'entered-in-error',
};

/**
 * A procedure's status is the statement's: a negated procedure (refused, not done) is `not-done` with the
 * reason the document gives; aborted is `stopped`. The converter calls every procedure `completed`.
 */
export const procedureStatus: RepairRule = {
  name: 'procedure status',
  apply(resource, context) {
    if (resource.resourceType !== 'Procedure') return false;
    const found = statementOf(resource, context);
    if (!found) return false;
    const negated = isTrue(found.statement, 'negationInd');
    const status = negated ? 'not-done' : PROCEDURE_STATUS[statusCodeOf(found.statement) ?? ''];
    if (!status) return false;
    let changed = setIfDifferent(resource, 'status', status);
    const reason = negated ? reasonOf(found.statement) : undefined;
    if (reason) changed = setIfDifferent(resource, 'statusReason', reason) || changed;
    return changed;
  },
};

/**
 * An immunization the document says was not given (`negationInd="true"`: refused, or deferred) is
 * `not-done`, with the reason it gives (patient objection, ...): the converter reads it as `completed`,
 * recording a vaccine the patient never had.
 */
export const refusedImmunizationsNotDone: RepairRule = {
  name: 'refused immunizations not done',
  apply(resource, context) {
    if (resource.resourceType !== 'Immunization') return false;
    const found = statementOf(resource, context);
    if (!found) return false;
    if (!isTrue(found.statement, 'negationInd')) {
      return statusCodeOf(found.statement) === 'nullified' ? setIfDifferent(resource, 'status', 'entered-in-error') : false;
    }
    let changed = setIfDifferent(resource, 'status', 'not-done');
    const reason = reasonOf(found.statement);
    if (reason) changed = setIfDifferent(resource, 'statusReason', reason) || changed;
    return changed;
  },
};

/**
 * Medications as the document states them: a negated order is an order not to give it (`doNotPerform`);
 * a negated history (`not-taken`) keeps the reason; a withdrawn one is `entered-in-error`.
 */
export const medicationAssertions: RepairRule = {
  name: 'medication negation and status',
  apply(resource, context) {
    if (resource.resourceType !== 'MedicationRequest' && resource.resourceType !== 'MedicationStatement') return false;
    const found = statementOf(resource, context);
    if (!found) return false;
    const negated = isTrue(found.statement, 'negationInd');
    let changed = false;
    if (statusCodeOf(found.statement) === 'nullified') changed = setIfDifferent(resource, 'status', 'entered-in-error');
    if (!negated) return changed;
    const reason = reasonOf(found.statement);
    if (resource.resourceType === 'MedicationRequest') {
      changed = setIfDifferent(resource, 'doNotPerform', true) || changed;
      if (reason) changed = setIfDifferent(resource, 'reasonCode', [reason]) || changed;
    } else {
      changed = setIfDifferent(resource, 'status', 'not-taken') || changed;
      if (reason) changed = setIfDifferent(resource, 'statusReason', [reason]) || changed;
    }
    return changed;
  },
};

/** Result and observation statuses by the statement's statusCode (a pending component is not `final`). */
const OBSERVATION_STATUS: Record<string, string> = {
  completed: 'final',
  active: 'preliminary',
  new: 'registered',
  held: 'registered',
  suspended: 'registered',
  aborted: 'cancelled',
  cancelled: 'cancelled',
  nullified: 'entered-in-error',
};

export const observationStatus: RepairRule = {
  name: 'observation status',
  apply(resource, context) {
    if (resource.resourceType !== 'Observation') return false;
    const source = context?.sourceOf(resource);
    const status = OBSERVATION_STATUS[statusCodeOf(source) ?? ''];
    return status ? setIfDifferent(resource, 'status', status) : false;
  },
};

/** A withdrawn (`nullified`) problem or allergy: the record was made in error, it states nothing about the patient. */
export const nullifiedRecords: RepairRule = {
  name: 'nullified records entered in error',
  apply(resource, context) {
    if (resource.resourceType !== 'Condition' && resource.resourceType !== 'AllergyIntolerance') return false;
    const found = statementOf(resource, context);
    if (!found || (statusCodeOf(found.statement) !== 'nullified' && statusCodeOf(found.source) !== 'nullified')) return false;
    const system = resource.resourceType === 'Condition' ? CONDITION_VERIFICATION : ALLERGY_VERIFICATION;
    const changed = setIfDifferent(resource, 'verificationStatus', concept(system, 'entered-in-error', 'Entered in Error'));
    if (resource.clinicalStatus === undefined) return changed;
    delete resource.clinicalStatus;
    return true;
  },
};

const NOT_PREGNANT = concept(SNOMED, '60001007', 'Not pregnant');
const PREGNANCY_STATUS = concept(LOINC, '82810-3', 'Pregnancy status');

/** Whether the statement is a pregnancy observation: its template, or the assertion of pregnancy (77386006). */
function isPregnancyObservation(statement: CcdaNode): boolean {
  return hasTemplate(statement, PREGNANCY_OBSERVATION) || attributeOf(firstNode(statement.value), 'code') === '77386006';
}

/**
 * A negated observation has no FHIR R4 form in general (an Observation states what was observed). The one
 * with a faithful form: "not pregnant" is the pregnancy status with the value "not pregnant". Any other
 * negated statement is left out (see leaveOutWhatIsNotAsserted).
 */
export const notPregnant: RepairRule = {
  name: 'not pregnant',
  apply(resource, context) {
    if (resource.resourceType !== 'Observation') return false;
    const found = statementOf(resource, context);
    if (!found || !isTrue(found.statement, 'negationInd') || !isPregnancyObservation(found.statement)) return false;
    let changed = setIfDifferent(resource, 'code', PREGNANCY_STATUS);
    return setIfDifferent(resource, 'valueCodeableConcept', NOT_PREGNANT) || changed;
  },
};

/** Resource types whose rules above write every negated statement in its faithful form. */
const NEGATION_FORMS = new Set(['Condition', 'AllergyIntolerance', 'Procedure', 'Immunization', 'MedicationRequest', 'MedicationStatement']);

/**
 * What the document does not assert stays out of the clinical resources: a statement that is itself
 * null-flavored ("no information": `<substanceAdministration nullFlavor="NI">`), a negated statement of a
 * kind FHIR R4 has no form for (an observation that something is absent, an encounter that did not
 * happen), and a resource with nothing to say (an observation with no code, an immunization with no
 * vaccine and no date). The reason is recorded; the document keeps the statement.
 */
export const leaveOutWhatIsNotAsserted: RepairRule = {
  name: 'left out: not asserted',
  apply(resource, context) {
    const found = statementOf(resource, context);
    if (!found || !context?.leaveOut) return false;
    const { statement, source } = found;
    const nullFlavor = attributeOf(source, 'nullFlavor') ?? attributeOf(statement, 'nullFlavor');
    if (nullFlavor) {
      context.leaveOut(resource, `the ${elementName(resource)} states no information (nullFlavor ${nullFlavor})`);
      return true;
    }
    // "Not pregnant" has its faithful form (see notPregnant); no other negated observation does.
    const faithful = NEGATION_FORMS.has(resource.resourceType) || (resource.resourceType === 'Observation' && isPregnancyObservation(statement));
    if (isTrue(statement, 'negationInd') && !faithful) {
      context.leaveOut(resource, `a negated ${elementName(resource)} has no faithful FHIR R4 form`);
      return true;
    }
    if (resource.resourceType === 'Observation' && !hasCode(resource.code)) {
      // An observation named in words only (its code's original text) keeps those words, as a drug or a
      // problem does; words that deny ("No vital signs") name nothing.
      const named = narratedName(firstNode(statement.code), context);
      if (named !== undefined && named.trim() !== '' && !isNegativePhrase(named)) resource.code = { ...((resource.code as CodeableConcept | undefined) ?? {}), text: named.trim() };
    }
    const words = (resource.code as CodeableConcept | undefined)?.text;
    if (resource.resourceType === 'Observation' && (!hasCode(resource.code) || (!hasCoding(resource.code) && words !== undefined && isNegativePhrase(words)))) {
      context.leaveOut(resource, 'an observation without a code');
      return true;
    }
    // An immunization names its vaccine by a code: "no immunization data is applicable" written where the
    // vaccine goes would otherwise read as a vaccine given.
    if (resource.resourceType === 'Immunization' && !hasCoding(resource.vaccineCode)) {
      context.leaveOut(resource, 'an immunization without a coded vaccine');
      return true;
    }
    if ((resource.resourceType === 'MedicationStatement' || resource.resourceType === 'MedicationRequest') && resource.medicationReference === undefined && !hasCoding(resource.medicationCodeableConcept)) {
      const text = drugText(statement, context);
      if (text === undefined || isNegativePhrase(text)) {
        context.leaveOut(resource, 'a medication entry that names no drug');
        return true;
      }
      resource.medicationCodeableConcept = { text };
      return true;
    }
    // A problem or a procedure named by no code, and by no words or by words that deny it ("No problem
    // data is applicable" written where the problem goes), is no problem or procedure at all.
    if ((resource.resourceType === 'Condition' || resource.resourceType === 'Procedure') && !hasCoding(resource.code)) {
      const named = (resource.code as CodeableConcept | undefined)?.text ?? narratedName(firstNode(resource.resourceType === 'Condition' ? statement.value : statement.code), context);
      if (named !== undefined && (resource.code as CodeableConcept | undefined)?.text === undefined && !isNegativePhrase(named)) {
        resource.code = { ...((resource.code as CodeableConcept | undefined) ?? {}), text: named };
      }
      const text = named;
      if (text === undefined || text.trim() === '' || isNegativePhrase(text)) {
        context.leaveOut(resource, `a ${resource.resourceType === 'Condition' ? 'problem' : 'procedure'} entry that names none`);
        return true;
      }
    }
    return false;
  },
};

/** What a coded element names in words: its original text, inline or in the narrative it points to. */
const narratedName = (element: CcdaNode | undefined, context: RepairContext) => textOfElement(element?.originalText, context.narrative);

/** Free text that says there is nothing ("No medication data is applicable", "None", "Not applicable"). */
export const isNegativePhrase = (text: string): boolean => /^\s*(no|none|not|nil|n\/a)\b/i.test(text);

function hasCoding(value: unknown): boolean {
  return ((value as CodeableConcept | undefined)?.coding ?? []).some((coding) => typeof coding.code === 'string' && coding.code !== '');
}

/** The drug of a medication activity named in words only: the material's original text or name, the narrative either points to. */
function drugText(statement: CcdaNode, context: RepairContext): string | undefined {
  const material = firstNode(firstNode(firstNode(statement.consumable)?.manufacturedProduct)?.manufacturedMaterial);
  // Last, the entry's own narrative: a drug with no code and no name is often named only there.
  const own = attributeOf(firstNode(firstNode(statement.text)?.reference), 'value');
  const candidates = [narratedName(firstNode(material?.code), context), ...listOf(material?.name).map(textOf), own ? context.narrative?.(own) : undefined];
  return candidates.find((text) => text !== undefined && text !== '');
}

function hasCode(value: unknown): boolean {
  const cc = value as CodeableConcept | undefined;
  return (cc?.coding ?? []).some((coding) => typeof coding.code === 'string' && coding.code !== '') || (typeof cc?.text === 'string' && cc.text.trim() !== '');
}

function elementName(resource: FhirResource): string {
  return resource.resourceType === 'Observation' ? 'observation' : `${resource.resourceType} entry`;
}

/** Goal.lifecycleStatus is required: it is the goal's statusCode, `active` for a goal that states none. */
const GOAL_STATUS: Record<string, string> = {
  active: 'active',
  completed: 'completed',
  cancelled: 'cancelled',
  aborted: 'cancelled',
  suspended: 'on-hold',
  held: 'on-hold',
  new: 'proposed',
  nullified: 'entered-in-error',
};

export const goalLifecycleStatus: RepairRule = {
  name: 'goal lifecycle status',
  apply(resource, context) {
    if (resource.resourceType !== 'Goal') return false;
    const status = GOAL_STATUS[statusCodeOf(context?.sourceOf(resource)) ?? ''];
    if (status) return setIfDifferent(resource, 'lifecycleStatus', status);
    if (resource.lifecycleStatus !== undefined) return false;
    resource.lifecycleStatus = 'active';
    return true;
  },
};

/** Every coding's system as FHIR's canonical URI where FHIR has one (see code-systems.ts), at any depth. */
export const canonicalCodeSystems: RepairRule = {
  name: 'canonical code systems',
  apply(resource) {
    let changed = false;
    const visit = (value: unknown): void => {
      if (Array.isArray(value)) {
        for (const item of value) if (typeof item === 'object' && item !== null) visit(item);
        return;
      }
      const record = value as Json;
      for (const key in record) {
        const child = record[key];
        if (key === 'coding' && Array.isArray(child)) {
          for (const coding of child as Coding[]) {
            if (typeof coding?.system !== 'string' || !coding.system.startsWith('urn:oid:')) continue;
            const system = canonicalSystem(coding.system);
            if (system === coding.system) continue;
            coding.system = system;
            changed = true;
          }
        } else if (typeof child === 'object' && child !== null) visit(child);
      }
    };
    visit(resource);
    return changed;
  },
};

/** The assertion rules, in the order they apply (the last one leaves out what is not asserted). */
export const ASSERTION_RULES: readonly RepairRule[] = [
  negatedProblems,
  allergyCategoryAndType,
  negatedAllergies,
  nullifiedRecords,
  procedureStatus,
  refusedImmunizationsNotDone,
  medicationAssertions,
  observationStatus,
  notPregnant,
  goalLifecycleStatus,
  canonicalCodeSystems,
  leaveOutWhatIsNotAsserted,
];
