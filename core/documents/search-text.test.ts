import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { patientResourcesArb } from '../../spec/arbitraries/fhir.js';
import { searchTextOf, searchTextOfCcda } from './search-text.js';

describe('searchTextOf', () => {
  test('keeps displays, text, names, notes, values with units and dates; leaves out machine data', () => {
    const text = searchTextOf({
      resourceType: 'Observation',
      id: '5f0c1a2e-0000-4000-8000-000000000001',
      meta: { profile: ['http://example.org/profile'] },
      identifier: [{ system: 'urn:oid:2.16.840.1.113883.19', value: 'MRN-99' }],
      extension: [{ url: 'https://medplum.com/x', valueString: '#result1' }],
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '2339-0', display: 'Glucose [Mass/volume] in Blood' }], text: 'Blood glucose' },
      subject: { reference: 'Patient/123', display: 'Jane Doe' },
      effectiveDateTime: '2012-08-06T10:30:00-05:00',
      valueQuantity: { value: 182, unit: 'mg/dL', system: 'http://unitsofmeasure.org', code: 'mg/dL' },
      note: [{ text: 'Fasting sample' }],
      performer: [{ reference: 'Practitioner/9' }],
    });
    for (const expected of ['Glucose [Mass/volume] in Blood', 'Blood glucose', 'Jane Doe', '2012-08-06T10:30:00-05:00', '182', 'mg/dL', 'Fasting sample']) {
      expect(text).toContain(expected);
    }
    for (const absent of ['5f0c1a2e', 'profile', 'MRN-99', '2.16.840', '#result1', 'final', '2339-0', 'loinc', 'Patient/123', 'Practitioner/9', 'unitsofmeasure']) {
      expect(text).not.toContain(absent);
    }
  });

  test('names, narrative and contained drugs are searchable', () => {
    expect(searchTextOf({ resourceType: 'Patient', id: 'p', name: [{ given: ['Isabella', 'Isa'], family: 'Jones', prefix: ['Ms'] }], birthDate: '1947-05-01' })).toBe(
      'Isabella Isa Jones Ms 1947-05-01',
    );
    expect(searchTextOf({ resourceType: 'Composition', id: 'c', title: 'Summary', section: [{ text: { status: 'generated', div: '<div><b>Asthma</b> &amp; cough</div>' } }] })).toBe(
      'Summary Asthma & cough',
    );
    const request = {
      resourceType: 'MedicationRequest',
      id: 'm',
      contained: [{ resourceType: 'Medication', id: 'med-1', code: { coding: [{ display: 'albuterol 0.09 MG/ACTUAT' }] } }],
      medicationReference: { reference: '#med-1' },
    };
    expect(searchTextOf(request)).toBe('albuterol 0.09 MG/ACTUAT');
  });

  test('never contains a resource id or a reference', () => {
    fc.assert(
      fc.property(patientResourcesArb(), (resources) => {
        for (const resource of resources) {
          const text = searchTextOf(resource);
          expect(text).not.toMatch(/[A-Za-z]+\/[a-z]+-\d+/);
          expect(text.split(' ')).not.toContain(resource.id);
        }
      }),
      { numRuns: 50 },
    );
  });
});

describe('searchTextOfCcda', () => {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet type="text/xsl" href="CDA.xsl"?>
<!-- a comment that is not text -->
<ClinicalDocument xmlns="urn:hl7-org:v3">
  <title>Community Health &amp; Hospitals: History &#38; Physical</title>
  <code code="34117-2" codeSystem="2.16.840.1.113883.6.1" displayName="History and physical note"/>
  <component><structuredBody><component><section>
    <text><table><tr><td>Metoprolol</td><td>25&#160;mg</td></tr></table><![CDATA[raw note]]></text>
  </section></component></structuredBody></component>
</ClinicalDocument>`;

  test('keeps element text and coded display names; drops tags, comments, declarations and codes', () => {
    const text = searchTextOfCcda(xml);
    expect(text).toContain('Community Health & Hospitals: History & Physical');
    expect(text).toContain('Metoprolol');
    expect(text).toContain('25 mg');
    expect(text).toContain('raw note');
    expect(text).toContain('History and physical note');
    for (const absent of ['<', '>', 'comment', 'xml-stylesheet', '34117-2', '2.16.840', 'urn:hl7-org']) expect(text).not.toContain(absent);
  });

  test('never throws, whatever the text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 500 }), (value) => {
        expect(typeof searchTextOfCcda(value)).toBe('string');
      }),
      { numRuns: 200 },
    );
  });
});
