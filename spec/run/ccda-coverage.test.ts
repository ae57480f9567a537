import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { codedEntriesOf, coverageOf } from '../support/ccda-coverage.js';

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const fixtures = readdirSync(fixturesDir)
  .filter((name) => name.endsWith('.xml'))
  .sort()
  .map((name) => ({ name, xml: readFileSync(fixturesDir + name, 'utf8') }));

/** Share of the sandbox documents' coded entries that must land, traceable, in the conversion. */
const MIN_COVERAGE = 0.98;

describe('coverage of the coded C-CDA entries', () => {
  test('the counter finds the entries of a small document, with their ids as FHIR identifiers', () => {
    const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3"><component><structuredBody><component><section>
      <entry><act><templateId root="2.16.840.1.113883.10.20.22.4.3"/><entryRelationship typeCode="SUBJ">
        <observation moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.4"/><id root="AB1791B0-5C71-11DB-B0DE-0800200C9A66"/></observation>
      </entryRelationship></act></entry>
      <entry><substanceAdministration moodCode="INT"><templateId root="2.16.840.1.113883.10.20.22.4.16"/><id root="1.2.3" extension="x"/></substanceAdministration></entry>
      <entry><substanceAdministration moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.16"/><id nullFlavor="NI"/></substanceAdministration></entry>
    </section></component></structuredBody></component></ClinicalDocument>`;
    expect(codedEntriesOf(xml).map(({ template, expectedType, identifiers, line }) => ({ template, expectedType, identifiers, line }))).toEqual([
      { template: '4', expectedType: 'Condition', identifiers: ['urn:ietf:rfc:3986|urn:uuid:ab1791b0-5c71-11db-b0de-0800200c9a66'], line: 3 },
      { template: '16', expectedType: 'MedicationRequest', identifiers: ['urn:oid:1.2.3|x'], line: 5 },
      { template: '16', expectedType: 'MedicationStatement', identifiers: [], line: 6 },
    ]);
  });

  test('an entry lands only as a resource of its type carrying its id, one resource per entry', () => {
    const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3">
      <observation moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.4"/><id root="1.2.3" extension="p"/></observation>
      <observation moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.4"/><id root="1.2.3" extension="p"/></observation>
      <observation moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.27"/><id root="1.2.3" extension="v"/></observation>
    </ClinicalDocument>`;
    const condition = { resourceType: 'Condition', id: 'c', identifier: [{ system: 'urn:oid:1.2.3', value: 'p' }] };
    const wrongType = { resourceType: 'Observation', id: 'o', identifier: [{ system: 'urn:oid:1.2.3', value: 'p' }] };
    const result = coverageOf(xml, [condition, wrongType]);
    expect(result.entries).toBe(3);
    expect(result.landed).toBe(1);
    expect(result.missing.map((m) => m.reason)).toEqual(['its id is on Condition, Observation only', 'no resource carries its id (1 Observation in the bundle)']);
  });

  test(`at least ${MIN_COVERAGE * 100}% of the sandbox documents' coded entries land, each as a resource traceable to its entry`, async () => {
    const converter = new MedplumCcdaConverter();
    let entries = 0;
    let landed = 0;
    const missing: string[] = [];
    for (const fixture of fixtures) {
      const bundle = await converter.convert(fixture.xml);
      const result = coverageOf(fixture.xml, (bundle.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : [])));
      entries += result.entries;
      landed += result.landed;
      for (const entry of result.missing) missing.push(`${fixture.name}:${entry.line} ${entry.expectedType}: ${entry.reason}`);
    }
    expect(entries).toBeGreaterThan(150);
    expect(landed / entries, `landed ${landed} of ${entries}; missing:\n${missing.join('\n')}`).toBeGreaterThanOrEqual(MIN_COVERAGE);
  });
});
