import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';

const fixture = (name: string) => readFileSync(new URL(`../../sandbox-data/ccda/${name}`, import.meta.url), 'utf8');
const WITH_MEDICATIONS = ['ccd-1.xml', 'consultation-note.xml', 'discharge-summary.xml', 'history-and-physical.xml', 'procedure-note.xml', 'progress-note.xml'];

async function resourcesOf(name: string): Promise<FhirResource[]> {
  return ((await new MedplumCcdaConverter().convert(fixture(name))).entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
}

type Quantity = { value?: number; unit?: string; code?: string; system?: string };
/** The first dose of a request (dosageInstruction) or a statement (dosage). */
const doseOf = (resource: FhirResource) =>
  ((resource.dosageInstruction ?? resource.dosage) as { doseAndRate?: { doseQuantity?: Quantity }[] }[] | undefined)?.[0]?.doseAndRate?.[0]?.doseQuantity;
const isMedication = (resource: FhirResource) => resource.resourceType === 'MedicationRequest' || resource.resourceType === 'MedicationStatement';

describe('medication doses', () => {
  test('a dose keeps the document’s unit (propofol 20 mg/mL, not 20 [IU]); a dose without one is a count with no unit', async () => {
    const propofol = (await resourcesOf('procedure-note.xml')).find(isMedication)!;
    expect(doseOf(propofol)).toEqual({ value: 20, unit: 'mg/mL', code: 'mg/mL', system: 'http://unitsofmeasure.org' });
    // ccd-1: `<doseQuantity value="2"/>` (albuterol puffs) and `value="1"` (an atenolol tablet).
    const ccd = (await resourcesOf('ccd-1.xml')).filter(isMedication);
    expect(ccd.map(doseOf)).toEqual([{ value: 2 }, { value: 1 }]);
  });

  test('no dose of any sandbox document is left in the converter’s [IU]', async () => {
    let doses = 0;
    for (const name of WITH_MEDICATIONS) {
      for (const resource of await resourcesOf(name)) {
        if (!isMedication(resource)) continue;
        if (doseOf(resource)) doses++;
        expect(JSON.stringify(resource), name).not.toContain('[IU]');
      }
    }
    expect(doses).toBeGreaterThanOrEqual(8);
  });
});
