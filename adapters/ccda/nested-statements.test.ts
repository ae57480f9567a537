import { describe, expect, test } from 'vitest';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';

const E = '2.16.840.1.113883.10.20.22.4.';
const S = '2.16.840.1.113883.10.20.22.2.';
const SNOMED_OID = '2.16.840.1.113883.6.96';
const RXNORM_OID = '2.16.840.1.113883.6.88';

/** A minimal C-CDA R2.1 document holding the given sections (template root and entries). */
function documentWith(...sections: [template: string, entries: string][]): string {
  const body = sections
    .map(([template, entries], index) => `<component><section><templateId root="${template}"/><code code="x${index}" codeSystem="2.16.840.1.113883.6.1"/><title>S${index}</title><text>t</text>
${entries}
</section></component>`)
    .join('\n');
  return `<?xml version="1.0"?><ClinicalDocument xmlns="urn:hl7-org:v3" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<realmCode code="US"/><typeId root="2.16.840.1.113883.1.3" extension="POCD_HD000040"/>
<templateId root="2.16.840.1.113883.10.20.22.1.1" extension="2015-08-01"/><templateId root="2.16.840.1.113883.10.20.22.1.2" extension="2015-08-01"/>
<id root="2.16.840.1.113883.19.5" extension="doc"/><code code="34133-9" codeSystem="2.16.840.1.113883.6.1"/><title>Test</title>
<effectiveTime value="20200101"/><confidentialityCode code="N" codeSystem="2.16.840.1.113883.5.25"/>
<recordTarget><patientRole><id root="2.16.840.1.113883.19.5" extension="p1"/><patient><name><given>A</given><family>B</family></name>
<administrativeGenderCode code="F" codeSystem="2.16.840.1.113883.5.1"/><birthTime value="19700101"/></patient></patientRole></recordTarget>
<author><time value="20200101"/><assignedAuthor><id root="2.16.840.1.113883.4.6" extension="1"/><assignedPerson><name><given>C</given><family>D</family></name></assignedPerson></assignedAuthor></author>
<custodian><assignedCustodian><representedCustodianOrganization><id root="2.16.840.1.113883.19.5"/><name>Org</name></representedCustodianOrganization></assignedCustodian></custodian>
<component><structuredBody>${body}</structuredBody></component></ClinicalDocument>`;
}

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
