import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { codeSystemUri, canonicalSystem } from './code-systems.js';
import { LEFT_OUT_EXTENSION, MedplumCcdaConverter } from './medplum.ccda.js';
import { documentWith as documentOf } from '../../spec/support/ccda-documents.js';

const E = '2.16.840.1.113883.10.20.22.4.';
const S = '2.16.840.1.113883.10.20.22.2.';
const SNOMED_OID = '2.16.840.1.113883.6.96';
const RXNORM_OID = '2.16.840.1.113883.6.88';

/** A minimal C-CDA R2.1 document holding one section with the given entries. */
function documentWith(sectionTemplate: string, entries: string): string {
  return documentOf([sectionTemplate, entries]);
}

const negation = (negated: boolean | undefined) => (negated === undefined ? '' : ` negationInd="${negated}"`);

function problem(options: { negated?: boolean; value?: string; status?: string }): string {
  const value = options.value === undefined ? '<value xsi:type="CD" nullFlavor="UNK"/>' : `<value xsi:type="CD" code="${options.value}" codeSystem="${SNOMED_OID}" displayName="p"/>`;
  return `<entry><act classCode="ACT" moodCode="EVN"><templateId root="${E}3"/><id root="1.2.3" extension="concern"/><code code="CONC" codeSystem="2.16.840.1.113883.5.6"/>
<statusCode code="active"/><effectiveTime><low value="20150101"/></effectiveTime>
<entryRelationship typeCode="SUBJ"><observation classCode="OBS" moodCode="EVN"${negation(options.negated)}><templateId root="${E}4"/><id root="1.2.3" extension="problem"/>
<code code="55607006" codeSystem="${SNOMED_OID}"/><statusCode code="${options.status ?? 'completed'}"/><effectiveTime><low value="20150101"/></effectiveTime>${value}</observation></entryRelationship></act></entry>`;
}

function allergy(options: { negated?: boolean; type: string; substance?: { code: string; system: string } }): string {
  const substance = options.substance ? `<code code="${options.substance.code}" codeSystem="${options.substance.system}" displayName="s"/>` : '<code nullFlavor="NA"/>';
  return `<entry><act classCode="ACT" moodCode="EVN"><templateId root="${E}30"/><id root="1.2.3" extension="allergy-concern"/><code code="CONC" codeSystem="2.16.840.1.113883.5.6"/>
<statusCode code="active"/><effectiveTime><low value="20150101"/></effectiveTime>
<entryRelationship typeCode="SUBJ"><observation classCode="OBS" moodCode="EVN"${negation(options.negated)}><templateId root="${E}7"/><id root="1.2.3" extension="allergy"/>
<code code="ASSERTION" codeSystem="2.16.840.1.113883.5.4"/><statusCode code="completed"/><effectiveTime><low value="20150101"/></effectiveTime>
<value xsi:type="CD" code="${options.type}" codeSystem="${SNOMED_OID}"/>
<participant typeCode="CSM"><participantRole classCode="MANU"><playingEntity classCode="MMAT">${substance}</playingEntity></participantRole></participant></observation></entryRelationship></act></entry>`;
}

function procedure(options: { negated?: boolean; status: string; reason?: boolean }): string {
  const reason = options.reason
    ? `<entryRelationship typeCode="RSON"><observation classCode="OBS" moodCode="EVN"><code code="77301-0" codeSystem="2.16.840.1.113883.6.1"/><statusCode code="completed"/><value xsi:type="CD" code="105480006" codeSystem="${SNOMED_OID}" displayName="Procedure declined by patient"/></observation></entryRelationship>`
    : '';
  return `<entry><procedure classCode="PROC" moodCode="EVN"${negation(options.negated)}><templateId root="${E}14"/><id root="1.2.3" extension="procedure"/>
<code code="6025007" codeSystem="${SNOMED_OID}" displayName="Laparoscopic appendectomy"/><statusCode code="${options.status}"/><effectiveTime value="20140203"/>${reason}</procedure></entry>`;
}

