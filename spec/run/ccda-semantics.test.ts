/**
 * What each of HL7's C-CDA scenario examples means, as its name says, checked on its conversion: one
 * assertion per example (corpus/ccda/hl7-examples, CC0). "Patient Does Not Have Diabetes" must never come
 * out as diabetes; "Not Pregnant" must say not pregnant; "No Known Allergies" must not be an allergy.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import type { FhirResource } from '../../core/ports/ccda.port.js';

const EXAMPLES = fileURLToPath(new URL('../../corpus/ccda/hl7-examples/', import.meta.url));
const converter = new MedplumCcdaConverter();

/** The resources of the (first) document of an example's folder. */
async function resourcesOf(folder: string): Promise<FhirResource[]> {
  const file = readdirSync(join(EXAMPLES, folder)).filter((name) => name.endsWith('.xml')).sort()[0];
  if (!file) throw new Error(`no document in ${folder}`);
  const bundle = await converter.convert(readFileSync(join(EXAMPLES, folder, file), 'utf8'));
  return (bundle.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
}

type Concept = { coding?: { system?: string; code?: string }[]; text?: string } | undefined;
const codes = (concept: unknown) => ((concept as Concept)?.coding ?? []).map((coding) => coding.code);
const of = (resources: FhirResource[], type: string) => resources.filter((resource) => resource.resourceType === type);
const verification = (resource: FhirResource) => codes(resource.verificationStatus)[0];
const clinical = (resource: FhirResource) => codes(resource.clinicalStatus)[0];
/** Resources of the type that assert their fact: not refuted, not done, not taken, entered in error or an order not to. */
const asserted = (resources: FhirResource[], type: string) =>
  of(resources, type).filter(
    (r) => !['refuted', 'entered-in-error'].includes(String(verification(r))) && !['not-done', 'not-taken', 'entered-in-error'].includes(String(r.status)) && r.doNotPerform !== true,
  );
const withCode = (resources: FhirResource[], code: string, field = 'code') => resources.filter((r) => codes(r[field]).includes(code));
const dosage = (r: FhirResource) => ((r.dosage ?? r.dosageInstruction) as Record<string, unknown>[] | undefined)?.[0] ?? {};
const patient = (resources: FhirResource[]) => of(resources, 'Patient')[0]!;

/** One example: its folder under hl7-examples, and what its conversion must say. */
const EXAMPLES_AND_MEANINGS: [string, (resources: FhirResource[]) => void][] = [
  // Allergies
  ['Allergies/Allergy to food egg', (r) => expect(of(r, 'AllergyIntolerance').map((a) => a.category)).toEqual([['food']])],
  ['Allergies/Allergy to latex', (r) => expect(of(r, 'AllergyIntolerance').map((a) => a.category)).toEqual([['environment']])],
  ['Allergies/Allergy to specific drug Codeine', (r) => expect(of(r, 'AllergyIntolerance').map((a) => a.category)).toEqual([['medication']])],
  ['Allergies/Allergy to specific drug Penicillin', (r) => expect(of(r, 'AllergyIntolerance').map((a) => a.category)).toEqual([['medication']])],
  ['Allergies/Allergy to specific drug class Penicillins', (r) => expect(of(r, 'AllergyIntolerance').map((a) => a.category)).toEqual([['medication']])],
  ['Allergies/Free-text Allergy to clinical trial drug', (r) => expect(of(r, 'AllergyIntolerance').map((a) => a.category)).toEqual([['medication']])],
  ['Allergies/No Known Allergies', (r) => expect(of(r, 'AllergyIntolerance').map((a) => [codes(a.code)[0], verification(a)])).toEqual([['716186003', 'confirmed']])],
  ['Allergies/No Known Medication Allergies', (r) => expect(of(r, 'AllergyIntolerance').map((a) => [codes(a.code)[0], a.category])).toEqual([['409137002', undefined]])],
  ['Allergies/No Section Information Allergies', (r) => expect(asserted(r, 'AllergyIntolerance')).toEqual([])],
  ['Allergies/Not Allergic to Peanuts', (r) => expect(of(r, 'AllergyIntolerance').map((a) => [verification(a), clinical(a)])).toEqual([['refuted', 'inactive']])],
  ['Allergies/Withdrawn Allergy to specific drug Epinephrine', (r) => expect(of(r, 'AllergyIntolerance').map((a) => [a.type, a.category])).toEqual([['intolerance', ['medication']]])],
  // Problems
  ['Problems/Active Problem', (r) => expect(of(r, 'Condition').map((c) => [clinical(c), verification(c)])).toEqual([['active', 'confirmed']])],
  ['Problems/Complete or Resolved Problem', (r) => expect(of(r, 'Condition').map(clinical)).toEqual(['resolved'])],
  ['Problems/No Known Problems', (r) => expect(of(r, 'Condition').map((c) => codes(c.code)[0])).toEqual(['160245001'])],
  ['Problems/Patient Does Not Have Diabetes', (r) => expect(withCode(asserted(r, 'Condition'), '44054006')).toEqual([])],
  ['Problems/Patient Does Not Have Diabetes', (r) => expect(of(r, 'Condition').map((c) => [codes(c.code)[0], verification(c)])).toEqual([['44054006', 'refuted']])],
  ['Problems/Problem TargetSiteCode Qualifier', (r) => expect(of(r, 'Condition').every((c) => Array.isArray(c.bodySite))).toBe(true)],
  ['Problems/Pregnancy with Week Gestation', (r) => expect(withCode(asserted(r, 'Condition'), '77386006')).toHaveLength(1)],
  ['Problems/SDOH Problem', (r) => expect(asserted(r, 'Condition')).toHaveLength(1)],
  ['General/No Section Information Problems', (r) => expect(asserted(r, 'Condition')).toEqual([])],
  ['Health Concerns/No Known Health Concerns', (r) => expect(asserted(r, 'Condition').filter((c) => JSON.stringify(c.category).includes('health-concern'))).toEqual([])],
  ['Health Concerns/Health Concerns Link to Problems Section', (r) => expect(of(r, 'Condition').some((c) => JSON.stringify(c.category).includes('health-concern'))).toBe(true)],
  // Medications
  ['Medications/Medication Refused', (r) => expect(of(r, 'MedicationStatement').map((m) => m.status)).toEqual(['not-taken'])],
  ['Medications/No Medications', (r) => expect(asserted(r, 'MedicationStatement')).toEqual([])],
  ['Medications/Free Text Medication SIG', (r) => expect(String(dosage(of(r, 'MedicationStatement')[0]!).text)).toContain('take one tab by mouth every morning')],
  ['Medications/Med at bedtime', (r) => expect((dosage(of(r, 'MedicationStatement')[0]!).timing as { repeat?: { when?: string[] } }).repeat?.when).toEqual(['HS'])],
  ['Medications/Med every 4-6 hours', (r) => expect((dosage(of(r, 'MedicationRequest')[0]!).timing as { repeat?: unknown }).repeat).toMatchObject({ period: 4, periodMax: 6, periodUnit: 'h' })],
  ['Medications/Med oral QID with PRN', (r) => expect(dosage(of(r, 'MedicationRequest')[0]!).asNeededBoolean ?? dosage(of(r, 'MedicationRequest')[0]!).asNeededCodeableConcept).toBeTruthy()],
  ['Medications/Med oral with indications and instructions', (r) => expect(of(r, 'MedicationStatement').some((m) => codes((m.reasonCode as unknown[] | undefined)?.[0]).includes('57676002'))).toBe(true)],
  ['Medications/Med oral with indications and instructions', (r) => expect(of(r, 'MedicationStatement').some((m) => String(dosage(m).patientInstruction).includes('empty stomach'))).toBe(true)],
  ['Medications/Drug Mixture', (r) => expect(((of(r, 'MedicationRequest')[0]!.contained as { ingredient?: unknown[] }[])[0]!.ingredient ?? []).length).toBeGreaterThanOrEqual(3)],
  ['Medications/Withdrawn Anitbiotics with varied dosing', (r) => expect(of(r, 'MedicationRequest')).toHaveLength(2)],
  ['Medications/Single administration of medication', (r) => expect(of(r, 'MedicationStatement')).toHaveLength(1)],
  // Immunizations
  ['Immunizations/Immunization not given Patient refused', (r) => expect(of(r, 'Immunization').map((i) => [i.status, codes(i.statusReason)[0]])).toEqual([['not-done', 'PATOBJ']])],
  ['Immunizations/Influenza Vaccination', (r) => expect(of(r, 'Immunization').map((i) => [i.status, (i.vaccineCode as Concept)?.coding?.[0]?.system])).toEqual([['completed', 'http://hl7.org/fhir/sid/cvx']])],
  ['Immunizations/Influenza Vaccination - Patient Reported', (r) => expect(of(r, 'Immunization').map((i) => i.primarySource)).toEqual([false])],
  ['Immunizations/Influenza Vaccination with NDC', (r) => expect(JSON.stringify(of(r, 'Immunization')[0]!.vaccineCode)).toContain('http://hl7.org/fhir/sid/ndc')],
  ['Immunizations/No Section Information Immunizations', (r) => expect(asserted(r, 'Immunization')).toEqual([])],
  ['Immunizations/Unknown Immunization Status', (r) => expect(asserted(r, 'Immunization')).toEqual([])],
  // Procedures and plans
  ['Procedures/Procedure Refused', (r) => expect(of(r, 'Procedure').map((p) => [p.status, codes(p.statusReason)[0]])).toEqual([['not-done', '105480006']])],
  ['Procedures/Procedure Unsuccessful', (r) => expect(of(r, 'Procedure').map((p) => codes(p.outcome)[0])).toEqual(['103709008'])],
  ['Procedures/Procedures Section Procedure Entry', (r) => expect(of(r, 'Procedure').every((p) => p.status === 'completed')).toBe(true)],
  ['Procedures/Procedures Section Observation Entry', (r) => expect(of(r, 'Procedure')).toHaveLength(1)],
  ['Procedures/Procedures Section Act Entry', (r) => expect(of(r, 'Procedure')).toHaveLength(1)],
  ['Plan of Treatment/Planned EKG', (r) => expect([of(r, 'Goal').length, of(r, 'ServiceRequest').map((s) => codes(s.code)[0])]).toEqual([0, ['34534-8']])],
  ['Plan of Treatment/No Planned Tests', (r) => expect(of(r, 'Procedure')).toEqual([])],
  ['Plan of Treatment/Planned Encounter - Referral', (r) => expect(of(r, 'Encounter').map((e) => e.status)).toEqual(['planned'])],
  ['Plan of Treatment/Care Plan Goals and Instructions', (r) => expect(of(r, 'Goal').map((g) => g.lifecycleStatus)).toEqual(['active'])],
  ['Goals/SDOH Goal', (r) => expect(of(r, 'Goal').every((g) => typeof g.lifecycleStatus === 'string')).toBe(true)],
  // Devices
  ['Medical Equipment/Implant UDI Organizer', (r) => expect(of(r, 'Device').map((d) => (d.udiCarrier as { deviceIdentifier?: string }[])[0]!.deviceIdentifier)).toEqual(['00848486001048'])],
  ['Medical Equipment/Multiple Implants', (r) => expect(of(r, 'Device')).toHaveLength(2)],
  ['Medical Equipment/No Implanted Devices', (r) => expect([of(r, 'Device'), asserted(r, 'Procedure')]).toEqual([[], []])],
  // Results
  ['Results/Results panel with pending component', (r) => expect(of(r, 'Observation').some((o) => o.status === 'preliminary')).toBe(true)],
  ['Results/Results with less than specific value', (r) => expect(of(r, 'Observation').map((o) => (o.valueQuantity as { comparator?: string } | undefined)?.comparator).filter(Boolean)).toEqual(['<='])],
  ['Results/Result with greater than a specified value', (r) => expect(of(r, 'Observation').map((o) => (o.valueQuantity as { comparator?: string } | undefined)?.comparator).filter(Boolean)).toEqual(['>'])],
  ['Results/Results Unit Non-UCUM', (r) => expect(of(r, 'Observation').map((o) => o.valueQuantity).filter(Boolean)).toEqual([{ value: 152, unit: 'THOUS/MCL' }])],
  ['Results/Result with an unstructured string as value (urine color)', (r) => expect(of(r, 'Observation').map((o) => o.valueString).filter(Boolean)).toEqual(['Amber'])],
  ['Results/Result with Multiple Reference Ranges', (r) => expect(of(r, 'Observation').some((o) => ((o.referenceRange as unknown[] | undefined) ?? []).length >= 2)).toBe(true)],
  ['Results/Result COVID Positive', (r) => expect(of(r, 'Observation').some((o) => codes(o.valueCodeableConcept).includes('260373001'))).toBe(true)],
  // Social history and vital signs
  ['Social History/Not Pregnant', (r) => expect(of(r, 'Observation').map((o) => [codes(o.code)[0], codes(o.valueCodeableConcept)[0]])).toEqual([['82810-3', '60001007']])],
  ['Social History/Never Smoking Status', (r) => expect(of(r, 'Observation').map((o) => codes(o.valueCodeableConcept)[0])).toEqual(['266919005'])],
  ['Social History/Birth Sex', (r) => expect(of(r, 'Observation').map((o) => codes(o.code)[0])).toEqual(['76689-9'])],
  ['Vital Signs/Panel of Vital Signs in Metric Units', (r) => expect(withCode(of(r, 'Observation'), '29463-7').map((o) => (o.valueQuantity as { unit?: string }).unit)).toEqual(['kg'])],
  // Encounters
  ['Encounters/Outpatient Encounter with Diagnoses', (r) => expect(of(r, 'Condition').map((c) => codes(c.category?.[0 as never])[0] ?? JSON.stringify(c.category))).toEqual([expect.stringContaining('encounter-diagnosis')])],
  ['Encounters/Hospital Discharge Encounter with Billable Diagnoses', (r) => expect(JSON.stringify(of(r, 'Encounter')[0]!.diagnosis)).toContain('"DD"')],
  ['Encounters/Inpatient Encounter Discharged to Rehab Location', (r) => expect(codes((of(r, 'Encounter')[0]!.hospitalization as { dischargeDisposition?: unknown })?.dischargeDisposition)[0]).toBe('04')],
  // Family history is the relatives', never the patient's
  ['Family History/Normal Family History Father deceased-Mother alive', (r) => expect(of(r, 'FamilyMemberHistory').map((f) => codes(f.relationship)[0]).sort()).toEqual(['FTH', 'MTH'])],
  ['Family History/Family History Generic', (r) => expect(of(r, 'Condition')).toEqual([])],
  // The patient
  ['Header/Patient Deceased', (r) => expect(patient(r).deceasedDateTime ?? patient(r).deceasedBoolean).toBeTruthy()],
  ['Header/Patient Birth Name', (r) => expect((patient(r).name as { use?: string }[]).map((n) => n.use)).toContain('maiden')],
  ['Header/Patient Previous Name', (r) => expect((patient(r).name as unknown[]).length).toBeGreaterThanOrEqual(2)],
  ['Header/Patient With Prior Addresses', (r) => expect((patient(r).address as { period?: unknown; use?: string }[]).some((a) => a.period !== undefined || a.use === 'old')).toBe(true)],
  ['Header/Patient Demographic Information', (r) => expect(patient(r).communication).toBeDefined()],
];

describe('HL7 C-CDA scenario examples mean what their names say', () => {
  const cache = new Map<string, Promise<FhirResource[]>>();
  EXAMPLES_AND_MEANINGS.forEach(([folder, check], index) => {
    test(`${index + 1}. ${folder}`, async () => {
      if (!cache.has(folder)) cache.set(folder, resourcesOf(folder));
      check(await cache.get(folder)!);
    });
  });

  test('there are at least 60 of them', () => {
    expect(EXAMPLES_AND_MEANINGS.length).toBeGreaterThanOrEqual(60);
  });
});
