import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';
import { CVX, cvxSystem, drugAllergyIsMedication, RXNORM } from './repair.js';

const fixture = (name: string) => readFileSync(new URL(`../../sandbox-data/ccda/${name}`, import.meta.url), 'utf8');
const FIXTURES = ['ccd-1.xml', 'ccd-2.xml', 'care-plan.xml', 'consultation-note.xml', 'discharge-summary.xml', 'history-and-physical.xml', 'procedure-note.xml', 'progress-note.xml'];

describe('repair rules', () => {
  test('drug allergy category: an RxNorm-coded allergy is a medication allergy; others are left as they are', () => {
    const penicillin: FhirResource = { resourceType: 'AllergyIntolerance', id: 'a', category: ['food'], code: { coding: [{ system: RXNORM, code: '70618', display: 'Penicillin' }] } };
    const egg: FhirResource = { resourceType: 'AllergyIntolerance', id: 'b', category: ['food'], code: { coding: [{ system: 'http://fdasis.nlm.nih.gov', code: '291P45F896', display: 'Egg' }] } };
    expect(drugAllergyIsMedication.apply(penicillin)).toBe(true);
    expect(penicillin.category).toEqual(['medication']);
    expect(drugAllergyIsMedication.apply(penicillin)).toBe(false);
    expect(drugAllergyIsMedication.apply(egg)).toBe(false);
    expect(egg.category).toEqual(['food']);
    expect(drugAllergyIsMedication.apply({ resourceType: 'Condition', id: 'c', code: { coding: [{ system: RXNORM, code: '1' }] } })).toBe(false);
  });

  test('CVX code system: vaccine codes get the FHIR CVX URI; other codings of the vaccine stay', () => {
    const immunization: FhirResource = {
      resourceType: 'Immunization',
      id: 'i',
      vaccineCode: { coding: [{ system: 'http://nucc.org/cvx', code: '88' }, { system: RXNORM, code: '1' }] },
    };
    expect(cvxSystem.apply(immunization)).toBe(true);
    expect((immunization.vaccineCode as { coding: { system: string }[] }).coding.map((c) => c.system)).toEqual([CVX, RXNORM]);
    expect(cvxSystem.apply(immunization)).toBe(false);
  });

  test('on the sandbox documents: no drug allergy filed under food, no vaccine under the converter’s CVX URI', async () => {
    const converter = new MedplumCcdaConverter();
    let allergies = 0;
    let vaccines = 0;
    for (const name of FIXTURES) {
      const resources = ((await converter.convert(fixture(name))).entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
      for (const resource of resources) {
        if (resource.resourceType === 'AllergyIntolerance') {
          allergies++;
          const drug = JSON.stringify(resource.code).includes(RXNORM);
          if (drug) expect(resource.category, `${name} ${resource.id}`).toEqual(['medication']);
        }
        if (resource.resourceType === 'Immunization') {
          vaccines++;
          expect(JSON.stringify(resource.vaccineCode)).not.toContain('nucc.org/cvx');
        }
      }
    }
    expect(allergies).toBeGreaterThan(10);
    expect(vaccines).toBeGreaterThan(5);
  });
});