function immunization(options: { negated?: boolean; reason?: boolean }): string {
  const reason = options.reason
    ? `<entryRelationship typeCode="RSON"><observation classCode="OBS" moodCode="EVN"><templateId root="${E}53"/><code code="PATOBJ" codeSystem="2.16.840.1.113883.5.8" displayName="patient objection"/><statusCode code="completed"/></observation></entryRelationship>`
    : '';
  return `<entry><substanceAdministration classCode="SBADM" moodCode="EVN"${negation(options.negated)}><templateId root="${E}52"/><id root="1.2.3" extension="immunization"/>
<statusCode code="completed"/><effectiveTime value="20151115"/><consumable><manufacturedProduct classCode="MANU"><templateId root="${E}54"/><manufacturedMaterial>
<code code="166" codeSystem="2.16.840.1.113883.12.292" displayName="influenza"/></manufacturedMaterial></manufacturedProduct></consumable>${reason}</substanceAdministration></entry>`;
}

function medication(options: { negated?: boolean; mood: 'EVN' | 'INT' }): string {
  return `<entry><substanceAdministration classCode="SBADM" moodCode="${options.mood}"${negation(options.negated)}><templateId root="${E}16"/><id root="1.2.3" extension="medication"/>
<statusCode code="active"/><effectiveTime xsi:type="IVL_TS"><low value="20180315"/></effectiveTime><doseQuantity value="1"/>
<consumable><manufacturedProduct classCode="MANU"><templateId root="${E}23"/><manufacturedMaterial><code code="314076" codeSystem="${RXNORM_OID}" displayName="lisinopril 10 MG Oral Tablet"/></manufacturedMaterial></manufacturedProduct></consumable></substanceAdministration></entry>`;
}

