import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { expect, type TestAPI } from 'vitest';
import { isCoreError } from '../../core/errors.js';
import type { CcdaConverterPort, FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';

export interface CcdaContractOptions {
  test: TestAPI;
  /** A fresh converter. */
  make: () => CcdaConverterPort | Promise<CcdaConverterPort>;
  /** Folder of real C-CDA documents (`*.xml`), every one of which must convert. */
  fixturesDir: string;
  /**
   * Resources per type each fixture converts to, by file name. Converters extract different amounts from
   * the same document, so the numbers belong to the adapter; fixtures left out are only checked to convert.
   */
  expectedCounts?: Record<string, Record<string, number>>;
  /** Whether converting the same text twice yields the same bundle (same ids). Default true. */
  stableIds?: boolean;
  /** fast-check runs for the property tests. Default 25. */
  numRuns?: number;
}

function resourcesOf(bundle: FhirBundle): FhirResource[] {
  return (bundle.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
}

export function countByType(bundle: FhirBundle): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const resource of resourcesOf(bundle)) counts[resource.resourceType] = (counts[resource.resourceType] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

function referencesIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const item of value) referencesIn(item, out);
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, child] of Object.entries(value)) {
      if (key === 'reference' && typeof child === 'string') out.push(child);
      else referencesIn(child, out);
    }
  }
  return out;
}

/** Resolves to the error code, or fails the test when the conversion succeeds or throws something else. */
async function expectInvalid(converter: CcdaConverterPort, text: string): Promise<void> {
  const outcome = await converter.convert(text).then(
    () => 'converted',
    (error: unknown) => (isCoreError(error) ? error.code : `non-CoreError: ${String(error)}`),
  );
  expect(outcome).toBe('CCDA_INVALID');
}

/** Outcome of converting arbitrary text: a bundle, or CCDA_INVALID; anything else is a contract breach. */
async function convertOrInvalid(converter: CcdaConverterPort, text: string): Promise<'bundle' | 'invalid'> {
  try {
    const bundle = await converter.convert(text);
    for (const resource of resourcesOf(bundle)) expect(resource.id).toBeTruthy();
    return 'bundle';
  } catch (error) {
    if (isCoreError(error) && error.code === 'CCDA_INVALID') return 'invalid';
    throw error;
  }
}

