/**
 * fast-check generators of a patient's FHIR resources as several documents would give them: few codes,
 * dates and values (so duplicates are frequent), references between the resources, and some references
 * to resources that are not there (dangling before any processing).
 */
import fc from 'fast-check';
import type { FhirResource } from '../../core/ports/ccda.port.js';

const SNOMED = 'http://snomed.info/sct';
const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm';
const LOINC = 'http://loinc.org';
const CVX = 'http://hl7.org/fhir/sid/cvx';
const ICD10 = 'http://hl7.org/fhir/sid/icd-10-cm';

export interface Coding {
  system: string;
  code: string;
  display: string;
}

export const CONDITION_CODES: Coding[] = [
  { system: SNOMED, code: '233604007', display: 'Pneumonia' },
  { system: SNOMED, code: '195967001', display: 'Asthma' },
  { system: SNOMED, code: '44054006', display: 'Type 2 diabetes mellitus' },
];
export const ALLERGY_CODES: Coding[] = [
  { system: RXNORM, code: '70618', display: 'Penicillin' },
  { system: RXNORM, code: '2670', display: 'Codeine' },
];
export const DRUG_CODES: Coding[] = [
  { system: RXNORM, code: '197380', display: 'atenolol 25 MG Oral Tablet' },
  { system: RXNORM, code: '573621', display: 'albuterol 0.09 MG/ACTUAT' },
  { system: RXNORM, code: '860975', display: 'metformin 500 MG Oral Tablet' },
];
export const VACCINE_CODES: Coding[] = [
  { system: CVX, code: '88', display: 'influenza virus vaccine' },
  { system: CVX, code: '33', display: 'pneumococcal polysaccharide vaccine' },
];
export const OBSERVATION_CODES: Coding[] = [
  { system: LOINC, code: '8867-4', display: 'Heart rate' },
  { system: LOINC, code: '8480-6', display: 'Systolic blood pressure' },
  { system: LOINC, code: '2339-0', display: 'Glucose' },
];
/** A secondary coding some resources carry after their primary one (a translation). */
export const TRANSLATION: Coding = { system: ICD10, code: 'J18.9', display: 'Pneumonia, unspecified organism' };

const DATES = ['2012-08-06', '2012-08-06T10:30:00-05:00', '2014-06-09'];
const REFERENCE_TYPES = ['Patient', 'Practitioner', 'Organization', 'Encounter', 'Location'] as const;

function concept(pool: Coding[], choice: { index: number; translated: boolean } | undefined) {
  if (!choice) return { text: 'free text only' };
  const primary = pool[choice.index]!;
  return { coding: choice.translated ? [primary, TRANSLATION] : [primary], text: primary.display };
}

const referenceChoice = fc.record({
  type: fc.constantFrom(...REFERENCE_TYPES),
  index: fc.nat({ max: 3 }),
  // Points at an id that is never generated: a reference that dangles from the start.
  dangling: fc.nat({ max: 9 }).map((n) => n === 0),
});

const clinicalShape = fc.record({
  kind: fc.constantFrom('Condition', 'AllergyIntolerance', 'Immunization', 'Observation', 'MedicationRequest', 'MedicationStatement', 'Medication', 'DiagnosticReport'),
  coding: fc.record({ index: fc.nat({ max: 2 }), translated: fc.boolean() }),
  coded: fc.nat({ max: 6 }).map((n) => n !== 0),
  date: fc.option(fc.constantFrom(...DATES), { nil: undefined }),
  value: fc.option(fc.constantFrom(72, 120), { nil: undefined }),
  note: fc.option(fc.constantFrom('seen at clinic', 'patient reports improvement'), { nil: undefined }),
  refs: fc.array(referenceChoice, { maxLength: 3 }),
  medicationBy: fc.constantFrom('concept', 'reference', 'contained'),
  targets: fc.array(fc.nat({ max: 30 }), { maxLength: 3 }),
});

export interface PatientResourcesOptions {
  maxClinical?: number;
}

/**
 * A patient's resources: one Patient, up to 4 each of Practitioner, Organization, Encounter and Location,
 * and up to `maxClinical` (default 30) coded resources that reference them (and each other: a
 * DiagnosticReport's `result`, an Observation's `hasMember`, a MedicationRequest's `medicationReference`).
 * Ids are unique.
 */
export function patientResourcesArb(options: PatientResourcesOptions = {}): fc.Arbitrary<FhirResource[]> {
  return fc
    .record({
      supporting: fc.record({
        Practitioner: fc.nat({ max: 4 }),
        Organization: fc.nat({ max: 4 }),
        Encounter: fc.nat({ max: 4 }),
        Location: fc.nat({ max: 4 }),
      }),
      clinical: fc.array(clinicalShape, { maxLength: options.maxClinical ?? 30, size: 'medium' }),
    })
    .map(({ supporting, clinical }) => build(supporting, clinical));
}

type Shape = typeof clinicalShape extends fc.Arbitrary<infer T> ? T : never;

