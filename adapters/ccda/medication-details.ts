/**
 * What a Medication Activity says besides the drug and the dose, which the converter drops: the free-text
 * sig, timing it does not read (an event such as "at bedtime", a period range such as "every 4-6 hours"),
 * "as needed" and for what, the indication, the patient's instructions, and a mixture's ingredients.
 */
import { codeableConceptOf } from './assertions.js';
import { attributeOf, firstNode, hasTemplate, isCcdaNode, listOf, textOf, type CcdaNode } from './ccda-nodes.js';
import { textOfElement } from './narrative.js';
import type { RepairRule } from './repair-rule.js';

type Json = Record<string, unknown>;
const ENTRY = '2.16.840.1.113883.10.20.22.4.';
const FREE_TEXT_SIG = ENTRY + '147';
const INDICATION = ENTRY + '19';
const INSTRUCTION = ENTRY + '20';
const UCUM = 'http://unitsofmeasure.org';

/** Units of time as FHIR Timing's periodUnit. */
const PERIOD_UNITS: Record<string, string> = { s: 's', min: 'min', h: 'h', d: 'd', wk: 'wk', mo: 'mo', a: 'a' };



function relationships(element: CcdaNode, typeCode: string, kind: 'observation' | 'act' | 'substanceAdministration'): CcdaNode[] {
  return listOf(element.entryRelationship).flatMap((relationship) =>
    isCcdaNode(relationship) && relationship['@_typeCode'] === typeCode ? listOf(relationship[kind]).filter(isCcdaNode) : [],
  );
}

/** Timing the converter does not read: an event (EIVL_TS: HS, AC, ...) with its offset, a PIVL_TS period given as a range. */
function timingRepeat(element: CcdaNode): Json {
  const repeat: Json = {};
  for (const time of listOf(element.effectiveTime).filter(isCcdaNode)) {
    const type = attributeOf(time, 'xsi:type');
    if (type === 'EIVL_TS') {
      const event = attributeOf(firstNode(time.event), 'code');
      if (event) repeat.when = [...((repeat.when as string[] | undefined) ?? []), event];
      const offset = firstNode(time.offset);
      const width = Number(attributeOf(firstNode(offset?.width), 'value') ?? attributeOf(offset, 'value'));
      const unit = attributeOf(firstNode(offset?.width), 'unit') ?? attributeOf(offset, 'unit');
      if (Number.isFinite(width) && width > 0) repeat.offset = Math.round(unit === 'h' ? width * 60 : unit === 'd' ? width * 1440 : width);
    } else if (type === 'PIVL_TS') {
      const period = firstNode(time.period);
      const low = firstNode(period?.low);
      const high = firstNode(period?.high);
      const unit = PERIOD_UNITS[attributeOf(low, 'unit') ?? attributeOf(high, 'unit') ?? ''];
      if (low && high && unit) {
        repeat.period = Number(attributeOf(low, 'value'));
        repeat.periodMax = Number(attributeOf(high, 'value'));
        repeat.periodUnit = unit;
      }
    }
  }
  return repeat;
}

/** A mixture named but not coded: a Medication with its name, form and ingredients (with their strengths). */
function mixtureOf(element: CcdaNode): Json | undefined {
  const material = firstNode(firstNode(firstNode(element.consumable)?.manufacturedProduct)?.manufacturedMaterial);
  if (!material) return undefined;
  const ingredients = listOf(material['pharm:ingredient']).filter(isCcdaNode).flatMap((ingredient) => {
    const substance = codeableConceptOf(firstNode(firstNode(ingredient['pharm:ingredientSubstance'])?.['pharm:code']));
    if (!substance) return [];
    const quantity = firstNode(ingredient['pharm:quantity']);
    const numerator = firstNode(quantity?.['pharm:numerator']);
    const denominator = firstNode(quantity?.['pharm:denominator']);
    const amount = (node: CcdaNode | undefined) => {
      const value = Number(attributeOf(node, 'value'));
      const unit = attributeOf(node, 'unit');
      return Number.isFinite(value) ? { value, ...(unit && unit !== '1' ? { unit, system: UCUM, code: unit } : {}) } : undefined;
    };
    const strength = numerator && denominator && amount(numerator) && amount(denominator) ? { numerator: amount(numerator), denominator: amount(denominator) } : undefined;
    return [{ itemCodeableConcept: substance, isActive: attributeOf(ingredient, 'classCode') === 'ACTI', ...(strength ? { strength } : {}) }];
  });
  const name = listOf(material.name).map(textOf).find((text) => text !== undefined);
  if (ingredients.length === 0 && !name) return undefined;
  const form = codeableConceptOf(firstNode(material['pharm:formCode']));
  return { ...(name ? { code: { text: name } } : {}), ...(form ? { form } : {}), ...(ingredients.length > 0 ? { ingredient: ingredients } : {}) };
}

