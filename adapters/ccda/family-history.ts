import type { FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';
import { uuidFromSeed } from './stable-ids.js';
import { attributeOf, hasTemplate, isCcdaNode, listOf, type CcdaNode } from './ccda-nodes.js';
import { identifierOf } from './source-repairs.js';
import { sectionsOf } from './tree-rules.js';

/**
 * Family history, read from the C-CDA itself. @medplum/ccda turns each Family History Organizer into an
 * Observation about the PATIENT, its relatives' conditions into member Observations about the patient
 * too (a father's myocardial infarction would read as the patient's). Here the organizers become
 * FamilyMemberHistory resources (relationship, sex, birth, each condition with its onset and whether it
 * caused death), and what the converter made of the Family History section is removed.
 */

const FAMILY_HISTORY_ORGANIZER = '2.16.840.1.113883.10.20.22.4.45';
const FAMILY_HISTORY_OBSERVATION = '2.16.840.1.113883.10.20.22.4.46';
const FAMILY_HISTORY_DEATH = '2.16.840.1.113883.10.20.22.4.47';
const FAMILY_HISTORY_SECTION_LOINC = '10157-6';
const FAMILY_HISTORY_SECTION = '2.16.840.1.113883.10.20.22.2.15';

/** C-CDA code systems (OIDs) the family history uses, as FHIR system URIs. */
const SYSTEMS: Record<string, string> = {
  '2.16.840.1.113883.6.96': 'http://snomed.info/sct',
  '2.16.840.1.113883.5.111': 'http://terminology.hl7.org/CodeSystem/v3-RoleCode',
  '2.16.840.1.113883.6.90': 'http://hl7.org/fhir/sid/icd-10-cm',
  '2.16.840.1.113883.6.103': 'http://hl7.org/fhir/sid/icd-9-cm',
  '2.16.840.1.113883.6.1': 'http://loinc.org',
  '2.16.840.1.113883.5.1': 'http://terminology.hl7.org/CodeSystem/v3-AdministrativeGender',
};


/** The nodes with a template, in document order. */
function nodesWithTemplate(tree: unknown, root: string, found: CcdaNode[] = []): CcdaNode[] {
  if (Array.isArray(tree)) for (const item of tree) nodesWithTemplate(item, root, found);
  else if (isCcdaNode(tree)) {
    if (hasTemplate(tree, root)) found.push(tree);
    else for (const value of Object.values(tree)) nodesWithTemplate(value, root, found);
  }
  return found;
}

function codeableConcept(code: unknown): { coding: { system?: string; code: string; display?: string }[]; text?: string } | undefined {
  const codings = [code, ...listOf(isCcdaNode(code) ? code.translation : undefined)].flatMap((node) => {
    const value = attributeOf(node, 'code');
    if (!value) return [];
    const oid = attributeOf(node, 'codeSystem');
    const system = oid === undefined ? undefined : (SYSTEMS[oid] ?? `urn:oid:${oid}`);
    const display = attributeOf(node, 'displayName');
    return [{ ...(system ? { system } : {}), code: value, ...(display ? { display } : {}) }];
  });
  if (codings.length === 0) return undefined;
  const text = attributeOf(code, 'displayName');
  return { coding: codings, ...(text ? { text } : {}) };
}

/** An HL7 TS (`1967`, `196703`, `19670315...`) as a FHIR date of the same precision; undefined when not one. */
function fhirDate(ts: string | undefined): string | undefined {
  const match = ts === undefined ? null : /^(\d{4})(\d{2})?(\d{2})?/.exec(ts);
  if (!match) return undefined;
  const [, year, month, day] = match;
  if (month !== undefined && (Number(month) < 1 || Number(month) > 12)) return year;
  if (day !== undefined && (Number(day) < 1 || Number(day) > 31)) return `${year}-${month}`;
  return [year, month, day].filter(Boolean).join('-');
}

function familyMemberHistory(organizer: CcdaNode, index: number, patientReference: unknown, seed: string, idsOf: (element: CcdaNode) => unknown[]): FhirResource {
  const related = isCcdaNode(organizer.subject) && isCcdaNode(organizer.subject.relatedSubject) ? organizer.subject.relatedSubject : undefined;
  const person = related && isCcdaNode(related.subject) ? related.subject : undefined;
  const sexCode = attributeOf(person?.administrativeGenderCode, 'code');
  const born = fhirDate(attributeOf(listOf(person?.birthTime)[0], 'value'));
  const observations = listOf(organizer.component).flatMap((component) => listOf(isCcdaNode(component) ? component.observation : undefined)).filter(isCcdaNode);
  const conditions = observations
    .filter((observation) => hasTemplate(observation, FAMILY_HISTORY_OBSERVATION))
    .flatMap((observation) => {
      const code = codeableConcept(observation.value);
      if (!code) return [];
      const effective = listOf(observation.effectiveTime)[0];
      const onset = fhirDate(attributeOf(effective, 'value') ?? attributeOf(isCcdaNode(effective) ? effective.low : undefined, 'value'));
      const causedDeath = listOf(observation.entryRelationship).some((relationship) =>
        listOf(isCcdaNode(relationship) ? relationship.observation : undefined).some((inner) => isCcdaNode(inner) && hasTemplate(inner, FAMILY_HISTORY_DEATH)),
      );
      return [{ code, ...(onset ? { onsetPeriod: { start: onset } } : {}), ...(causedDeath ? { contributedToDeath: true } : {}) }];
    });
  const identifiers = [...idsOf(organizer), ...observations.flatMap(idsOf)].map(identifierOf).filter((value) => value !== undefined);
  const relationship = codeableConcept(related?.code);
  return {
    resourceType: 'FamilyMemberHistory',
    id: uuidFromSeed(`${seed}:family-member-history:${index}`),
    ...(identifiers.length > 0 ? { identifier: identifiers } : {}),
    status: 'completed',
    patient: patientReference,
    relationship: relationship ?? { text: 'family member' },
    ...(sexCode === 'M' || sexCode === 'F'
      ? { sex: { coding: [{ system: 'http://hl7.org/fhir/administrative-gender', code: sexCode === 'M' ? 'male' : 'female' }] } }
      : {}),
    ...(born ? { bornDate: born } : {}),
    ...(conditions.length > 0 ? { condition: conditions } : {}),
  };
}

/**
 * Replaces, in place, the converter's reading of the document's family history by FamilyMemberHistory
 * resources built from `parsedDocument` (the parsed C-CDA); `idsOf` gives an element's ids as the document
 * wrote them. Returns how many relatives it wrote.
 */
export function repairFamilyHistory(parsedDocument: unknown, bundle: FhirBundle, seed: string, idsOf: (element: CcdaNode) => unknown[] = (element) => listOf(element.id)): number {
  // Organizers belong to the family history section; only that section is searched.
  const familySections = isCcdaNode(parsedDocument)
    ? sectionsOf(parsedDocument).filter((section) => hasTemplate(section, FAMILY_HISTORY_SECTION) || attributeOf(section.code, 'code') === FAMILY_HISTORY_SECTION_LOINC)
    : [];
  const organizers = nodesWithTemplate(familySections, FAMILY_HISTORY_ORGANIZER);
  const entries = bundle.entry ?? [];
  const composition = entries.find((entry) => entry.resource?.resourceType === 'Composition')?.resource as
    | { subject?: unknown; section?: { code?: { coding?: { code?: string }[] }; entry?: { reference?: string }[] }[] }
    | undefined;
  const section = composition?.section?.find((candidate) => candidate.code?.coding?.some((coding) => coding.code === FAMILY_HISTORY_SECTION_LOINC));
  if (organizers.length === 0 && !section) return 0;

  // What the converter made of the section: its entries and every member they list, about the patient.
  const byReference = new Map<string, FhirResource>(entries.flatMap((entry) => (entry.resource ? [[`${entry.resource.resourceType}/${entry.resource.id}`, entry.resource] as [string, FhirResource]] : [])));
  const wrong = new Set<string>();
  const pending = (section?.entry ?? []).map((entry) => entry.reference).filter((reference): reference is string => typeof reference === 'string');
  while (pending.length > 0) {
    const reference = pending.pop()!;
    if (wrong.has(reference) || !byReference.has(reference)) continue;
    wrong.add(reference);
    for (const member of (byReference.get(reference)!.hasMember as { reference?: string }[] | undefined) ?? []) if (member.reference) pending.push(member.reference);
  }

  const subject = isCcdaNode(composition?.subject) && typeof composition.subject.reference === 'string' ? composition.subject.reference : undefined;
  const patient = entries.find((entry) => entry.resource?.resourceType === 'Patient')?.resource;
  const patientReference = { reference: subject ?? `Patient/${patient?.id ?? 'unknown'}` };
  const relatives = organizers.map((organizer, index) => familyMemberHistory(organizer, index, patientReference, seed, idsOf));
  bundle.entry = [
    ...entries.filter((entry) => !entry.resource || !wrong.has(`${entry.resource.resourceType}/${entry.resource.id}`)),
    ...relatives.map((resource) => ({ fullUrl: `urn:uuid:${resource.id}`, resource })),
  ];
  if (section) section.entry = relatives.map((resource) => ({ reference: `FamilyMemberHistory/${resource.id}` }));
  return relatives.length;
}