function build(supporting: Record<string, number>, clinical: Shape[]): FhirResource[] {
  const resources: FhirResource[] = [{ resourceType: 'Patient', id: 'p0', name: [{ family: 'Doe', given: ['Jane'] }], birthDate: '1980-01-01' }];
  const counts: Record<string, number> = { Patient: 1 };
  for (const [type, count] of Object.entries(supporting)) {
    counts[type] = count;
    for (let i = 0; i < count; i++) {
      const resource: FhirResource = { resourceType: type, id: `${type.toLowerCase()}-${i}` };
      if (type === 'Practitioner') resource.name = [{ family: `Doctor${i}` }];
      if (type === 'Organization' || type === 'Location') resource.name = `${type} ${i}`;
      if (type === 'Encounter') resource.period = { start: DATES[i % DATES.length] };
      resources.push(resource);
    }
  }

  const referenceTo = (choice: Shape['refs'][number]): { reference: string } => {
    const count = counts[choice.type] ?? 0;
    if (choice.dangling || count === 0) return { reference: `${choice.type}/absent-${choice.index}` };
    const index = choice.index % count;
    return { reference: choice.type === 'Patient' ? 'Patient/p0' : `${choice.type}/${choice.type.toLowerCase()}-${index}` };
  };

  const clinicalIds = clinical.map((shape, i) => `${shape.kind.toLowerCase()}-${i}`);
  clinical.forEach((shape, i) => {
    const id = clinicalIds[i]!;
    const choice = shape.coded ? shape.coding : undefined;
    const resource: FhirResource = { resourceType: shape.kind, id };
    const refs = shape.refs.map(referenceTo);
    if (refs[0]) resource.subject = refs[0];
    if (refs[1]) resource.encounter = refs[1];
    if (refs[2]) resource.performer = [refs[2]];
    if (shape.note) resource.note = [{ text: shape.note }];
    // Any clinical resource may point at others, so merged resources are often referenced.
    const reasons = shape.targets
      .map((t) => t % clinical.length)
      .filter((t) => t !== i)
      .map((t) => ({ reference: `${clinical[t]!.kind}/${clinicalIds[t]}` }));
    if (reasons.length > 0) resource.reasonReference = reasons;
    const targetsOf = (type: string) =>
      shape.targets
        .map((t) => clinicalIds[t % Math.max(1, clinicalIds.length)])
        .filter((target): target is string => target !== undefined && target !== id && target.startsWith(type.toLowerCase() + '-'))
        .map((target) => ({ reference: `${type}/${target}` }));

    switch (shape.kind) {
      case 'Condition':
        resource.code = concept(CONDITION_CODES, choice);
        if (shape.date) resource.onsetDateTime = shape.date;
        break;
      case 'AllergyIntolerance':
        resource.code = concept(ALLERGY_CODES, choice && { ...choice, index: choice.index % ALLERGY_CODES.length });
        if (shape.date) resource.recordedDate = shape.date;
        break;
      case 'Immunization':
        resource.vaccineCode = concept(VACCINE_CODES, choice && { ...choice, index: choice.index % VACCINE_CODES.length });
        if (shape.date) resource.occurrenceDateTime = shape.date;
        break;
      case 'Observation':
        resource.code = concept(OBSERVATION_CODES, choice);
        if (shape.date) resource.effectiveDateTime = shape.date;
        if (shape.value !== undefined) resource.valueQuantity = { value: shape.value, unit: shape.value > 100 ? 'mm[Hg]' : '/min' };
        {
          const members = targetsOf('Observation');
          if (members.length > 0) resource.hasMember = members;
        }
        break;
      case 'Medication':
        resource.code = concept(DRUG_CODES, choice);
        break;
      case 'MedicationRequest':
      case 'MedicationStatement': {
        if (shape.date) resource[shape.kind === 'MedicationRequest' ? 'authoredOn' : 'effectiveDateTime'] = shape.date;
        const medications = targetsOf('Medication');
        if (shape.medicationBy === 'reference' && medications[0]) {
          resource.medicationReference = medications[0];
        } else if (shape.medicationBy === 'contained') {
          resource.contained = [{ resourceType: 'Medication', id: 'med', code: concept(DRUG_CODES, choice) }];
          resource.medicationReference = { reference: '#med' };
        } else {
          resource.medicationCodeableConcept = concept(DRUG_CODES, choice);
        }
        break;
      }
      case 'DiagnosticReport': {
        resource.code = concept(OBSERVATION_CODES, choice);
        if (shape.date) resource.issued = shape.date;
        const results = targetsOf('Observation');
        if (results.length > 0) resource.result = results;
        break;
      }
    }
    resources.push(resource);
  });
  return resources;
}

/** The same resources in another order. */
export function shuffled<T>(items: readonly T[]): fc.Arbitrary<T[]> {
  return fc.shuffledSubarray([...items], { minLength: items.length, maxLength: items.length });
}
