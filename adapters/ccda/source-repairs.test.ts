import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { listOf, type CcdaNode } from './ccda-nodes.js';
import { fhirDateTimeOf } from './hl7-time.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';
import { repairConvertedResources, type RepairContext } from './repair.js';
import {
  conditionCategory,
  doseUnits,
  droppedDatesRestored,
  encounterClass,
  entryIdentifiers,
  medicationHistoryIsAStatement,
  nullFlavorValues,
  partialDatesKeepPrecision,
  referenceRanges,
} from './source-repairs.js';

/** A context where each resource was made of the element given for its id. */
function contextOf(sources: Record<string, CcdaNode>): RepairContext {
  return { sourceOf: (resource) => (resource.id ? sources[resource.id] : undefined), idsOf: (element) => listOf(element.id) as CcdaNode[] };
}
const E = '2.16.840.1.113883.10.20.22.4.';

const fixture = (name: string) => readFileSync(new URL(`../../sandbox-data/ccda/${name}`, import.meta.url), 'utf8');
async function resourcesOf(name: string): Promise<FhirResource[]> {
  return ((await new MedplumCcdaConverter().convert(fixture(name))).entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
}

describe('HL7 timestamps', () => {
  test('keep their precision, their zone, and are cut back where they are no date', () => {
    expect(fhirDateTimeOf('1999')).toBe('1999');
    expect(fhirDateTimeOf('199911')).toBe('1999-11');
    expect(fhirDateTimeOf('19991105')).toBe('1999-11-05');
    expect(fhirDateTimeOf('201209251130-0500')).toBe('2012-09-25T11:30:00-05:00');
    expect(fhirDateTimeOf('20120925113015.25+0000')).toBe('2012-09-25T11:30:15.25Z');
    expect(fhirDateTimeOf('2012092511')).toBe('2012-09-25T11:00:00Z');
    expect(fhirDateTimeOf('200130311')).toBe('2001');
    expect(fhirDateTimeOf('20140230')).toBe('2014-02');
    expect(fhirDateTimeOf('not a date')).toBeUndefined();
  });
});

describe('repair rules that read the source entry', () => {
  test('entry identifiers: the entry’s ids (and its subject observation’s) as FHIR writes them; valueless ones fixed', () => {
    const act = {
      id: [{ '@_root': 'AB1791B0-5C71-11DB-B0DE-0800200C9A66' }, { '@_root': '1.2.3', '@_extension': 'x' }],
      entryRelationship: [{ '@_typeCode': 'SUBJ', observation: [{ id: [{ '@_root': '1.2.4' }, { '@_nullFlavor': 'NI' }] }] }],
    };
    const condition: FhirResource = { resourceType: 'Condition', id: 'c', identifier: [{ system: 'urn:oid:1.2.3', value: 'x' }, { system: 'urn:oid:1.2.5' }] };
    const context = contextOf({ c: act });
    expect(entryIdentifiers.apply(condition, context)).toBe(true);
    expect(condition.identifier).toEqual([
      { system: 'urn:oid:1.2.3', value: 'x' },
      { system: 'urn:ietf:rfc:3986', value: 'urn:oid:1.2.5' },
      { system: 'urn:ietf:rfc:3986', value: 'urn:uuid:ab1791b0-5c71-11db-b0de-0800200c9a66' },
      { system: 'urn:ietf:rfc:3986', value: 'urn:oid:1.2.4' },
    ]);
    expect(entryIdentifiers.apply(condition, context)).toBe(false);
    const orphan: FhirResource = { resourceType: 'Observation', id: 'o', identifier: [{ system: 'urn:oid:1.2.3', value: 'y' }] };
    expect(entryIdentifiers.apply(orphan, context)).toBe(false);
  });

  test('entry identifiers: a procedure is not identified by the problem it is about (its SUBJ), only a concern by its subject', () => {
    const procedure = {
      id: [{ '@_root': '1.2.3', '@_extension': 'procedure' }],
      entryRelationship: [{ '@_typeCode': 'SUBJ', observation: [{ templateId: [{ '@_root': E + '4' }], id: [{ '@_root': '1.2.3', '@_extension': 'problem' }] }] }],
    };
    const resource: FhirResource = { resourceType: 'ServiceRequest', id: 'p' };
    expect(entryIdentifiers.apply(resource, contextOf({ p: procedure }))).toBe(true);
    expect(resource.identifier).toEqual([{ system: 'urn:oid:1.2.3', value: 'procedure' }]);
  });

  test('medication history is a statement: EVN becomes a MedicationStatement with its period; INT stays a request', () => {
    const taken = { '@_moodCode': 'EVN', effectiveTime: [{ low: { '@_value': '20110103' }, high: { '@_value': '201203' } }] };
    const refused = { '@_moodCode': 'EVN', '@_negationInd': 'true' };
    const ordered = { '@_moodCode': 'INT' };
    const request = (id: string): FhirResource => ({
      resourceType: 'MedicationRequest',
      id,
      meta: { profile: ['http://hl7.org/fhir/us/core/StructureDefinition/us-core-medicationrequest'] },
      status: 'active',
      intent: 'order',
      medicationCodeableConcept: { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '197380' }] },
      subject: { reference: 'Patient/p' },
      authoredOn: '2012-03-18',
      dispenseRequest: { validityPeriod: { start: '2011-01-03T00:00:00Z' } },
      dosageInstruction: [{ text: 'daily' }],
    });
    const context = contextOf({ taken, refused, ordered });
    const [a, b, c] = [request('taken'), request('refused'), request('ordered')];
    expect(medicationHistoryIsAStatement.apply(a, context)).toBe(true);
    expect(a).toEqual({
      resourceType: 'MedicationStatement',
      id: 'taken',
      status: 'active',
      medicationCodeableConcept: { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '197380' }] },
      subject: { reference: 'Patient/p' },
      effectivePeriod: { start: '2011-01-03', end: '2012-03' },
      dateAsserted: '2012-03-18',
      dosage: [{ text: 'daily' }],
    });
    expect(medicationHistoryIsAStatement.apply(b, context)).toBe(true);
    expect(b.status).toBe('not-taken');
    expect(medicationHistoryIsAStatement.apply(c, context)).toBe(false);
    expect(c.resourceType).toBe('MedicationRequest');
  });

  test('the statement’s references follow it: the Composition lists MedicationStatement/<id>', () => {
    const composition: FhirResource = { resourceType: 'Composition', id: 'doc', section: [{ entry: [{ reference: 'MedicationRequest/m' }] }] };
    const medication: FhirResource = { resourceType: 'MedicationRequest', id: 'm', status: 'active', intent: 'order' };
    repairConvertedResources([composition, medication], [medicationHistoryIsAStatement], contextOf({ m: { '@_moodCode': 'EVN' } }));
    expect(composition.section).toEqual([{ entry: [{ reference: 'MedicationStatement/m' }] }]);
  });

  test('dose units: the unit the activity gives (mcg as UCUM ug); none for a count', () => {
    const dose = (value: number) => ({ doseAndRate: [{ doseQuantity: { value, unit: '[IU]', code: '[IU]', system: 'http://unitsofmeasure.org' } }] });
    const a: FhirResource = { resourceType: 'MedicationStatement', id: 'a', dosage: [dose(50)] };
    const b: FhirResource = { resourceType: 'MedicationRequest', id: 'b', dosageInstruction: [dose(1)] };
    const context = contextOf({ a: { doseQuantity: { '@_value': '50', '@_unit': 'mcg' } }, b: { doseQuantity: { '@_value': '1' } } });
    expect(doseUnits.apply(a, context)).toBe(true);
    expect(doseUnits.apply(b, context)).toBe(true);
    expect(a.dosage).toEqual([{ doseAndRate: [{ doseQuantity: { value: 50, unit: 'mcg', system: 'http://unitsofmeasure.org', code: 'ug' } }] }]);
    expect(b.dosageInstruction).toEqual([{ doseAndRate: [{ doseQuantity: { value: 1 } }] }]);
    expect(doseUnits.apply(a, context)).toBe(false);
  });

  test('partial dates keep their precision, unless a full timestamp of the entry renders the same', () => {
    const condition: FhirResource = { resourceType: 'Condition', id: 'c', onsetDateTime: '1999-01-01T00:00:00Z', abatementDateTime: '2001-01-01T00:00:00Z', recordedDate: '2003-05-06T00:00:00Z' };
    const source = { effectiveTime: [{ low: { '@_value': '199911' }, high: { '@_value': '2001' } }], author: [{ time: { '@_value': '20030506' } }] };
    expect(partialDatesKeepPrecision.apply(condition, contextOf({ c: source }))).toBe(true);
    expect(condition).toMatchObject({ onsetDateTime: '1999-11', abatementDateTime: '2001', recordedDate: '2003-05-06' });

    const ambiguous: FhirResource = { resourceType: 'Observation', id: 'o', effectiveDateTime: '1999-01-01T00:00:00Z' };
    const both = { effectiveTime: [{ low: { '@_value': '1999' }, high: { '@_value': '199901010000' } }] };
    expect(partialDatesKeepPrecision.apply(ambiguous, contextOf({ o: both }))).toBe(false);
    expect(ambiguous.effectiveDateTime).toBe('1999-01-01T00:00:00Z');
  });

  test('dropped dates restored: a procedure’s point, an encounter’s point, an observation’s interval', () => {
    const procedure: FhirResource = { resourceType: 'Procedure', id: 'p' };
    const encounter: FhirResource = { resourceType: 'Encounter', id: 'e' };
    const social: FhirResource = { resourceType: 'Observation', id: 'o' };
    const dated: FhirResource = { resourceType: 'Observation', id: 'd', effectiveDateTime: '2010-01-01' };
    const context = contextOf({
      p: { effectiveTime: [{ '@_value': '20130512' }] },
      e: { effectiveTime: [{ '@_value': '201209271300-0500' }] },
      o: { effectiveTime: [{ low: { '@_value': '20090214' }, high: { '@_value': '20110215' } }] },
      d: { effectiveTime: [{ low: { '@_value': '1990' } }] },
    });
    for (const resource of [procedure, encounter, social]) expect(droppedDatesRestored.apply(resource, context)).toBe(true);
    expect(procedure.performedDateTime).toBe('2013-05-12');
    expect(encounter.period).toEqual({ start: '2012-09-27T13:00:00-05:00', end: '2012-09-27T13:00:00-05:00' });
    expect(social.effectivePeriod).toEqual({ start: '2009-02-14', end: '2011-02-15' });
    expect(droppedDatesRestored.apply(dated, context)).toBe(false);
  });

  test('encounter class: an ActCode the entry gives, else the CPT visit range, else unknown; never the visit code', () => {
    const encounter = (id: string): FhirResource => ({ resourceType: 'Encounter', id, class: { code: '99213' } });
    const context = contextOf({
      given: { code: { '@_code': '185349003', '@_codeSystem': '2.16.840.1.113883.6.96', translation: [{ '@_code': 'EMER', '@_codeSystem': '2.16.840.1.113883.5.4' }] } },
      office: { code: { '@_code': '99213', '@_codeSystem': '2.16.840.1.113883.6.12' } },
      inpatient: { code: { '@_code': '99223', '@_codeSystem': '2.16.840.1.113883.6.12' } },
      unknown: { code: { '@_code': '185349003', '@_codeSystem': '2.16.840.1.113883.6.96' } },
    });
    const classes = ['given', 'office', 'inpatient', 'unknown'].map((id) => {
      const resource = encounter(id);
      encounterClass.apply(resource, context);
      return (resource.class as { system: string; code: string }).code + ' ' + (resource.class as { system: string }).system.split('/').pop();
    });
    expect(classes).toEqual(['EMER v3-ActCode', 'AMB v3-ActCode', 'IMP v3-ActCode', 'UNK v3-NullFlavor']);
  });

  test('reference ranges: low and high from the IVL_PQ, text when given; an empty range removed', () => {
    const observation: FhirResource = { resourceType: 'Observation', id: 'o', referenceRange: [{}] };
    const source = {
      referenceRange: [
        { observationRange: { value: { low: { '@_value': '12.0', '@_unit': 'g/dL' }, high: { '@_value': '15.5', '@_unit': 'g/dL' } } } },
        { observationRange: { text: 'negative' } },
        { observationRange: {} },
      ],
    };
    expect(referenceRanges.apply(observation, contextOf({ o: source }))).toBe(true);
    expect(observation.referenceRange).toEqual([
      { low: { value: 12, unit: 'g/dL', system: 'http://unitsofmeasure.org', code: 'g/dL' }, high: { value: 15.5, unit: 'g/dL', system: 'http://unitsofmeasure.org', code: 'g/dL' } },
      { text: 'negative' },
    ]);
    const empty: FhirResource = { resourceType: 'Observation', id: 'e', referenceRange: [{}] };
    expect(referenceRanges.apply(empty, contextOf({ e: { referenceRange: [{ observationRange: {} }] } }))).toBe(true);
    expect(empty.referenceRange).toBeUndefined();
  });

  test('null-flavored values: a dataAbsentReason instead of an empty quantity', () => {
    const observation: FhirResource = { resourceType: 'Observation', id: 'o', valueQuantity: { system: 'http://unitsofmeasure.org' } };
    expect(nullFlavorValues.apply(observation, contextOf({ o: { value: { '@_xsi:type': 'PQ', '@_nullFlavor': 'NA' } } }))).toBe(true);
    expect(observation.valueQuantity).toBeUndefined();
    expect(observation.dataAbsentReason).toEqual({ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/data-absent-reason', code: 'not-applicable' }] });
    const measured: FhirResource = { resourceType: 'Observation', id: 'm', valueQuantity: { value: 1 } };
    expect(nullFlavorValues.apply(measured, contextOf({ m: { value: { '@_value': '1' } } }))).toBe(false);
  });

  test('condition category: health concerns and diagnoses of an encounter or a procedure say so', () => {
    const condition = (id: string): FhirResource => ({ resourceType: 'Condition', id, category: [{ coding: [{ code: 'problem-list-item' }] }] });
    const context = contextOf({ hc: { templateId: [{ '@_root': E + '132' }] }, dx: { templateId: [{ '@_root': E + '65' }] }, list: { templateId: [{ '@_root': E + '3' }] } });
    const [hc, dx, list] = ['hc', 'dx', 'list'].map(condition);
    expect(conditionCategory.apply(hc!, context)).toBe(true);
    expect(conditionCategory.apply(dx!, context)).toBe(true);
    expect(conditionCategory.apply(list!, context)).toBe(false);
    expect(JSON.stringify(hc!.category)).toContain('"health-concern"');
    expect(JSON.stringify(dx!.category)).toContain('"encounter-diagnosis"');
  });

  test('on the sandbox documents: ranges, dates, classes, statements and refusals come through', async () => {
    const ccd = await resourcesOf('ccd-1.xml');
    const hemoglobin = ccd.find((r) => r.resourceType === 'Observation' && JSON.stringify(r.code).includes('"718-7"'))!;
    expect(hemoglobin.referenceRange).toEqual([
      { low: { value: 12, unit: 'g/dL', system: 'http://unitsofmeasure.org', code: 'g/dL' }, high: { value: 15.5, unit: 'g/dL', system: 'http://unitsofmeasure.org', code: 'g/dL' } },
    ]);
    const tobacco = ccd.find((r) => r.resourceType === 'Observation' && JSON.stringify(r.code).includes('"11367-0"'))!;
    expect(tobacco.effectivePeriod).toEqual({ start: '2009-02-14', end: '2011-02-15' });
    const [encounter] = ccd.filter((r) => r.resourceType === 'Encounter');
    expect(encounter!.class).toEqual({ system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB', display: 'ambulatory' });
    expect(JSON.stringify(encounter!.type)).toContain('"99213"');
    expect(ccd.filter((r) => r.resourceType === 'MedicationStatement')).toHaveLength(2);
    expect(ccd.filter((r) => r.resourceType === 'Immunization' && r.status === 'not-done')).toHaveLength(2);
    expect(ccd.filter((r) => r.resourceType === 'Procedure').every((r) => r.performedDateTime !== undefined || r.performedPeriod !== undefined)).toBe(true);
    // A value the document does not know is absent, with its reason; never an empty quantity.
    for (const resource of ccd.filter((r) => r.resourceType === 'Observation')) {
      if (resource.valueQuantity !== undefined) expect((resource.valueQuantity as { value?: number }).value).toEqual(expect.any(Number));
    }
    expect(ccd.filter((r) => r.dataAbsentReason !== undefined)).toHaveLength(1);
  });
});