const converter = new MedplumCcdaConverter();
async function convert(section: string, entries: string): Promise<FhirResource[]> {
  const bundle = await converter.convert(documentWith(section, entries));
  return (bundle.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
}
const ofType = (resources: FhirResource[], type: string) => resources.filter((resource) => resource.resourceType === type);
const codeOf = (concept: unknown) => (concept as { coding?: { code?: string }[] } | undefined)?.coding?.[0]?.code;

describe('what a converted entry asserts', () => {
  test('a negated problem is a refuted, inactive Condition; a negated generic problem is "no current problems"', async () => {
    const [refuted] = ofType(await convert(`${S}5.1`, problem({ negated: true, value: '44054006' })), 'Condition');
    expect(codeOf(refuted!.code)).toBe('44054006');
    expect(codeOf(refuted!.verificationStatus)).toBe('refuted');
    expect(codeOf(refuted!.clinicalStatus)).toBe('inactive');
    const [none] = ofType(await convert(`${S}5.1`, problem({ negated: true, value: '55607006' })), 'Condition');
    expect(codeOf(none!.code)).toBe('160245001');
    expect(codeOf(none!.verificationStatus)).toBe('confirmed');
    const [asserted] = ofType(await convert(`${S}5.1`, problem({ value: '44054006' })), 'Condition');
    expect(codeOf(asserted!.verificationStatus)).not.toBe('refuted');
  });

  test('a negated allergy to a substance is refuted; with no substance it is the no-known-allergy code of its type', async () => {
    const [peanut] = ofType(await convert(`${S}6.1`, allergy({ negated: true, type: '414285001', substance: { code: '762952008', system: SNOMED_OID } })), 'AllergyIntolerance');
    expect(codeOf(peanut!.verificationStatus)).toBe('refuted');
    expect(codeOf(peanut!.clinicalStatus)).toBe('inactive');
    expect(peanut!.category).toEqual(['food']);
    const [nkda] = ofType(await convert(`${S}6.1`, allergy({ negated: true, type: '416098002' })), 'AllergyIntolerance');
    expect(codeOf(nkda!.code)).toBe('409137002');
    expect(nkda!.category).toBeUndefined();
    const [nka] = ofType(await convert(`${S}6.1`, allergy({ negated: true, type: '419199007' })), 'AllergyIntolerance');
    expect(codeOf(nka!.code)).toBe('716186003');
  });

  test('allergy category and type come from the allergy type, then the substance: drugs and latex are never food', async () => {
    const cases: [string, { code: string; system: string }, string[] | undefined, string | undefined][] = [
      ['416098002', { code: '7980', system: RXNORM_OID }, ['medication'], 'allergy'],
      ['59037007', { code: '3992', system: RXNORM_OID }, ['medication'], 'intolerance'],
      ['419199007', { code: '7980', system: RXNORM_OID }, ['medication'], 'allergy'],
      ['419199007', { code: '111088007', system: SNOMED_OID }, ['environment'], 'allergy'],
      ['419199007', { code: '227493005', system: SNOMED_OID }, undefined, 'allergy'],
      ['414285001', { code: '102263004', system: SNOMED_OID }, ['food'], 'allergy'],
      ['420134006', { code: '102263004', system: SNOMED_OID }, undefined, undefined],
    ];
    for (const [type, substance, category, kind] of cases) {
      const [resource] = ofType(await convert(`${S}6.1`, allergy({ type, substance })), 'AllergyIntolerance');
      expect({ type, code: substance.code, category: resource!.category, kind: resource!.type }).toEqual({ type, code: substance.code, category, kind });
    }
  });

  test('a refused procedure is not-done with its reason; statuses follow the statusCode', async () => {
    const [refused] = ofType(await convert(`${S}7.1`, procedure({ negated: true, status: 'completed', reason: true })), 'Procedure');
    expect(refused!.status).toBe('not-done');
    expect(codeOf(refused!.statusReason)).toBe('105480006');
    const [aborted] = ofType(await convert(`${S}7.1`, procedure({ status: 'aborted' })), 'Procedure');
    expect(aborted!.status).toBe('stopped');
  });

  test('a refused immunization is not-done with the refusal reason', async () => {
    const [refused] = ofType(await convert(`${S}2.1`, immunization({ negated: true, reason: true })), 'Immunization');
    expect(refused!.status).toBe('not-done');
    expect((refused!.statusReason as { coding: { system: string; code: string }[] }).coding[0]).toMatchObject({ system: 'http://terminology.hl7.org/CodeSystem/v3-ActReason', code: 'PATOBJ' });
  });

  test('a negated medication order is doNotPerform; a negated history is not-taken', async () => {
    const [order] = ofType(await convert(`${S}1.1`, medication({ negated: true, mood: 'INT' })), 'MedicationRequest');
    expect(order!.doNotPerform).toBe(true);
    const [history] = ofType(await convert(`${S}1.1`, medication({ negated: true, mood: 'EVN' })), 'MedicationStatement');
    expect(history!.status).toBe('not-taken');
  });

  test('a statement that is itself null-flavored is left out, with the reason on the Composition', async () => {
    const placeholder = immunization({}).replace('moodCode="EVN"', 'moodCode="EVN" nullFlavor="NI"');
    const resources = await convert(`${S}2.1`, placeholder);
    expect(ofType(resources, 'Immunization')).toHaveLength(0);
    const [composition] = ofType(resources, 'Composition');
    const notes = ((composition!.extension as { url: string; valueString: string }[]) ?? []).filter((e) => e.url === LEFT_OUT_EXTENSION);
    expect(notes).toHaveLength(1);
    expect(notes[0]!.valueString).toContain('nullFlavor NI');
    expect(JSON.stringify(composition!.section)).not.toContain('Immunization/');
  });

  test('words that say there is nothing, where a drug, a problem or a result goes, are left out; a drug named only in words is kept', async () => {
    const placeholder = medication({ mood: 'EVN' }).replace(/<code code="314076"[^>]*\/>/, '<code nullFlavor="UNK"><originalText>No medication data is applicable</originalText></code>');
    expect(ofType(await convert(`${S}1.1`, placeholder), 'MedicationStatement')).toEqual([]);
    const named = medication({ mood: 'EVN' }).replace(/<code code="314076"[^>]*\/>/, '<code nullFlavor="UNK"><originalText>Experimental cure-all</originalText></code>');
    expect(ofType(await convert(`${S}1.1`, named), 'MedicationStatement').map((m) => m.medicationCodeableConcept)).toEqual([{ text: 'Experimental cure-all' }]);
    const noProblem = problem({}).replace('<value xsi:type="CD" nullFlavor="UNK"/>', '<value xsi:type="CD" nullFlavor="UNK"><originalText>No problem data is applicable</originalText></value>');
    expect(ofType(await convert(`${S}5.1`, noProblem), 'Condition')).toEqual([]);
  });

  test('an empty body component does not lose the document', async () => {
    const xml = documentWith(`${S}5.1`, problem({ value: '44054006' })).replace('<structuredBody>', '<structuredBody><component> </component>');
    const resources = (await converter.convert(xml)).entry ?? [];
    expect(resources.some((entry) => entry.resource?.resourceType === 'Condition')).toBe(true);
  });
});

describe('the assertion rules, on generated entries', () => {
  const runs = { numRuns: 25 };

  test('a problem is refuted exactly when the document negates it, and never confirmed then', async () => {
    await fc.assert(
      fc.asyncProperty(fc.option(fc.boolean(), { nil: undefined }), fc.constantFrom('44054006', '38341003', '195967001'), async (negated, value) => {
        const [condition] = ofType(await convert(`${S}5.1`, problem({ negated, value })), 'Condition');
        expect(codeOf(condition!.verificationStatus) === 'refuted').toBe(negated === true);
        if (negated) expect(codeOf(condition!.clinicalStatus)).not.toBe('active');
      }),
      runs,
    );
  });

  test('an allergy is refuted when negated with a substance, a no-known-allergy code when negated without one, else asserted', async () => {
    const substances = fc.option(fc.constantFrom({ code: '7980', system: RXNORM_OID }, { code: '762952008', system: SNOMED_OID }, { code: '111088007', system: SNOMED_OID }), { nil: undefined });
    const types = fc.constantFrom('416098002', '414285001', '419199007', '59037007', '426232007', '420134006');
    await fc.assert(
      fc.asyncProperty(fc.option(fc.boolean(), { nil: undefined }), types, substances, async (negated, type, substance) => {
        const [resource] = ofType(await convert(`${S}6.1`, allergy({ negated, type, substance })), 'AllergyIntolerance');
        const verification = codeOf(resource!.verificationStatus);
        if (negated && substance) expect(verification).toBe('refuted');
        else if (negated) expect(['716186003', '409137002', '429625007', '428607008']).toContain(codeOf(resource!.code));
        else expect(verification).not.toBe('refuted');
        // A drug is never filed as food, nor latex as anything but environmental.
        if (substance?.system === RXNORM_OID && !negated) expect(resource!.category).toEqual(['medication']);
        if (substance?.code === '111088007' && !negated) expect(resource!.category).toEqual(['environment']);
      }),
      runs,
    );
  });

  test('a procedure or immunization is not-done exactly when negated; a nullified one is entered-in-error', async () => {
    const statuses = fc.constantFrom('completed', 'active', 'aborted', 'cancelled', 'nullified');
    await fc.assert(
      fc.asyncProperty(fc.option(fc.boolean(), { nil: undefined }), statuses, fc.boolean(), async (negated, status, reason) => {
        const [done] = ofType(await convert(`${S}7.1`, procedure({ negated, status, reason })), 'Procedure');
        if (negated) expect(done!.status).toBe('not-done');
        else expect(done!.status).toBe({ completed: 'completed', active: 'in-progress', aborted: 'stopped', cancelled: 'not-done', nullified: 'entered-in-error' }[status]);
        const [shot] = ofType(await convert(`${S}2.1`, immunization({ negated, reason })), 'Immunization');
        expect(shot!.status === 'not-done').toBe(negated === true);
        if (negated && reason) expect(codeOf(shot!.statusReason)).toBe('PATOBJ');
      }),
      runs,
    );
  });

  test('a medication is not-taken or doNotPerform exactly when negated', async () => {
    await fc.assert(
      fc.asyncProperty(fc.option(fc.boolean(), { nil: undefined }), fc.constantFrom<'EVN' | 'INT'>('EVN', 'INT'), async (negated, mood) => {
        const resources = await convert(`${S}1.1`, medication({ negated, mood }));
        if (mood === 'EVN') expect(ofType(resources, 'MedicationStatement')[0]!.status === 'not-taken').toBe(negated === true);
        else expect(ofType(resources, 'MedicationRequest')[0]!.doNotPerform === true).toBe(negated === true);
      }),
      runs,
    );
  });
});

describe('code systems', () => {
  test('HL7 OIDs with a FHIR URI are written as the URI; others stay urn:oid', () => {
    expect(codeSystemUri('2.16.840.1.113883.6.90')).toBe('http://hl7.org/fhir/sid/icd-10-cm');
    expect(codeSystemUri('2.16.840.1.113883.6.103')).toBe('http://hl7.org/fhir/sid/icd-9-cm');
    expect(codeSystemUri('2.16.840.1.113883.6.13')).toBe('http://ada.org/cdt');
    expect(codeSystemUri('2.16.840.1.113883.5.4')).toBe('http://terminology.hl7.org/CodeSystem/v3-ActCode');
    expect(codeSystemUri('2.16.840.1.113883.12.112')).toBe('http://terminology.hl7.org/CodeSystem/v2-0112');
    expect(codeSystemUri('2.16.840.1.113883.12.292')).toBe('http://hl7.org/fhir/sid/cvx');
    expect(canonicalSystem('urn:oid:1.2.3.4')).toBe('urn:oid:1.2.3.4');
    expect(canonicalSystem('2.16.840.1.113883.6.1')).toBe('http://loinc.org');
    expect(canonicalSystem('http://loinc.org')).toBe('http://loinc.org');
  });

  test('a converted document carries no urn:oid coding system that FHIR names by a URI', async () => {
    const resources = await convert(`${S}7.1`, procedure({ status: 'completed' }).replace('displayName="Laparoscopic appendectomy"/>', 'displayName="x"><translation code="47.01" codeSystem="2.16.840.1.113883.6.104"/></code>').replace('<code code="6025007"', '<code code="6025007"'));
    const systems = JSON.stringify(resources).match(/"system":"urn:oid:[0-9.]+"/g) ?? [];
    expect(systems.filter((system) => codeSystemUri(system.slice(18, -1)) !== undefined)).toEqual([]);
  });
});

describe('what a medication entry says besides the drug', () => {
  const activity = (inner: string, consumable = `<code code="197806" codeSystem="${RXNORM_OID}" displayName="ibuprofen 600 MG Oral Tablet"/>`) =>
    `<entry><substanceAdministration classCode="SBADM" moodCode="INT"><templateId root="${E}16"/><id root="1.2.3" extension="m"/><text><reference value="#med"/></text>
<statusCode code="active"/><effectiveTime xsi:type="IVL_TS"><low value="20180315"/></effectiveTime>${inner}<doseQuantity value="1"/>
<consumable><manufacturedProduct classCode="MANU"><templateId root="${E}23"/><manufacturedMaterial>${consumable}</manufacturedMaterial></manufacturedProduct></consumable></substanceAdministration></entry>`;
  const request = async (entry: string, narrative = '') => {
    const xml = documentWith(`${S}1.1`, entry).replace('<text>t</text>', `<text>${narrative}</text>`);
    const bundle = await converter.convert(xml);
    return (bundle.entry ?? []).map((e) => e.resource!).find((r) => r.resourceType === 'MedicationRequest')!;
  };
  const dosage = (resource: FhirResource) => (resource.dosageInstruction as Record<string, unknown>[])[0]!;

  test('free-text sig, bedtime, every 4-6 hours, as needed for a reason, indication and instructions', async () => {
    const sig = `<entryRelationship typeCode="COMP"><substanceAdministration classCode="SBADM" moodCode="EVN"><templateId root="${E}147"/><code code="76662-6" codeSystem="2.16.840.1.113883.6.1"/><text><reference value="#sig"/></text><consumable><manufacturedProduct><manufacturedMaterial><code nullFlavor="NA"/></manufacturedMaterial></manufacturedProduct></consumable></substanceAdministration></entryRelationship>`;
    const timing = `<effectiveTime xsi:type="EIVL_TS" operator="A"><event code="HS"/></effectiveTime><effectiveTime xsi:type="PIVL_TS" operator="A"><period xsi:type="IVL_PQ"><low value="4" unit="h"/><high value="6" unit="h"/></period></effectiveTime>`;
    const prn = `<precondition typeCode="PRCN"><criterion><templateId root="${E}25"/><code code="ASSERTION" codeSystem="2.16.840.1.113883.5.4"/><value xsi:type="CD" code="57676002" codeSystem="${SNOMED_OID}" displayName="Joint pain"/></criterion></precondition>`;
    const indication = `<entryRelationship typeCode="RSON"><observation classCode="OBS" moodCode="EVN"><templateId root="${E}19"/><code code="404684003" codeSystem="${SNOMED_OID}"/><statusCode code="completed"/><value xsi:type="CD" code="25064002" codeSystem="${SNOMED_OID}" displayName="Headache"/></observation></entryRelationship>`;
    const instruction = `<entryRelationship typeCode="SUBJ" inversionInd="true"><act classCode="ACT" moodCode="INT"><templateId root="${E}20"/><code code="422037009" codeSystem="${SNOMED_OID}"/><text><reference value="#instr"/></text><statusCode code="completed"/></act></entryRelationship>`;
    // Precondition and relationships go where the schema puts them: after the consumable.
    const entry = activity(timing).replace('</consumable>', `</consumable>${sig}${indication}${instruction}${prn}`);
    const narrative = '<paragraph ID="sig">one tab at bedtime</paragraph><paragraph ID="instr">Do not take on an empty stomach.</paragraph>';
    const resource = await request(entry, narrative);
    expect(dosage(resource)).toMatchObject({
      text: 'one tab at bedtime',
      timing: { repeat: { when: ['HS'], period: 4, periodMax: 6, periodUnit: 'h' } },
      asNeededCodeableConcept: { coding: [{ system: 'http://snomed.info/sct', code: '57676002', display: 'Joint pain' }] },
      patientInstruction: 'Do not take on an empty stomach.',
    });
    expect(codeOf((resource.reasonCode as unknown[])[0])).toBe('25064002');
  });

  test('a mixture without a code is a contained Medication with its name and ingredients', async () => {
    const mixture = `<code codeSystem="${RXNORM_OID}" nullFlavor="OTH"/><name>magic mouthwash</name>
<pharm:ingredient xmlns:pharm="urn:hl7-org:pharm" classCode="ACTI"><pharm:quantity><pharm:numerator xsi:type="PQ" value="1" unit="mg"/><pharm:denominator xsi:type="PQ" value="1" unit="mL"/></pharm:quantity>
<pharm:ingredientSubstance classCode="MMAT"><pharm:code code="1362" codeSystem="${RXNORM_OID}" displayName="diphenhydramine hydrochloride"/></pharm:ingredientSubstance></pharm:ingredient>`;
    const resource = await request(activity('', mixture));
    expect(resource.medicationReference).toEqual({ reference: '#medication' });
    const [medication] = resource.contained as Record<string, unknown>[];
    expect(medication).toMatchObject({
      resourceType: 'Medication',
      code: { text: 'magic mouthwash' },
      ingredient: [{ itemCodeableConcept: { coding: [{ code: '1362' }] }, isActive: true, strength: { numerator: { value: 1, unit: 'mg' }, denominator: { value: 1, unit: 'mL' } } }],
    });
  });
});
