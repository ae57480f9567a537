import { describe, expect, test } from 'vitest';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';
import { documentWith } from '../../spec/support/ccda-documents.js';

const E = '2.16.840.1.113883.10.20.22.4.';
const S = '2.16.840.1.113883.10.20.22.2.';
const SNOMED_OID = '2.16.840.1.113883.6.96';
const RXNORM_OID = '2.16.840.1.113883.6.88';

const negation = (negated: boolean | undefined) => (negated === undefined ? '' : ` negationInd="${negated}"`);

/** A Problem Observation (no concern around it). */
function problemObservation(options: { id: string; value: string; negated?: boolean; ended?: boolean }): string {
  const high = options.ended ? '<high value="20160101"/>' : '';
  return `<observation classCode="OBS" moodCode="EVN"${negation(options.negated)}><templateId root="${E}4"/><id root="1.2.3" extension="${options.id}"/>
<code code="55607006" codeSystem="${SNOMED_OID}"/><statusCode code="completed"/><effectiveTime><low value="20150101"/>${high}</effectiveTime>
<value xsi:type="CD" code="${options.value}" codeSystem="${SNOMED_OID}" displayName="p"/></observation>`;
}

async function convert(xml: string): Promise<FhirResource[]> {
  return ((await new MedplumCcdaConverter().convert(xml)).entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
}
const ofType = (resources: FhirResource[], type: string) => resources.filter((resource) => resource.resourceType === type);
const codeOf = (concept: unknown) => (concept as { coding?: { code?: string }[] } | undefined)?.coding?.[0]?.code;
const identifierValues = (resource: FhirResource) => ((resource.identifier as { value?: string }[] | undefined) ?? []).map((id) => id.value);
const withIdentifier = (resources: FhirResource[], value: string) => resources.filter((resource) => identifierValues(resource).includes(value));

describe('problems a past medical history lists', () => {
  test('each is a Condition with its id, resolved when ended, refuted when negated; none an Observation', async () => {
    const resources = await convert(
      documentWith([
        S + '20',
        [
          problemObservation({ id: 'asthma', value: '195967001', ended: true }),
          problemObservation({ id: 'no-diabetes', value: '44054006', negated: true }),
        ]
          .map((observation) => `<entry>${observation}</entry>`)
          .join('\n'),
      ]),
    );
    expect(ofType(resources, 'Observation')).toEqual([]);
    const [asthma] = withIdentifier(resources, 'asthma');
    expect(asthma?.resourceType).toBe('Condition');
    expect(codeOf(asthma!.clinicalStatus)).toBe('resolved');
    const [denied] = withIdentifier(resources, 'no-diabetes');
    expect(denied?.resourceType).toBe('Condition');
    expect(codeOf(denied!.verificationStatus)).toBe('refuted');
  });
});

/** A medication history entry given for the problems `reasons` (RSON relationships). */
function medicationFor(reasons: string): string {
  return `<entry><substanceAdministration classCode="SBADM" moodCode="EVN"><templateId root="${E}16"/><id root="1.2.3" extension="med"/>
<statusCode code="active"/><effectiveTime xsi:type="IVL_TS"><low value="20150101"/></effectiveTime>
<consumable><manufacturedProduct classCode="MANU"><templateId root="${E}23"/><manufacturedMaterial><code code="197806" codeSystem="${RXNORM_OID}" displayName="ibuprofen 600 MG Oral Tablet"/></manufacturedMaterial></manufacturedProduct></consumable>
${reasons}</substanceAdministration></entry>`;
}

describe('statements nested in other statements', () => {
  test('a problem given as a medication’s reason, in a concern or bare, is a Condition the medication names as its reason; a denied one is refuted', async () => {
    const concern = `<entryRelationship typeCode="RSON"><act classCode="ACT" moodCode="EVN"><templateId root="${E}3"/><id root="1.2.3" extension="concern"/>
<code code="CONC" codeSystem="2.16.840.1.113883.5.6"/><statusCode code="active"/><effectiveTime><low value="20150101"/></effectiveTime>
<entryRelationship typeCode="SUBJ">${problemObservation({ id: 'migraine', value: '37796009' })}</entryRelationship></act></entryRelationship>`;
    const bare = `<entryRelationship typeCode="RSON">${problemObservation({ id: 'not-gout', value: '90560007', negated: true })}</entryRelationship>`;
    const resources = await convert(documentWith([S + '1.1', medicationFor(concern + bare)]));
    const [migraine] = withIdentifier(resources, 'migraine');
    expect(migraine?.resourceType).toBe('Condition');
    expect(codeOf(migraine!.code)).toBe('37796009');
    expect(codeOf(migraine!.verificationStatus)).toBe('confirmed');
    expect(identifierValues(migraine!)).toContain('concern');
    const [gout] = withIdentifier(resources, 'not-gout');
    expect(gout?.resourceType).toBe('Condition');
    expect(codeOf(gout!.verificationStatus)).toBe('refuted');
    const [medication] = withIdentifier(resources, 'med');
    expect(medication?.resourceType).toBe('MedicationStatement');
    expect(medication!.reasonReference).toEqual([{ reference: `Condition/${migraine!.id}` }, { reference: `Condition/${gout!.id}` }]);
    // The Composition lists the document's own sections, and no more.
    const [composition] = ofType(resources, 'Composition');
    expect((composition!.section as { title?: string }[]).map((section) => section.title)).toEqual(['S0']);
  });

  test('a procedure a planned procedure refers to is a Procedure based on the request, with its own status; a diagnosis a procedure is about a Condition', async () => {
    const planned = `<entry><procedure classCode="PROC" moodCode="RQO"><templateId root="${E}41"/><id root="1.2.3" extension="plan"/>
<code code="168731009" codeSystem="${SNOMED_OID}" displayName="Chest X-ray"/><statusCode code="active"/>
<entryRelationship typeCode="REFR"><procedure classCode="PROC" moodCode="EVN"><templateId root="${E}14"/><id root="1.2.3" extension="xray"/>
<code code="168731009" codeSystem="${SNOMED_OID}" displayName="Chest X-ray"/><statusCode code="active"/><effectiveTime><low value="20130130"/></effectiveTime></procedure></entryRelationship>
<entryRelationship typeCode="REFR"><act classCode="ACT" moodCode="EVN" negationInd="true"><templateId root="${E}12"/><id root="1.2.3" extension="no-education"/>
<code code="311401005" codeSystem="${SNOMED_OID}" displayName="Patient education"/><statusCode code="completed"/><effectiveTime value="20130130"/></act></entryRelationship>
<entryRelationship typeCode="SUBJ">${problemObservation({ id: 'cough', value: '49727002' })}</entryRelationship></procedure></entry>`;
    const resources = await convert(documentWith([S + '10', planned]));
    const [request] = withIdentifier(resources, 'plan').filter((resource) => resource.resourceType === 'ServiceRequest');
    expect(request).toBeDefined();
    const [xray] = withIdentifier(resources, 'xray');
    expect(xray?.resourceType).toBe('Procedure');
    expect(xray!.status).toBe('in-progress');
    expect(xray!.basedOn).toEqual([{ reference: `ServiceRequest/${request!.id}` }]);
    const [education] = withIdentifier(resources, 'no-education');
    expect(education?.resourceType).toBe('Procedure');
    expect(education!.status).toBe('not-done');
    const [cough] = withIdentifier(resources, 'cough');
    expect(cough?.resourceType).toBe('Condition');
  });
});

describe('medications of sections the converter does not know', () => {
  test('medications administered are converted like a medication list; one medication stated in both is a resource in each', async () => {
    const administered = medicationFor('');
    const resources = await convert(documentWith([S + '1.1', medicationFor('')], [S + '38', administered]));
    const statements = withIdentifier(resources, 'med');
    expect(statements.map((resource) => resource.resourceType)).toEqual(['MedicationStatement', 'MedicationStatement']);
    expect(new Set(statements.map((resource) => resource.id)).size).toBe(2);
  });

  test('admission medications, each wrapped in an admission medication act, are converted', async () => {
    const admission = `<entry><act classCode="ACT" moodCode="EVN"><templateId root="${E}36"/><code code="42346-7" codeSystem="2.16.840.1.113883.6.1"/><statusCode code="active"/>
<entryRelationship typeCode="SUBJ">${medicationFor('').replace(/^<entry>|<\/entry>$/g, '')}</entryRelationship></act></entry>`;
    const resources = await convert(documentWith([S + '44', admission]));
    expect(withIdentifier(resources, 'med').map((resource) => resource.resourceType)).toEqual(['MedicationStatement']);
  });
});

describe('observations named in words only', () => {
  test('a vital sign whose code is only its original text keeps those words as its code; one whose words deny is left out', async () => {
    const vital = (id: string, words: string) => `<component><observation classCode="OBS" moodCode="EVN"><templateId root="${E}27"/><id root="1.2.3" extension="${id}"/>
<code nullFlavor="UNK"><originalText>${words}</originalText></code><statusCode code="completed"/><effectiveTime value="20130710"/><value xsi:type="PQ" value="25.88" unit="kg/m2"/></observation></component>`;
    const organizer = `<entry><organizer classCode="CLUSTER" moodCode="EVN"><templateId root="${E}26"/><id root="1.2.3" extension="vitals"/>
<code code="46680005" codeSystem="${SNOMED_OID}"/><statusCode code="completed"/><effectiveTime value="20130710"/>
${vital('bmi', 'Body Mass Index Measured')}${vital('none', 'No vital signs recorded')}</organizer></entry>`;
    const resources = await convert(documentWith([S + '4.1', organizer]));
    const [bmi] = withIdentifier(resources, 'bmi');
    expect(bmi?.resourceType).toBe('Observation');
    expect(bmi!.code).toEqual({ text: 'Body Mass Index Measured' });
    expect(withIdentifier(resources, 'none')).toEqual([]);
  });
});
