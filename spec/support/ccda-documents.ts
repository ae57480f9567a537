/** Minimal C-CDA documents for converter tests: a valid US Realm header around the sections a test gives. */

/** A minimal C-CDA R2.1 document holding the given sections (template root and entries). */
export function documentWith(...sections: [template: string, entries: string][]): string {
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
