import type { FhirResource } from '../../core/ports/ccda.port.js';

/**
 * Repairs of @medplum/ccda's output, one named rule per known defect, each applied to every resource the
 * converter produced. A rule changes only what it knows to be wrong and leaves right output as it is.
 */

type Coding = { system?: string; code?: string; display?: string };
type CodeableConcept = { coding?: Coding[]; text?: string };

export const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm';
const NDC = 'http://hl7.org/fhir/sid/ndc';
export const CVX = 'http://hl7.org/fhir/sid/cvx';
/** What the converter writes for CVX: the HL7 code system OID's old home, not the FHIR URI. */
const CONVERTER_CVX = 'http://nucc.org/cvx';

export interface RepairRule {
  name: string;
  /** Repairs the resource in place; returns whether it changed anything. */
  apply(resource: FhirResource): boolean;
}

/**
 * An allergy whose substance is coded in RxNorm or NDC is an allergy to a medication. The converter files
 * every allergy under `food` (penicillin, codeine, aspirin included), which a clinician reading the
 * record would take at its word.
 */
export const drugAllergyIsMedication: RepairRule = {
  name: 'drug allergy category',
  apply(resource) {
    if (resource.resourceType !== 'AllergyIntolerance') return false;
    const code = resource.code as CodeableConcept | undefined;
    const drug = (code?.coding ?? []).some((coding) => coding.system === RXNORM || coding.system === NDC);
    if (!drug) return false;
    const category = resource.category as string[] | undefined;
    if (category?.length === 1 && category[0] === 'medication') return false;
    resource.category = ['medication'];
    return true;
  },
};

/** Vaccine codes carry FHIR's CVX system URI, so a reader (or a query by system) recognises them. */
export const cvxSystem: RepairRule = {
  name: 'CVX code system',
  apply(resource) {
    let changed = false;
    const visit = (concept: CodeableConcept | undefined) => {
      for (const coding of concept?.coding ?? []) {
        if (coding.system === CONVERTER_CVX) {
          coding.system = CVX;
          changed = true;
        }
      }
    };
    if (resource.resourceType === 'Immunization') visit(resource.vaccineCode as CodeableConcept | undefined);
    return changed;
  },
};

export const REPAIR_RULES: readonly RepairRule[] = [drugAllergyIsMedication, cvxSystem];

/** Applies every rule to every resource; returns how many resources each rule changed, by rule name. */
export function repairConvertedResources(resources: readonly FhirResource[], rules: readonly RepairRule[] = REPAIR_RULES): Record<string, number> {
  const changed: Record<string, number> = {};
  for (const rule of rules) {
    let count = 0;
    for (const resource of resources) if (rule.apply(resource)) count++;
    changed[rule.name] = count;
  }
  return changed;
}
