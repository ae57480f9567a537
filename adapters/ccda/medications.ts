import type { FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';
import { attributeOf, hasTemplate, isCcdaNode, listOf, type CcdaNode } from './ccda-nodes.js';

/**
 * Medication doses, read against the C-CDA itself. @medplum/ccda writes every dose in `[IU]`, whatever
 * the document said (atenolol 1 -> 1 [IU], propofol 20 mg/mL -> 20 [IU]): the dose's own unit is taken
 * back from the document, and a dose without a unit is a count, with no unit.
 */

const MEDICATION_ACTIVITY = '2.16.840.1.113883.10.20.22.4.16';
const UCUM = 'http://unitsofmeasure.org';
/** C-CDA units that are not UCUM as written. */
const UCUM_OF: Record<string, string> = { mcg: 'ug' };


/** Every section of the document, nested ones included, in document order. */
function sectionsOf(tree: unknown, found: CcdaNode[] = []): CcdaNode[] {
  if (Array.isArray(tree)) for (const item of tree) sectionsOf(item, found);
  else if (isCcdaNode(tree)) {
    for (const [key, value] of Object.entries(tree)) {
      if (key === 'section') for (const section of listOf(value)) if (isCcdaNode(section)) found.push(section);
      sectionsOf(value, found);
    }
  }
  return found;
}

interface SourceMedication {
  doseValue: string | undefined;
  doseUnit: string | undefined;
}

/** The Medication Activities listed as entries of a section, in order. */
function sourceMedications(section: CcdaNode): SourceMedication[] {
  return listOf(section.entry).flatMap((entry) =>
    listOf(isCcdaNode(entry) ? entry.substanceAdministration : undefined)
      .filter((activity): activity is CcdaNode => isCcdaNode(activity) && hasTemplate(activity, MEDICATION_ACTIVITY))
      .map((activity) => ({
        doseValue: attributeOf(activity.doseQuantity, 'value'),
        doseUnit: attributeOf(activity.doseQuantity, 'unit'),
      })),
  );
}

type Dosage = { doseAndRate?: { doseQuantity?: Record<string, unknown> }[] };

function repairDose(resource: FhirResource, key: 'dosageInstruction', source: SourceMedication): void {
  for (const dosage of (resource[key] as Dosage[] | undefined) ?? []) {
    for (const doseAndRate of dosage.doseAndRate ?? []) {
      const quantity = doseAndRate.doseQuantity;
      if (!quantity || source.doseValue === undefined || Number(source.doseValue) !== quantity.value) continue;
      delete quantity.unit;
      delete quantity.code;
      delete quantity.system;
      if (source.doseUnit !== undefined && source.doseUnit !== '1') {
        quantity.unit = source.doseUnit;
        quantity.system = UCUM;
        quantity.code = UCUM_OF[source.doseUnit] ?? source.doseUnit;
      }
    }
  }
}

/**
 * Repairs, in place, the doses of the converter's medication requests against `parsedDocument`. A
 * section's requests are matched to its Medication Activities in the document in order; when their counts
 * differ nothing is changed (a guess could give a dose another medication's unit). Returns how many
 * requests it matched.
 */
export function repairMedications(parsedDocument: unknown, bundle: FhirBundle): number {
  const entries = bundle.entry ?? [];
  const composition = entries.find((entry) => entry.resource?.resourceType === 'Composition')?.resource as
    | { section?: { code?: { coding?: { code?: string }[] }; entry?: { reference?: string }[] }[] }
    | undefined;
  const byReference = new Map<string, { resource?: FhirResource }>(
    entries.flatMap((entry) => (entry.resource ? [[`${entry.resource.resourceType}/${entry.resource.id}`, entry] as [string, { resource?: FhirResource }]] : [])),
  );
  const sourceSections = sectionsOf(parsedDocument);
  let matched = 0;
  // Each section of the converted document is matched with the document's section of the same code, its
  // medication requests with that section's Medication Activities in order.
  const used = new Set<CcdaNode>();
  for (const section of composition?.section ?? []) {
    const code = section.code?.coding?.[0]?.code;
    const requests = (section.entry ?? []).map((entry) => entry.reference).filter((reference): reference is string => reference?.startsWith('MedicationRequest/') === true);
    if (!code || requests.length === 0) continue;
    const source = sourceSections.find((candidate) => !used.has(candidate) && attributeOf(candidate.code, 'code') === code);
    if (!source) continue;
    used.add(source);
    const activities = sourceMedications(source);
    if (activities.length !== requests.length) continue;
    requests.forEach((reference, index) => {
      const entry = byReference.get(reference);
      if (!entry?.resource) return;
      repairDose(entry.resource, 'dosageInstruction', activities[index]!);
      matched++;
    });
  }
  return matched;
}
