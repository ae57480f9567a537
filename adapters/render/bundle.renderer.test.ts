import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import type { FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';
import { MedplumCcdaConverter } from '../ccda/medplum.ccda.js';
import { BundleRenderer, renderHtml } from './bundle.renderer.js';
import { summarise } from './summary.js';

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const bundleOf = (...resources: FhirResource[]): FhirBundle => ({ resourceType: 'Bundle', type: 'collection', entry: resources.map((resource) => ({ resource })) });
const renderer = new BundleRenderer();
const pageCount = (pdf: Uint8Array) => (Buffer.from(pdf).toString('latin1').match(/\/Type \/Page\b/g) ?? []).length;

const patient: FhirResource = { resourceType: 'Patient', id: 'p', name: [{ given: ['Jane'], family: 'Doe' }], gender: 'female', birthDate: '1980-01-01' };
const condition: FhirResource = {
  resourceType: 'Condition', id: 'c', code: { coding: [{ system: 'http://snomed.info/sct', code: '233604007', display: 'Pneumonia' }] },
  clinicalStatus: { coding: [{ code: 'active' }] }, onsetDateTime: '2012-08-06', note: [{ text: 'left lower lobe' }],
};
const observation: FhirResource = {
  resourceType: 'Observation', id: 'o', status: 'final', code: { text: 'Heart rate' }, effectiveDateTime: '2012-08-06T10:00:00Z', valueQuantity: { value: 72, unit: '/min' },
};

describe('summarise', () => {
  test('takes name, main date, status and details', () => {
    expect(summarise(condition)).toEqual({ name: 'Pneumonia', date: '2012-08-06', status: 'active', details: 'left lower lobe' });
    expect(summarise(observation)).toEqual({ name: 'Heart rate', date: '2012-08-06T10:00:00Z', status: 'final', details: '72 /min' });
    expect(summarise(patient)).toEqual({ name: 'Jane Doe', date: '', status: '', details: 'female; born 1980-01-01' });
  });
});

describe('BundleRenderer html', () => {
  test('a section per resource type, Patient first, a row per resource with its main fields', async () => {
    const html = new TextDecoder().decode(await renderer.render(bundleOf(observation, condition, patient, { ...condition, id: 'c2' }), 'html'));
    expect(html.startsWith('<!doctype html>')).toBe(true);
    const sections = [...html.matchAll(/<section id="([^"]+)">/g)].map((m) => m[1]);
    expect(sections).toEqual(['Patient', 'Condition', 'Observation']);
    expect(html).toContain('<h2>Condition <small>(2)</small></h2>');
    expect(html).toContain('<tr><td>Heart rate</td><td>2012-08-06T10:00:00Z</td><td>final</td><td>72 /min</td></tr>');
    expect(html).toContain('4 resources');
  });

  test('escapes every value', () => {
    const hostile: FhirResource = { resourceType: 'Condition', id: 'x', code: { text: '<script>alert("x")</script> & \'quotes\'' } };
    const html = renderHtml(bundleOf(hostile));
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;');
  });

  test('an empty bundle says there is no data', async () => {
    for (const bundle of [bundleOf(), { resourceType: 'Bundle', type: 'collection' } as FhirBundle]) {
      const html = new TextDecoder().decode(await renderer.render(bundle, 'html'));
      expect(html).toContain('There is no data for this patient.');
      expect(html).not.toContain('<section');
    }
  });

  test('a converted document renders its problems and medications', async () => {
    const bundle = await new MedplumCcdaConverter().convert(readFileSync(fixturesDir + 'ccd-1.xml', 'utf8'));
    const html = new TextDecoder().decode(await renderer.render(bundle, 'html'));
    expect(html).toContain('Pneumonia');
    expect(html).toContain('atenolol 25 MG Oral Tablet');
    expect(html).toContain('albuterol 0.09 MG/ACTUAT [Proventil]');
  });
});

describe('BundleRenderer pdf', () => {
  test('is a real PDF, also for an empty bundle', async () => {
    for (const bundle of [bundleOf(), bundleOf(patient, condition, observation)]) {
      const pdf = await renderer.render(bundle, 'pdf');
      const text = Buffer.from(pdf).toString('latin1');
      expect(text.startsWith('%PDF-')).toBe(true);
      expect(text.trimEnd().endsWith('%%EOF')).toBe(true);
      expect(pageCount(pdf)).toBeGreaterThanOrEqual(1);
    }
  });

  test('a large bundle flows over several pages; characters outside the font do not break it', async () => {
    const many = Array.from({ length: 300 }, (_, i): FhirResource => ({ ...observation, id: `o${i}`, code: { text: `Heart rate ${i} 心拍数 😀` } }));
    const pdf = await renderer.render(bundleOf(patient, ...many), 'pdf');
    expect(Buffer.from(pdf).subarray(0, 5).toString()).toBe('%PDF-');
    expect(pageCount(pdf)).toBeGreaterThan(3);
  });
});
