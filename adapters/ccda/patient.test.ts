import { describe, expect, test } from 'vitest';
import { MedplumCcdaConverter } from './medplum.ccda.js';

const RECORD_TARGET = `<recordTarget><patientRole><id root="2.16.840.1.113883.19.5" extension="p1"/>
<addr use="HP"><streetAddressLine>1 New St</streetAddressLine><city>Portland</city><state>OR</state><postalCode>97201</postalCode><useablePeriod><low value="20190101"/></useablePeriod></addr>
<addr use="OLD"><streetAddressLine>9 Old Rd</streetAddressLine><city nullFlavor="UNK"/><state>OR</state><useablePeriod><low value="20050101"/><high value="20181231"/></useablePeriod></addr>
<patient><name use="L"><given>Alice</given><given>Jones</given><family>Newman</family></name>
<name><given qualifier="BR">Alicia</given><family qualifier="BR">Newman</family><validTime><low value="20010505"/><high value="20210510"/></validTime></name>
<name use="P"><given>Ally</given></name>
<administrativeGenderCode code="F" codeSystem="2.16.840.1.113883.5.1"/><birthTime value="19700101"/>
<sdtc:deceasedInd value="true"/><sdtc:deceasedTime value="20180315"/>
<maritalStatusCode code="W" codeSystem="2.16.840.1.113883.5.2" displayName="Widowed"/>
<languageCommunication><languageCode code="es"/><preferenceInd value="true"/></languageCommunication>
<languageCommunication><languageCode code="en"/><preferenceInd value="false"/></languageCommunication>
</patient></patientRole></recordTarget>`;

const DOCUMENT = `<?xml version="1.0"?><ClinicalDocument xmlns="urn:hl7-org:v3" xmlns:sdtc="urn:hl7-org:sdtc">
<realmCode code="US"/><typeId root="2.16.840.1.113883.1.3" extension="POCD_HD000040"/><templateId root="2.16.840.1.113883.10.20.22.1.1" extension="2015-08-01"/>
<id root="2.16.840.1.113883.19.5" extension="doc"/><code code="34133-9" codeSystem="2.16.840.1.113883.6.1"/><title>T</title><effectiveTime value="20200101"/>
<confidentialityCode code="N" codeSystem="2.16.840.1.113883.5.25"/>${RECORD_TARGET}
<author><time value="20200101"/><assignedAuthor><id root="2.16.840.1.113883.4.6" extension="1"/></assignedAuthor></author>
<custodian><assignedCustodian><representedCustodianOrganization><id root="2.16.840.1.113883.19.5"/><name>Org</name></representedCustodianOrganization></assignedCustodian></custodian>
<component><structuredBody><component><section><title>S</title><text>t</text></section></component></structuredBody></component></ClinicalDocument>`;

describe('the patient as the recordTarget states it', () => {
  test('every name and address with its use and period, death, marital status and languages', async () => {
    const bundle = await new MedplumCcdaConverter().convert(DOCUMENT);
    const patient = bundle.entry!.find((entry) => entry.resource?.resourceType === 'Patient')!.resource!;
    expect(patient.name).toEqual([
      { use: 'official', family: 'Newman', given: ['Alice', 'Jones'] },
      { use: 'maiden', family: 'Newman', given: ['Alicia'], period: { start: '2001-05-05', end: '2021-05-10' } },
      { use: 'nickname', given: ['Ally'] },
    ]);
    expect(patient.address).toEqual([
      { use: 'home', line: ['1 New St'], city: 'Portland', state: 'OR', postalCode: '97201', period: { start: '2019-01-01' } },
      { use: 'old', line: ['9 Old Rd'], state: 'OR', period: { start: '2005-01-01', end: '2018-12-31' } },
    ]);
    expect(patient.deceasedDateTime).toBe('2018-03-15');
    expect(patient.maritalStatus).toEqual({ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: 'W', display: 'Widowed' }] });
    expect(patient.communication).toEqual([
      { language: { coding: [{ system: 'urn:ietf:bcp:47', code: 'es' }] }, preferred: true },
      { language: { coding: [{ system: 'urn:ietf:bcp:47', code: 'en' }] }, preferred: false },
    ]);
    // No parser artefact (an attribute or text node of the XML) anywhere in the patient.
    expect(JSON.stringify(patient)).not.toMatch(/"@_|"#text"/);
  });
});