const hasDrugCode = (concept: unknown) =>
  ((concept as { coding?: { code?: string }[] } | undefined)?.coding ?? []).some((coding) => typeof coding.code === 'string' && coding.code !== '');

export const medicationDetails: RepairRule = {
  name: 'medication details',
  apply(resource, context) {
    if (resource.resourceType !== 'MedicationRequest' && resource.resourceType !== 'MedicationStatement') return false;
    const source = context?.sourceOf(resource);
    if (!source) return false;
    const before = JSON.stringify(resource);
    const key = resource.resourceType === 'MedicationRequest' ? 'dosageInstruction' : 'dosage';
    const dosages = Array.isArray(resource[key]) ? (resource[key] as Json[]) : [];
    const dosage: Json = dosages[0] ?? {};

    const sig = relationships(source, 'COMP', 'substanceAdministration').find((element) => hasTemplate(element, FREE_TEXT_SIG));
    const sigText = sig ? textOfElement(sig.text, context?.narrative) : undefined;
    if (sigText) dosage.text = sigText;

    const repeat = timingRepeat(source);
    if (Object.keys(repeat).length > 0) {
      const timing = (dosage.timing as Json | undefined) ?? {};
      dosage.timing = { ...timing, repeat: { ...((timing.repeat as Json | undefined) ?? {}), ...repeat } };
    }

    const criterion = firstNode(firstNode(source.precondition)?.criterion);
    if (criterion) {
      const reason = codeableConceptOf(firstNode(criterion.value)) ?? (textOfElement(criterion.text, context?.narrative) ? { text: textOfElement(criterion.text, context?.narrative) } : undefined);
      delete dosage.asNeededBoolean;
      delete dosage.asNeededCodeableConcept;
      if (reason) dosage.asNeededCodeableConcept = reason;
      else dosage.asNeededBoolean = true;
    }

    const instructions = relationships(source, 'SUBJ', 'act')
      .filter((act) => hasTemplate(act, INSTRUCTION))
      .flatMap((act) => textOfElement(act.text, context?.narrative) ?? codeableConceptOf(firstNode(act.code))?.coding?.[0]?.display ?? []);
    if (instructions.length > 0) dosage.patientInstruction = instructions.join('\n');

    if (Object.keys(dosage).length > 0) resource[key] = [dosage, ...dosages.slice(1)];

    const indications = relationships(source, 'RSON', 'observation')
      .filter((observation) => hasTemplate(observation, INDICATION))
      .flatMap((observation) => codeableConceptOf(firstNode(observation.value)) ?? []);
    if (indications.length > 0) resource.reasonCode = indications;

    if (!hasDrugCode(resource.medicationCodeableConcept) && resource.medicationReference === undefined) {
      const mixture = mixtureOf(source);
      if (mixture) {
        const id = 'medication';
        resource.contained = [...((resource.contained as Json[] | undefined) ?? []).filter((item) => item.id !== id), { resourceType: 'Medication', id, ...mixture }];
        delete resource.medicationCodeableConcept;
        resource.medicationReference = { reference: `#${id}` };
      }
    }
    return JSON.stringify(resource) !== before;
  },
};
