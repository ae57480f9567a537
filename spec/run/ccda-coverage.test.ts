import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { codedEntriesOf, coverageOf, POLARITY_RULES, polarityRuleOf } from '../support/ccda-coverage.js';

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

  test('line numbers count CRLF line ends once', () => {
    const xml = '<ClinicalDocument xmlns="urn:hl7-org:v3">\r\n<!-- x -->\r\n  <observation moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.4"/><id root="1.2.3"/></observation>\r\n</ClinicalDocument>';
    expect(codedEntriesOf(`${'<!-- padding -->\r\n'.repeat(200)}${xml}`)[0]!.line).toBe(203);
  });

  test('an entry lands only as a resource of its type carrying its id, one resource per entry', () => {
    const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3">
      <observation moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.4"/><id root="1.2.3" extension="p"/><value code="38341003"/></observation>
      <observation moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.4"/><id root="1.2.3" extension="p"/><value code="38341003"/></observation>
      <observation moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.27"/><id root="1.2.3" extension="v"/><code code="8867-4" codeSystem="2.16.840.1.113883.6.1"/></observation>
    </ClinicalDocument>`;
    const condition = { resourceType: 'Condition', id: 'c', identifier: [{ system: 'urn:oid:1.2.3', value: 'p' }] };
    const wrongType = { resourceType: 'Observation', id: 'o', identifier: [{ system: 'urn:oid:1.2.3', value: 'p' }] };
    const result = coverageOf(xml, [condition, wrongType]);
    expect(result.entries).toBe(3);
    expect(result.landed).toBe(1);
    expect(result.missing.map((m) => m.reason)).toEqual([
      'the Condition carrying its id is matched to another entry with the same id',
      'no resource carries its id (1 Observation in the bundle)',
    ]);
    const onOtherTypes = coverageOf(xml.replace(/<observation[^]*?<\/observation>/, ''), [wrongType]);
    expect(onOtherTypes.missing.map((m) => m.reason)).toContain('its id is on Observation only');
  });

  test('the counter reads whether a statement is negated or nullified, and whether an allergy names a substance', () => {
    const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3">
      <observation moodCode="EVN" negationInd="true"><templateId root="2.16.840.1.113883.10.20.22.4.7"/><id root="1.2.3" extension="nka"/>
        <participant typeCode="CSM"><participantRole><playingEntity><code nullFlavor="NA"/></playingEntity></participantRole></participant></observation>
      <observation moodCode="EVN" negationInd="true"><templateId root="2.16.840.1.113883.10.20.22.4.7"/><id root="1.2.3" extension="peanut"/>
        <participant typeCode="CSM"><participantRole><playingEntity><code code="256349002" codeSystem="2.16.840.1.113883.6.96"/></playingEntity></participantRole></participant></observation>
      <observation moodCode="EVN"><templateId root="2.16.840.1.113883.10.20.22.4.4"/><id root="1.2.3" extension="p"/><statusCode code="nullified"/></observation>
      <observation moodCode="EVN" negationInd="true"><templateId root="2.16.840.1.113883.10.20.22.4.7"/><id root="1.2.3" extension="any"/>
        <participant typeCode="CSM"><participantRole><playingEntity><code code="105590001" displayName="Substance"/></playingEntity></participantRole></participant></observation>
    </ClinicalDocument>`;
    expect(codedEntriesOf(xml).map(({ negated, nullified, noSubstance }) => ({ negated, nullified, noSubstance }))).toEqual([
      { negated: true, nullified: false, noSubstance: true },
      { negated: true, nullified: false, noSubstance: false },
      { negated: false, nullified: true, noSubstance: false },
      { negated: true, nullified: false, noSubstance: true },
    ]);
  });

  describe('an entry lands only as a resource that says what the entry says about whether it happened', () => {
    const ENTRY = '2.16.840.1.113883.10.20.22.4.';
    /** One statement, its attributes, and a resource of its type carrying its id with the fields given. */
    const cases: {
      rule: string;
      element: string;
      template: string;
      attributes: string;
      inner?: string;
      type: string;
      holds: Record<string, unknown>[];
      fails: Record<string, unknown>[];
    }[] = [
      {
        rule: 'nullified-entered-in-error',
        element: 'observation',
        template: '4',
        attributes: 'moodCode="EVN"',
        inner: '<statusCode code="nullified"/>',
        type: 'Condition',
        holds: [{ verificationStatus: { coding: [{ code: 'entered-in-error' }] } }],
        fails: [{ verificationStatus: { coding: [{ code: 'confirmed' }] } }, {}],
      },
      {
        rule: 'nullified-entered-in-error',
        element: 'substanceAdministration',
        template: '52',
        attributes: 'moodCode="EVN" negationInd="true"',
        inner: '<statusCode code="nullified"/><consumable><manufacturedProduct><manufacturedMaterial><code code="88" codeSystem="2.16.840.1.113883.12.292"/></manufacturedMaterial></manufacturedProduct></consumable>',
        type: 'Immunization',
        holds: [{ status: 'entered-in-error' }],
        fails: [{ status: 'not-done' }],
      },
      {
        rule: 'negated-condition-refuted',
        element: 'observation',
        template: '4',
        attributes: 'moodCode="EVN" negationInd="true"',
        inner: '<value code="44054006" codeSystem="2.16.840.1.113883.6.96"/>',
        type: 'Condition',
        holds: [{ verificationStatus: { coding: [{ code: 'refuted' }] } }],
        fails: [{ verificationStatus: { coding: [{ code: 'confirmed' }] } }, {}],
      },
      {
        rule: 'negated-allergy-refuted-or-no-known-allergy',
        element: 'observation',
        template: '7',
        attributes: 'moodCode="EVN" negationInd="true"',
        inner: '<participant typeCode="CSM"><participantRole><playingEntity><code code="256349002"/></playingEntity></participantRole></participant>',
        type: 'AllergyIntolerance',
        holds: [{ verificationStatus: { coding: [{ code: 'refuted' }] }, code: { coding: [{ code: '256349002' }] } }],
        // A named substance is not "no known allergy", and an unrefuted allergy to it is the opposite.
        fails: [{ code: { coding: [{ code: '716186003' }] } }, { code: { coding: [{ code: '256349002' }] } }],
      },
      {
        rule: 'negated-allergy-refuted-or-no-known-allergy',
        element: 'observation',
        template: '7',
        attributes: 'moodCode="EVN" negationInd="true"',
        inner: '<participant typeCode="CSM"><participantRole><playingEntity><code nullFlavor="NA"/></playingEntity></participantRole></participant>',
        type: 'AllergyIntolerance',
        holds: [
          { verificationStatus: { coding: [{ code: 'confirmed' }] }, code: { coding: [{ code: '716186003' }] } },
          { code: { coding: [{ code: '409137002' }] } },
          { verificationStatus: { coding: [{ code: 'refuted' }] }, code: { coding: [{ code: '419199007' }] } },
        ],
        // Refuting "no known allergy" says the patient has one; a confirmed "allergy to substance" says so too.
        fails: [
          { verificationStatus: { coding: [{ code: 'refuted' }] }, code: { coding: [{ code: '716186003' }] } },
          { verificationStatus: { coding: [{ code: 'confirmed' }] }, code: { coding: [{ code: '419199007' }] } },
        ],
      },
      {
        rule: 'negated-procedure-not-done',
        element: 'procedure',
        template: '14',
        attributes: 'moodCode="EVN" negationInd="true"',
        type: 'Procedure',
        holds: [{ status: 'not-done' }],
        fails: [{ status: 'completed' }],
      },
      {
        rule: 'negated-immunization-not-done',
        element: 'substanceAdministration',
        template: '52',
        attributes: 'moodCode="EVN" negationInd="true"',
        inner: '<consumable><manufacturedProduct><manufacturedMaterial><code code="88" codeSystem="2.16.840.1.113883.12.292"/></manufacturedMaterial></manufacturedProduct></consumable>',
        type: 'Immunization',
        holds: [{ status: 'not-done' }],
        fails: [{ status: 'completed' }],
      },
      {
        rule: 'negated-medication-statement-not-taken',
        element: 'substanceAdministration',
        template: '16',
        attributes: 'moodCode="EVN" negationInd="true"',
        type: 'MedicationStatement',
        holds: [{ status: 'not-taken' }],
        fails: [{ status: 'active' }],
      },
      {
        rule: 'negated-request-do-not-perform',
        element: 'substanceAdministration',
        template: '16',
        attributes: 'moodCode="INT" negationInd="true"',
        type: 'MedicationRequest',
        holds: [{ status: 'active', doNotPerform: true }],
        fails: [{ status: 'active' }],
      },
      {
        rule: 'affirmed-not-negated',
        element: 'substanceAdministration',
        template: '52',
        attributes: 'moodCode="EVN"',
        inner: '<consumable><manufacturedProduct><manufacturedMaterial><code code="88" codeSystem="2.16.840.1.113883.12.292"/></manufacturedMaterial></manufacturedProduct></consumable>',
        type: 'Immunization',
        holds: [{ status: 'completed' }],
        fails: [{ status: 'not-done' }, { status: 'entered-in-error' }],
      },
      {
        rule: 'affirmed-not-negated',
        element: 'observation',
        template: '4',
        attributes: 'moodCode="EVN" negationInd="false"',
        type: 'Condition',
        holds: [{ verificationStatus: { coding: [{ code: 'confirmed' }] } }, {}],
        fails: [{ verificationStatus: { coding: [{ code: 'refuted' }] } }],
      },
    ];

    test('every rule is exercised below', () => {
      expect(new Set(cases.map((c) => c.rule))).toEqual(new Set(POLARITY_RULES.map((rule) => rule.name)));
    });

    for (const c of cases) {
      const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3"><${c.element} ${c.attributes}><templateId root="${ENTRY}${c.template}"/><id root="1.2.3" extension="e"/><code code="c"/><value code="v"/>${c.inner ?? ''}</${c.element}></ClinicalDocument>`;
      const resourceOf = (fields: Record<string, unknown>) => ({ resourceType: c.type, id: 'r', identifier: [{ system: 'urn:oid:1.2.3', value: 'e' }], ...fields });

      test(`${c.rule}: <${c.element} ${c.attributes}>${c.inner ?? ''} as a ${c.type}`, () => {
        const [entry] = codedEntriesOf(xml);
        expect(polarityRuleOf(entry!)?.name).toBe(c.rule);
        for (const fields of c.holds) expect(coverageOf(xml, [resourceOf(fields)]).landed, JSON.stringify(fields)).toBe(1);
        for (const fields of c.fails) {
          const result = coverageOf(xml, [resourceOf(fields)]);
          expect(result.landed, JSON.stringify(fields)).toBe(0);
          expect(result.missing[0]!.reason).toMatch(new RegExp(`^${c.rule}: the ${c.type} needs `));
          expect(result.byRule[c.rule]).toEqual([0, 1]);
        }
      });
    }

    test('a negated observation asserts nothing R4 can say: it lands when no Observation asserts it', () => {
      const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3"><observation moodCode="EVN" negationInd="true"><templateId root="${ENTRY}2"/><id root="1.2.3" extension="o"/></observation></ClinicalDocument>`;
      const [entry] = codedEntriesOf(xml);
      expect(entry!.placeholder).toBe('a negated finding (no FHIR R4 form)');
      expect(coverageOf(xml, []).landed).toBe(1);
      expect(coverageOf(xml, [{ resourceType: 'Observation', id: 'o', status: 'final', identifier: [{ system: 'urn:oid:1.2.3', value: 'o' }] }]).landed).toBe(0);
    });

    test('placeholders (a null-flavored statement, an immunization without a coded vaccine) land only when nothing asserts them', () => {
      const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3">
        <substanceAdministration moodCode="EVN" nullFlavor="NI"><templateId root="${ENTRY}52"/><id root="1.2.3" extension="ni"/></substanceAdministration>
        <substanceAdministration moodCode="EVN"><templateId root="${ENTRY}52"/><id root="1.2.3" extension="text"/>
          <consumable><manufacturedProduct><manufacturedMaterial><code nullFlavor="UNK"><originalText>No immunization data</originalText></code></manufacturedMaterial></manufacturedProduct></consumable></substanceAdministration>
      </ClinicalDocument>`;
      expect(codedEntriesOf(xml).map((entry) => entry.placeholder)).toEqual(['the statement is null-flavored (NI)', 'an immunization without a coded vaccine']);
      expect(coverageOf(xml, []).landed).toBe(2);
      const asserted = { resourceType: 'Immunization', id: 'i', status: 'completed', identifier: [{ system: 'urn:oid:1.2.3', value: 'text' }] };
      expect(coverageOf(xml, [asserted]).landed).toBe(1);
    });

    test('words that say there is nothing, inline or in the narrative, are a placeholder; a narrated name is not', () => {
      const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3"><section><text><content ID="none">No Information About Procedures</content><content ID="lap">Laparoscopic appendectomy</content></text>
        <procedure moodCode="EVN"><templateId root="${ENTRY}14"/><id root="1.2.3" extension="a"/><code nullFlavor="NI"><originalText><reference value="#none"/></originalText></code></procedure>
        <procedure moodCode="EVN"><templateId root="${ENTRY}14"/><id root="1.2.3" extension="b"/><code nullFlavor="UNK"><originalText><reference value="#lap"/></originalText></code></procedure>
        <observation moodCode="EVN"><templateId root="${ENTRY}27"/><id root="1.2.3" extension="c"/><code nullFlavor="UNK"><originalText>No vital sign data is applicable</originalText></code></observation>
      </section></ClinicalDocument>`;
      expect(codedEntriesOf(xml).map((entry) => entry.placeholder)).toEqual(['a procedure naming none', undefined, 'an observation without a code']);
    });

    test('an entry without an id is traced by its codes', () => {
      const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3"><observation moodCode="EVN"><templateId root="${ENTRY}4"/><id nullFlavor="NI"/><value code="44054006"/></observation></ClinicalDocument>`;
      expect(coverageOf(xml, [{ resourceType: 'Condition', id: 'c', code: { coding: [{ code: '44054006' }] } }]).landed).toBe(1);
      expect(coverageOf(xml, [{ resourceType: 'Condition', id: 'c', code: { coding: [{ code: '38341003' }] } }]).landed).toBe(0);
      expect(coverageOf(xml, [{ resourceType: 'Condition', id: 'c', code: { coding: [{ code: '44054006' }] }, verificationStatus: { coding: [{ code: 'refuted' }] } }]).landed).toBe(0);
    });

    test('of two resources carrying the id, the one with the right polarity is matched', () => {
      const xml = `<ClinicalDocument xmlns="urn:hl7-org:v3"><procedure moodCode="EVN" negationInd="true"><templateId root="${ENTRY}14"/><id root="1.2.3" extension="x"/><code code="6025007"/></procedure></ClinicalDocument>`;
      const identifier = [{ system: 'urn:oid:1.2.3', value: 'x' }];
      const result = coverageOf(xml, [
        { resourceType: 'Procedure', id: 'a', status: 'completed', identifier },
        { resourceType: 'Procedure', id: 'b', status: 'not-done', identifier },
      ]);
      expect(result.landed).toBe(1);
      expect(result.byRule).toEqual({ 'negated-procedure-not-done': [1, 1] });
    });
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
