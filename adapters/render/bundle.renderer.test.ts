import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import type { FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';
import type { RenderContext } from '../../core/ports/renderer.port.js';
import { MedplumCcdaConverter } from '../ccda/medplum.ccda.js';
import { BundleRenderer, renderHtml } from './bundle.renderer.js';
import { sectionsOf, summarise } from './summary.js';

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const bundleOf = (...resources: FhirResource[]): FhirBundle => ({ resourceType: 'Bundle', type: 'collection', entry: resources.map((resource) => ({ resource })) });
const renderer = new BundleRenderer();
const pageCount = (pdf: Uint8Array) => (Buffer.from(pdf).toString('latin1').match(/\/Type \/Page\b/g) ?? []).length;
const record: RenderContext = { kind: 'medical-record', title: 'Medical record of Jane Doe', patientName: 'Jane Doe', generatedAt: new Date('2024-01-15T09:30:00Z') };
const oneDocument: RenderContext = { ...record, kind: 'document', title: 'Continuity of Care Document' };
const html = async (bundle: FhirBundle, context = record) => new TextDecoder().decode(await renderer.render(bundle, 'html', context));
/** The text of each element matching `tag` (tags inside stripped, entities left as written). */
const texts = (page: string, tag: string) => [...page.matchAll(new RegExp(`<${tag}\\b[^>]*>(.*?)</${tag}>`, 'gs'))].map((m) => m[1]!.replace(/<[^>]+>/g, '').trim());

const patient: FhirResource = { resourceType: 'Patient', id: 'p', name: [{ given: ['Jane'], family: 'Doe' }], gender: 'female', birthDate: '1980-01-01' };
const condition: FhirResource = {
  resourceType: 'Condition', id: 'c', code: { coding: [{ system: 'http://snomed.info/sct', code: '233604007', display: 'Pneumonia' }] },
  clinicalStatus: { coding: [{ code: 'active' }] }, onsetDateTime: '2012-08-06', note: [{ text: 'left lower lobe' }],
};
const observation: FhirResource = {
  resourceType: 'Observation', id: 'o', status: 'final', code: { text: 'Heart rate' }, effectiveDateTime: '2012-08-06T10:00:00Z', valueQuantity: { value: 72, unit: '/min' },
};
const height = (id: string, date: string, value = 177): FhirResource => ({
  resourceType: 'Observation', id, status: 'final', code: { text: 'Body height' }, effectiveDateTime: date, valueQuantity: { value, unit: 'cm' },
});
const father: FhirResource = {
  resourceType: 'FamilyMemberHistory', id: 'f', status: 'completed', relationship: { coding: [{ code: 'FTH', display: 'father' }], text: 'father' }, bornDate: '1910',
  condition: [
    { code: { text: 'Myocardial infarction' }, onsetPeriod: { start: '1967' }, contributedToDeath: true },
    { code: { coding: [{ display: 'Diabetes mellitus type 2' }] }, onsetAge: { value: 40, unit: 'years' } },
  ],
};
const carePlan: FhirResource = { resourceType: 'CarePlan', id: 'cp', status: 'completed', intent: 'plan', title: 'CARE PLAN', category: [{ text: 'Nutrition education' }] };
const goal: FhirResource = { resourceType: 'Goal', id: 'g', lifecycleStatus: 'active', description: { text: 'Unknown goal' }, category: [{ text: 'Weight loss' }], startDate: '2013-10-15' };
const order: FhirResource = { resourceType: 'ServiceRequest', id: 's', status: 'active', intent: 'order', code: { coding: [{ display: 'Colonoscopy' }] }, occurrenceDateTime: '2013-06-13' };
const allergy: FhirResource = { resourceType: 'AllergyIntolerance', id: 'a', code: { text: 'Penicillin' }, recordedDate: '2010-02-03' };
const medication: FhirResource = { resourceType: 'MedicationStatement', id: 'm', status: 'active', medicationCodeableConcept: { text: 'Atenolol 25 mg' }, effectivePeriod: { start: '2011-03-01', end: '2012-03-01' } };
const immunization: FhirResource = { resourceType: 'Immunization', id: 'i', status: 'completed', vaccineCode: { text: 'Influenza' }, occurrenceDateTime: '2012-10-01' };
const procedure: FhirResource = { resourceType: 'Procedure', id: 'pr', status: 'completed', code: { text: 'Appendectomy' }, performedDateTime: '2009-05-05' };
const encounter: FhirResource = { resourceType: 'Encounter', id: 'e', status: 'finished', type: [{ text: 'Office visit' }], period: { start: '2012-08-06T09:00:00-05:00' } };

describe('summarise', () => {
  test('takes name, main date written for people, status and details', () => {
    expect(summarise(condition)).toEqual({ name: 'Pneumonia', date: '6 Aug 2012', status: 'active', details: 'left lower lobe' });
    expect(summarise(observation)).toEqual({ name: 'Heart rate', date: '6 Aug 2012, 10:00', status: 'final', details: '72 /min' });
    expect(summarise(patient)).toEqual({ name: 'Jane Doe', date: '', status: '', details: 'female; born 1 Jan 1980' });
  });

  test('periods read "from – to", an open one "from ..."; a condition ends at its abatement', () => {
    expect(summarise(medication).date).toBe('1 Mar 2011 – 1 Mar 2012');
    expect(summarise(encounter).date).toBe('from 6 Aug 2012, 09:00');
    expect(summarise({ ...condition, abatementDateTime: '2012-09-01' }).date).toBe('6 Aug 2012 – 1 Sep 2012');
  });

  test('a family history row names the relative and what they had', () => {
    expect(summarise(father)).toMatchObject({
      name: 'Father',
      details: 'Myocardial infarction (onset 1967, contributed to death); Diabetes mellitus type 2 (onset at 40 years); born 1910',
    });
    expect(summarise({ ...father, relationship: undefined }).name).toContain('Myocardial infarction');
  });

  test('care plans, goals and planned services are named by what they are about, not by a placeholder', () => {
    expect(summarise(carePlan).name).toBe('Nutrition education');
    expect(summarise({ ...carePlan, title: 'Diabetes self-management' }).name).toBe('Diabetes self-management');
    expect(summarise({ resourceType: 'CarePlan', activity: [{ detail: { code: { text: 'Walk 30 minutes a day' } } }] }).name).toBe('Walk 30 minutes a day');
    expect(summarise(goal).name).toBe('Weight loss');
    expect(summarise({ ...goal, description: { text: 'HbA1c below 7%' } }).name).toBe('HbA1c below 7%');
    expect(summarise(order).name).toBe('Colonoscopy');
  });
});

describe('sections', () => {
  test('human names in clinical order, not FHIR type names in alphabetical order', async () => {
    const page = await html(bundleOf(order, observation, father, procedure, encounter, immunization, medication, goal, condition, allergy, patient, carePlan));
    expect(texts(page, 'h2').map((heading) => heading.replace(/ \(\d+\)$/, ''))).toEqual([
      'Patient', 'Allergies and intolerances', 'Problems', 'Medications', 'Immunizations', 'Results and vital signs', 'Procedures', 'Encounters', 'Family history', 'Care plan',
    ]);
    expect(page).not.toMatch(/<h2>[A-Z][a-z]+[A-Z]/);
  });

  test('a type with no section of its own is named from its type, after the known ones', () => {
    const sections = sectionsOf(bundleOf({ resourceType: 'QuestionnaireResponse', id: 'q', authored: '2020-01-01' }, condition));
    expect(sections.map((section) => section.title)).toEqual(['Problems', 'Questionnaire response']);
  });

  test('in a section of several types each row says its type; no name cell is empty', () => {
    const [plans] = sectionsOf(bundleOf(carePlan, goal, order, { resourceType: 'Goal', id: 'g2' }));
    expect(plans!.rows.map((row) => [row.name, row.details])).toEqual([
      ['Weight loss', 'Goal'],
      ['Colonoscopy', 'Service request'],
      ['Goal', 'Goal'],
      ['Nutrition education', 'Care plan'],
    ]);
  });

  test('rows newest first, undated last, then by name; exact duplicate rows once', () => {
    const [results] = sectionsOf(bundleOf(
      height('h1', '2014-10-01T10:30:26-05:00'), { ...observation, effectiveDateTime: undefined }, height('h2', '2012-01-01'), height('h3', '2014-10-01T10:30:26-05:00'),
      height('h4', '2016-03-03', 178), { resourceType: 'Observation', id: 'x', code: { text: 'Allergy screen' } }, height('h5', '2014'),
    ));
    expect(results!.rows.map((row) => `${row.name} ${row.date} ${row.details}`)).toEqual([
      'Body height 3 Mar 2016 178 cm',
      'Body height 1 Oct 2014, 10:30 177 cm',
      'Body height 2014 177 cm',
      'Body height 1 Jan 2012 177 cm',
      'Allergy screen  ',
      'Heart rate  72 /min',
    ]);
  });
});

describe('BundleRenderer html', () => {
  test('the consolidated record is titled as the medical record of the patient, with when it was made', async () => {
    const page = await html(bundleOf(observation, condition, patient, { ...condition, id: 'c2' }));
    expect(page.startsWith('<!doctype html>')).toBe(true);
    expect(texts(page, 'title')).toEqual(['Medical record of Jane Doe']);
    expect(texts(page, 'h1')).toEqual(['Medical record of Jane Doe']);
    expect(page).toContain('Generated 15 Jan 2024, 09:30 UTC');
    expect(page).not.toContain('Consolidated medical record');
    expect(page).toContain('<h2>Problems <small>(1)</small></h2>');
    expect(page).toContain('<tr><td class="name">Heart rate</td><td class="date">6 Aug 2012, 10:00</td><td class="status">final</td><td class="details">72 /min</td></tr>');
  });

  test('a single document is titled with its own title and says it is one document', async () => {
    const page = await html(bundleOf(patient, condition), oneDocument);
    expect(texts(page, 'title')).toEqual(['Continuity of Care Document']);
    expect(texts(page, 'h1')).toEqual(['Continuity of Care Document']);
    expect(page).toContain('One document from the medical record of Jane Doe');
    expect(page).not.toContain('Consolidated');
  });

  test('escapes every value', () => {
    const hostile: FhirResource = { resourceType: 'Condition', id: 'x', code: { text: '<script>alert("x")</script> & \'quotes\'' } };
    const page = renderHtml(bundleOf(hostile), { ...record, title: '<b>Doe</b>', patientName: '<i>Jane</i>' });
    expect(page).not.toContain('<script>');
    expect(page).not.toMatch(/<[bi]>/);
    expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;');
    expect(page).toContain('<title>&lt;b&gt;Doe&lt;/b&gt;</title>');
  });

  test('an empty bundle says there is no data', async () => {
    for (const bundle of [bundleOf(), { resourceType: 'Bundle', type: 'collection' } as FhirBundle]) {
      const page = await html(bundle);
      expect(page).toContain('There is no data for this patient.');
      expect(page).not.toContain('<section');
    }
  });

  test('a converted document renders its problems, medications, family history and plans', async () => {
    const bundle = await new MedplumCcdaConverter().convert(readFileSync(fixturesDir + 'ccd-1.xml', 'utf8'));
    const page = await html(bundle, oneDocument);
    expect(page).toContain('Pneumonia');
    expect(page).toContain('atenolol 25 MG Oral Tablet');
    expect(page).toContain('albuterol 0.09 MG/ACTUAT [Proventil]');
    expect(page).toContain('<td class="name">Father</td>');
    expect(page).toContain('Myocardial infarction (onset 1967, contributed to death)');
    expect(page).not.toContain('<td class="name"></td>');
  });

  test('the same data and context give the same page, whatever the order of the bundle', async () => {
    const data = [patient, observation, height('h1', '2012-01-01'), condition, height('h2', '2014-01-01'), father];
    expect(await html(bundleOf(...data))).toBe(await html(bundleOf(...data.reverse())));
  });
});

describe('BundleRenderer pdf', () => {
  test('is a real PDF, also for an empty bundle, titled as the rendering', async () => {
    for (const bundle of [bundleOf(), bundleOf(patient, condition, observation)]) {
      const pdf = await renderer.render(bundle, 'pdf', record);
      const text = Buffer.from(pdf).toString('latin1');
      expect(text.startsWith('%PDF-')).toBe(true);
      expect(text.trimEnd().endsWith('%%EOF')).toBe(true);
      expect(pageCount(pdf)).toBeGreaterThanOrEqual(1);
      const info = /\/Title (\d+) 0 R/.exec(text);
      expect(text).toContain(`\n${info?.[1]} 0 obj\n(Medical record of Jane Doe)\n`);
    }
  });

  test('a large bundle flows over several pages; characters outside the font do not break it', async () => {
    const many = Array.from({ length: 300 }, (_, i): FhirResource => ({ ...observation, id: `o${i}`, code: { text: `Heart rate ${i} 心拍数 😀` } }));
    const pdf = await renderer.render(bundleOf(patient, ...many), 'pdf', { ...record, patientName: 'Jane 心 Doe' });
    expect(Buffer.from(pdf).subarray(0, 5).toString()).toBe('%PDF-');
    expect(pageCount(pdf)).toBeGreaterThan(3);
  });
});
