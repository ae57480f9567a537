import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { fhirErrorsOf } from '../support/fhir-validator.js';

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const fixtures = readdirSync(fixturesDir)
  .filter((name) => name.endsWith('.xml'))
  .sort()
  .map((name) => ({ name, xml: readFileSync(fixturesDir + name, 'utf8') }));

async function errorsOf(converter: MedplumCcdaConverter, xml: string): Promise<string[]> {
  const bundle = await converter.convert(xml);
  return (bundle.entry ?? []).flatMap((entry) =>
    entry.resource ? fhirErrorsOf(entry.resource).map((issue) => `${entry.resource!.resourceType}/${entry.resource!.id} ${issue.path}: ${issue.message}`) : [],
  );
}

describe('FHIR R4 validation of the converted sandbox documents', () => {
  test('the validator finds what is wrong: an empty element, a missing required element, a malformed dateTime', () => {
    expect(fhirErrorsOf({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, referenceRange: [{}] } as never).length).toBeGreaterThan(0);
    expect(fhirErrorsOf({ resourceType: 'Encounter', status: 'finished' } as never).map((issue) => issue.path)).toContain('Encounter.class');
    expect(fhirErrorsOf({ resourceType: 'Condition', subject: { reference: 'Patient/p' }, onsetDateTime: '2012-09-25T11:30:-0500' } as never).length).toBeGreaterThan(0);
    expect(fhirErrorsOf({ resourceType: 'Condition', subject: { reference: 'Patient/p' }, onsetDateTime: '1999-11' } as never)).toEqual([]);
  });

  test('without the repairs the converter’s output has errors (so the check below can fail)', async () => {
    const raw = new MedplumCcdaConverter({ repairs: false });
    let errors = 0;
    for (const fixture of fixtures) errors += (await errorsOf(raw, fixture.xml)).length;
    expect(errors).toBeGreaterThan(0);
  });

  for (const fixture of fixtures) {
    test(`${fixture.name}: every resource is valid FHIR R4`, async () => {
      expect(await errorsOf(new MedplumCcdaConverter(), fixture.xml)).toEqual([]);
    });
  }
});