export function defineCcdaContract(options: CcdaContractOptions): void {
  const { test, make, fixturesDir } = options;
  const numRuns = options.numRuns ?? 25;
  const fixtures = readdirSync(fixturesDir)
    .filter((name) => name.endsWith('.xml'))
    .sort()
    .map((name) => ({ name, xml: readFileSync(path.join(fixturesDir, name), 'utf8') }));

  test('the fixtures folder holds C-CDA documents', () => {
    expect(fixtures.length).toBeGreaterThan(0);
  });

  for (const fixture of fixtures) {
    test(`${fixture.name} converts to a bundle with one Patient and unique, resolvable ids`, async () => {
      const converter = await make();
      const bundle = await converter.convert(fixture.xml);
      expect(bundle.resourceType).toBe('Bundle');
      const resources = resourcesOf(bundle);
      expect(resources.length).toBe((bundle.entry ?? []).length);
      expect(resources.filter((r) => r.resourceType === 'Patient')).toHaveLength(1);

      const keys = resources.map((r) => `${r.resourceType}/${r.id}`);
      for (const resource of resources) expect(typeof resource.id === 'string' && resource.id.length > 0).toBe(true);
      expect(new Set(keys).size).toBe(keys.length);

      const local = referencesIn(resources).filter((reference) => /^[A-Z][A-Za-z]+\/[^/]+$/.test(reference));
      const dangling = local.filter((reference) => !keys.includes(reference));
      expect(dangling).toEqual([]);
    });

    const expected = options.expectedCounts?.[fixture.name];
    if (expected) {
      test(`${fixture.name} converts to the expected resources per type`, async () => {
        const converter = await make();
        expect(countByType(await converter.convert(fixture.xml))).toEqual(expected);
      });
    }
  }

  if (options.stableIds ?? true) {
    test('converting the same document twice yields the same bundle', async () => {
      const converter = await make();
      const fixture = fixtures[0]!;
      expect(await converter.convert(fixture.xml)).toEqual(await (await make()).convert(fixture.xml));
    });

    test('different documents never share a resource id', async () => {
      const converter = await make();
      const seen = new Map<string, string>();
      for (const fixture of fixtures) {
        for (const resource of resourcesOf(await converter.convert(fixture.xml))) {
          const key = `${resource.resourceType}/${resource.id}`;
          expect(seen.get(key) ?? fixture.name).toBe(fixture.name);
          seen.set(key, fixture.name);
        }
      }
    });
  }

  const notCcda: Record<string, string> = {
    empty: '',
    whitespace: '  \n\t ',
    'plain text': 'Patient feels fine, no complaints.',
    json: '{"resourceType":"Bundle","type":"collection"}',
    html: '<!doctype html><html><head><title>x</title></head><body><p>Hello</p></body></html>',
    'other XML': '<?xml version="1.0"?><note><to>A</to><body>hi</body></note>',
    'a ClinicalDocument without a patient': '<ClinicalDocument xmlns="urn:hl7-org:v3"><title>t</title></ClinicalDocument>',
    'unclosed XML': '<ClinicalDocument xmlns="urn:hl7-org:v3"><recordTarget><patientRole>',
    'binary garbage': String.fromCharCode(...Array.from({ length: 512 }, (_, i) => (i * 97 + 13) % 256)),
    'entity expansion': `<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><ClinicalDocument>&b;</ClinicalDocument>`,
    'deeply nested XML': '<a>'.repeat(20_000) + '</a>'.repeat(20_000),
  };
  for (const [label, text] of Object.entries(notCcda)) {
    test(`${label} is CCDA_INVALID`, async () => {
      await expectInvalid(await make(), text);
    });
  }

  test('a truncated fixture is CCDA_INVALID', async () => {
    const xml = fixtures[0]!.xml;
    await expectInvalid(await make(), xml.slice(0, Math.floor(xml.length / 2)));
  });

  test('any text converts to a bundle or fails with CCDA_INVALID, never anything else', async () => {
    const converter = await make();
    const text = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
    );
    await fc.assert(
      fc.asyncProperty(text, async (value) => {
        expect(await convertOrInvalid(converter, value)).toBe('invalid');
      }),
      { numRuns },
    );
  });

  test('fixtures with elements cut out convert or fail with CCDA_INVALID, never anything else', async () => {
    const converter = await make();
    const damaged = fc
      .record({
        fixture: fc.constantFrom(...fixtures),
        cuts: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
      })
      .map(({ fixture, cuts }) => {
        // Remove whole elements (from an opening tag to its matching close), so the XML stays well-formed
        // and reaches the converter with parts missing.
        let xml = fixture.xml;
        for (const cut of cuts) {
          const opens = Array.from(xml.matchAll(/<([A-Za-z][\w:.-]*)(\s[^>]*)?>/g)).filter((m) => !m[0].endsWith('/>'));
          const open = opens[cut % Math.max(1, opens.length)];
          if (!open || open.index === undefined) continue;
          const close = xml.indexOf(`</${open[1]}>`, open.index);
          const nested = xml.indexOf(`<${open[1]}`, open.index + 1);
          if (close < 0 || (nested >= 0 && nested < close) || open[1] === 'ClinicalDocument') continue;
          xml = xml.slice(0, open.index) + xml.slice(close + open[1]!.length + 3);
        }
        return xml;
      });
    await fc.assert(
      fc.asyncProperty(damaged, async (xml) => {
        await convertOrInvalid(converter, xml);
      }),
      { numRuns },
    );
  });
}
