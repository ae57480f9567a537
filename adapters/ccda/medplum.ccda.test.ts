import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';
import { declaresEntities, MedplumCcdaConverter } from './medplum.ccda.js';
import { normaliseParsedCcda } from './normalise-ccda.js';
import { uuidFromSeed } from './stable-ids.js';

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const fixture = (name: string) => readFileSync(fixturesDir + name, 'utf8');
const converter = new MedplumCcdaConverter();

function ofType(bundle: FhirBundle, type: string): FhirResource[] {
  return (bundle.entry ?? []).flatMap((e) => (e.resource?.resourceType === type ? [e.resource] : []));
}
function firstDisplay(resource: FhirResource, field: string): string | undefined {
  const concept = resource[field] as { coding?: { display?: string }[] } | undefined;
  return concept?.coding?.[0]?.display;
}
/** The drug of a MedicationRequest or MedicationStatement: inline, or a contained Medication when the entry names a manufacturer. */
function medicationName(request: FhirResource): string | undefined {
  const contained = (request.contained as FhirResource[] | undefined)?.find((r) => r.resourceType === 'Medication');
  return firstDisplay(request, 'medicationCodeableConcept') ?? (contained && firstDisplay(contained, 'code'));
}

describe('normaliseParsedCcda', () => {
  test('a lone header participant becomes a list, several documentationOf become the first', () => {
    const doc: Record<string, unknown> = { participant: { associatedEntity: {} }, documentationOf: [{ a: 1 }, { a: 2 }] };
    normaliseParsedCcda(doc, { seed: 's' });
    expect(doc.participant).toEqual([{ associatedEntity: {} }]);
    expect(doc.documentationOf).toEqual({ a: 1 });
  });

  test('a handled section template moves first; an alias is prepended; unknown sections are left alone', () => {
    const section = (roots: string[]) => ({ templateId: roots.map((r) => ({ '@_root': r })) });
    const reordered = section(['2.16.840.1.113883.10.20.22.2.6', '2.16.840.1.113883.10.20.22.2.6.1']);
    const aliased = section(['2.16.840.1.113883.10.20.22.2.1']);
    const unknown = section(['1.2.3']);
    const doc = { component: { structuredBody: { component: [{ section: [reordered, aliased, unknown] }] } } };
    normaliseParsedCcda(doc, { seed: 's' });
    expect(reordered.templateId.map((t) => t['@_root'])).toEqual(['2.16.840.1.113883.10.20.22.2.6', '2.16.840.1.113883.10.20.22.2.6.1']);
    expect(aliased.templateId.map((t) => t['@_root'])).toEqual(['2.16.840.1.113883.10.20.22.2.1.1', '2.16.840.1.113883.10.20.22.2.1']);
    expect(unknown.templateId.map((t) => t['@_root'])).toEqual(['1.2.3']);
  });

  test('every bare-UUID id occurrence gets its own stable UUID; ids with an extension are untouched', () => {
    const shared = '36e3e930-7b14-11db-9fe1-0800200c9a66';
    const doc = { a: { id: [{ '@_root': shared }] }, b: { id: [{ '@_root': shared }] }, c: { id: [{ '@_root': shared, '@_extension': 'x' }] } };
    const { assignedUuids } = normaliseParsedCcda(doc, { seed: 'seed' });
    expect(doc.a.id[0]!['@_root']).toBe(uuidFromSeed('seed:id:0'));
    expect(doc.b.id[0]!['@_root']).toBe(uuidFromSeed('seed:id:1'));
    expect(doc.c.id[0]!['@_root']).toBe(shared);
    expect(assignedUuids.size).toBe(2);
  });
});

describe('MedplumCcdaConverter on the HL7 examples', () => {
  test('medications of an entries-optional section are converted (progress note)', async () => {
    const bundle = await converter.convert(fixture('progress-note.xml'));
    const names = ofType(bundle, 'MedicationStatement').map(medicationName);
    expect(names.sort()).toEqual(['albuterol 0.09 MG/ACTUAT [Proventil]', 'atenolol 25 MG Oral Tablet']);
  });

  test('discharge diagnoses and discharge medications are converted (discharge summary)', async () => {
    const bundle = await converter.convert(fixture('discharge-summary.xml'));
    const conditions = ofType(bundle, 'Condition').map((r) => firstDisplay(r, 'code'));
    expect(conditions.filter((d) => d === 'Appendicitis')).toHaveLength(3);
    expect(conditions).toContain('Dark stools');
    expect(ofType(bundle, 'MedicationRequest').map(medicationName)).toEqual([
      'ibuprofen 600 MG Oral Tablet',
    ]);
  });

  test('entries that reuse one C-CDA UUID become distinct resources (history and physical)', async () => {
    const bundle = await converter.convert(fixture('history-and-physical.xml'));
    const immunizations = ofType(bundle, 'Immunization');
    expect(new Set(immunizations.map((r) => r.id)).size).toBe(4);
    const vaccines = immunizations.map((r) => firstDisplay(r, 'vaccineCode'));
    expect(vaccines).toContain('pneumococcal polysaccharide vaccine, 23 valent');
    const allergies = ofType(bundle, 'AllergyIntolerance').map((r) => firstDisplay(r, 'code'));
    expect(allergies.sort()).toEqual(['ALLERGENIC EXTRACT, PENICILLIN', 'aspirin', 'codeine']);
  });

  test('the narrative of a section the converter skips stays in the Composition (care plan interventions)', async () => {
    const bundle = await converter.convert(fixture('care-plan.xml'));
    const [composition] = ofType(bundle, 'Composition');
    const sections = composition!.section as { title?: string; text?: { div?: string } }[];
    const interventions = sections.find((s) => s.title === 'Interventions Section');
    expect(interventions?.text?.div).toMatch(/<div xmlns="http:\/\/www.w3.org\/1999\/xhtml">.+/);
  });

  test('no id depends on Math.random', async () => {
    const xml = fixture('ccd-2.xml');
    const original = Math.random;
    let step = 0;
    try {
      const first = await converter.convert(xml);
      Math.random = () => ((step = (step * 7 + 3) % 101) / 101);
      expect(await converter.convert(xml)).toEqual(first);
    } finally {
      Math.random = original;
    }
  });
});

test('an entity declaration is found as the case-insensitive expression finds it, and only then', () => {
  const near = fc.constantFrom('<!', '<!ENTITY', '<!entity', '<!EnTiTy', '<!ENTIT', '<!ENTıTY', '<!-- ', 'ENTITY', '<', '!', 'x', ' ', '<!DOCTYPE');
  fc.assert(
    fc.property(fc.array(fc.oneof(near, fc.string({ maxLength: 4 })), { maxLength: 12 }), (parts) => {
      const text = parts.join('');
      expect(declaresEntities(text)).toBe(/<!ENTITY/i.test(text));
    }),
    { numRuns: 3000 },
  );
});
