import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';

const fixture = (name: string) => readFileSync(new URL(`../../sandbox-data/ccda/${name}`, import.meta.url), 'utf8');
const FAMILY_HISTORY_FIXTURES = ['ccd-1.xml', 'discharge-summary.xml', 'history-and-physical.xml'];

/** Family History Organizers in the XML, counted with a plain text scan: independent of any parser. */
const organizersIn = (xml: string) => xml.split('root="2.16.840.1.113883.10.20.22.4.45"').length - 1;

async function resourcesOf(name: string): Promise<FhirResource[]> {
  return ((await new MedplumCcdaConverter().convert(fixture(name))).entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
}

describe('family history', () => {
  test('ccd-1: the father’s myocardial infarction is the father’s (FamilyMemberHistory), never an observation about the patient', async () => {
    const resources = await resourcesOf('ccd-1.xml');
    const relatives = resources.filter((resource) => resource.resourceType === 'FamilyMemberHistory');
    const father = relatives.find((relative) => JSON.stringify(relative.relationship).includes('"FTH"'));
    expect(father).toMatchObject({
      status: 'completed',
      patient: { reference: expect.stringMatching(/^Patient\//) },
      sex: { coding: [{ code: 'male' }] },
      bornDate: '1910',
    });
    const conditions = father!.condition as { code: { coding: { system: string; code: string }[] }; onsetPeriod?: { start: string }; contributedToDeath?: boolean }[];
    const infarction = conditions.find((condition) => condition.code.coding.some((coding) => coding.code === '22298006'));
    expect(infarction).toMatchObject({ onsetPeriod: { start: '1967' }, contributedToDeath: true });
    expect(infarction!.code.coding[0]!.system).toBe('http://snomed.info/sct');
    // Nothing about the patient carries the relative's condition.
    const aboutPatient = resources.filter((resource) => resource.resourceType !== 'FamilyMemberHistory' && resource.resourceType !== 'Composition');
    expect(aboutPatient.filter((resource) => JSON.stringify(resource).includes('"22298006"'))).toEqual([]);
  });

  test('every fixture: one FamilyMemberHistory per Family History Organizer, the section lists them, and no resource is left dangling', async () => {
    for (const name of FAMILY_HISTORY_FIXTURES) {
      const resources = await resourcesOf(name);
      const relatives = resources.filter((resource) => resource.resourceType === 'FamilyMemberHistory');
      expect(relatives.length, name).toBe(organizersIn(fixture(name)));
      for (const relative of relatives) expect((relative.condition as unknown[] | undefined)?.length ?? 0, name).toBeGreaterThan(0);
      const composition = resources.find((resource) => resource.resourceType === "Composition") as unknown as { section: { code?: { coding?: { code?: string }[] }; entry?: { reference: string }[] }[] };
      const section = composition.section.find((candidate) => candidate.code?.coding?.some((coding) => coding.code === '10157-6'))!;
      expect(section.entry!.map((entry) => entry.reference).sort()).toEqual(relatives.map((relative) => `FamilyMemberHistory/${relative.id}`).sort());
      // Every reference inside the bundle still points at a resource of the bundle.
      const ids = new Set(resources.map((resource) => `${resource.resourceType}/${resource.id}`));
      const references = [...JSON.stringify(resources).matchAll(/"reference":"((?:Observation|FamilyMemberHistory)\/[^"]+)"/g)].map((match) => match[1]!);
      expect(references.filter((reference) => !ids.has(reference)), name).toEqual([]);
    }
  });
});
