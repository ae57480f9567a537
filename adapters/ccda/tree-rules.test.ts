import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import type { CcdaNode } from './ccda-nodes.js';
import { MedplumCcdaConverter } from './medplum.ccda.js';
import { everyObservationOfAConcern, healthConcernsFollowed, problemsOutsideProblemSections, procedureObservationsAreProcedures, wrappingConcerns } from './tree-rules.js';

const E = '2.16.840.1.113883.10.20.22.4.';
const S = '2.16.840.1.113883.10.20.22.2.';
const template = (root: string) => [{ '@_root': root }];
const problem = (code: string, time: CcdaNode = { low: { '@_value': '2012' } }): CcdaNode => ({
  templateId: template(E + '4'),
  id: [{ '@_root': '1.2.3', '@_extension': code }],
  effectiveTime: [time],
  value: { '@_code': code },
});
const roots = (node: CcdaNode) => (node.templateId as { '@_root': string }[]).map((t) => t['@_root']);

const fixture = (name: string) => readFileSync(new URL(`../../sandbox-data/ccda/${name}`, import.meta.url), 'utf8');
async function resourcesOf(name: string): Promise<FhirResource[]> {
  return ((await new MedplumCcdaConverter().convert(fixture(name))).entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
}
const codesOf = (resources: FhirResource[], type: string) =>
  resources.filter((r) => r.resourceType === type).map((r) => (r.code as { coding?: { code?: string }[] } | undefined)?.coding?.[0]?.code);

describe('tree rules', () => {
  test('procedure activity observations are procedures: moved to the entry’s procedures; other observations stay', () => {
    const ekg = { templateId: template(E + '13'), code: { '@_code': 'ekg' } };
    const other = { templateId: template(E + '2') };
    const section: CcdaNode = { entry: [{ observation: [ekg, other] }, { observation: [other] }] };
    expect(procedureObservationsAreProcedures.apply(section)).toBe(1);
    expect(section.entry).toEqual([{ observation: [other], procedure: [ekg] }, { observation: [other] }]);
    expect(procedureObservationsAreProcedures.apply(section)).toBe(0);
  });

  test('every observation of a concern: a concern holding two problems becomes two concerns, each a copy holding one', () => {
    const act: CcdaNode = {
      templateId: template(E + '3'),
      id: [{ '@_root': 'concern-1' }],
      statusCode: { '@_code': 'active' },
      author: [{ time: { '@_value': '2013' } }],
      entryRelationship: [
        { '@_typeCode': 'SUBJ', observation: [problem('a')] },
        { '@_typeCode': 'SUBJ', observation: [problem('b')] },
        { '@_typeCode': 'REFR', observation: [{ templateId: template(E + '6') }] },
      ],
    };
    const section: CcdaNode = { entry: [{ act: [act] }] };
    expect(everyObservationOfAConcern.apply(section)).toBe(1);
    const acts = (section.entry as { act: CcdaNode[] }[])[0]!.act;
    expect(acts).toHaveLength(2);
    for (const [index, code] of ['a', 'b'].entries()) {
      const copy = acts[index]!;
      expect(copy.id).toEqual([{ '@_root': 'concern-1' }]);
      expect(copy.author).toEqual(act.author);
      const relationships = copy.entryRelationship as { '@_typeCode': string; observation: CcdaNode[] }[];
      expect(relationships.map((r) => r['@_typeCode'])).toEqual(['SUBJ', 'REFR']);
      expect((relationships[0]!.observation[0]!.value as CcdaNode)['@_code']).toBe(code);
    }
    // Copies, not shared: a later change to one does not reach the other.
    expect(acts[0]!.id).not.toBe(acts[1]!.id);
    expect(everyObservationOfAConcern.apply(section)).toBe(0);
  });

  test('problems outside problem sections: wrapped in a concern (resolved when ended), the section read as problems', () => {
    const ended = problem('x', { low: { '@_value': '2010' }, high: { '@_value': '2011' } });
    const ongoing = problem('y');
    const vital = { templateId: template(E + '27') };
    const findings: CcdaNode = { templateId: template(S + '28'), entry: [{ observation: [ended, vital] }, { observation: [ongoing] }] };
    expect(problemsOutsideProblemSections.apply(findings)).toBe(2);
    expect(roots(findings)).toEqual([S + '5.1', S + '28']);
    const [first, second] = findings.entry as CcdaNode[];
    expect(first!.observation).toEqual([vital]);
    const wrapped = (first!.act as CcdaNode[])[0]!;
    expect(wrapped.statusCode).toEqual({ '@_code': 'completed' });
    expect(wrapped.entryRelationship).toEqual([{ '@_typeCode': 'SUBJ', observation: [ended] }]);
    expect(wrappingConcerns.get(wrapped)).toBe('encounter-diagnosis');
    expect(((second!.act as CcdaNode[])[0]!.statusCode as CcdaNode)['@_code']).toBe('active');
    expect(second!.observation).toBeUndefined();

    const plan: CcdaNode = { templateId: template(S + '10'), entry: [{ observation: [problem('z')] }] };
    expect(problemsOutsideProblemSections.apply(plan)).toBe(0);
    expect(roots(plan)).toEqual([S + '10']);
  });

  test('health concerns followed: each referred problem a concern of its own, other referred observations entries of the section', () => {
    const tobacco = { templateId: template(E + '85'), id: [{ '@_root': 't' }] };
    const priority = { templateId: template(E + '143') };
    const concern: CcdaNode = {
      templateId: template(E + '132'),
      id: [{ '@_root': 'hc' }],
      entryRelationship: [
        { '@_typeCode': 'REFR', observation: [tobacco] },
        { '@_typeCode': 'REFR', observation: [problem('p1')] },
        { '@_typeCode': 'SPRT', observation: [problem('p2')] },
        { '@_typeCode': 'RSON', observation: [priority] },
      ],
    };
    const section: CcdaNode = { templateId: template(S + '58'), entry: [{ act: [concern] }] };
    expect(healthConcernsFollowed.apply(section)).toBe(3);
    const entry = (section.entry as CcdaNode[])[0]!;
    expect(entry.observation).toEqual([tobacco]);
    const acts = entry.act as CcdaNode[];
    expect(acts.map((act) => ((act.entryRelationship as { observation: CcdaNode[] }[])[0]!.observation[0]!.value as CcdaNode)['@_code'])).toEqual(['p1', 'p2']);
    for (const act of acts) {
      expect(act.id).toEqual([{ '@_root': 'hc' }]);
      expect((act.entryRelationship as { '@_typeCode': string }[]).map((r) => r['@_typeCode'])).toEqual(['SUBJ', 'RSON']);
    }
    // Outside a health concerns section nothing moves.
    const elsewhere: CcdaNode = { templateId: template(S + '5.1'), entry: [{ act: [structuredClone(concern)] }] };
    expect(healthConcernsFollowed.apply(elsewhere)).toBe(0);
  });

  test('on the sandbox documents: problems of concerns, findings, complications, functional status and health concerns are Conditions; procedure observations Procedures', async () => {
    // ccd-1: a concern holds chest pain and angina; before, only chest pain was kept.
    expect(codesOf(await resourcesOf('ccd-1.xml'), 'Condition')).toEqual(expect.arrayContaining(['29857009', '194828000']));
    // procedure-note: three findings (two of them the same problem, one id), a complication, and a
    // postprocedure diagnosis naming three problems.
    const procedureNote = await resourcesOf('procedure-note.xml');
    const conditions = procedureNote.filter((r) => r.resourceType === 'Condition');
    expect(conditions).toHaveLength(8);
    // The one Observation left is the procedure's indication, which is no problem of the patient's.
    expect(codesOf(procedureNote, 'Observation')).toEqual(['75321-0']);
    // discharge-summary: the functional status problem (dyspnea).
    expect(codesOf(await resourcesOf('discharge-summary.xml'), 'Condition')).toContain('267036007');
    // care-plan: three problems of the health concern and one of the risk concern; tobacco use an Observation.
    const carePlan = await resourcesOf('care-plan.xml');
    expect(codesOf(carePlan, 'Condition').sort()).toEqual(['233604007', '28743005', '409623005', '409623005']);
    expect(codesOf(carePlan, 'Observation')).toContain('11367-0');
    // ccd-2: the EKG-like Procedure Activity Observation is a Procedure.
    const ccd2 = await resourcesOf('ccd-2.xml');
    expect(ccd2.filter((r) => r.resourceType === 'Procedure')).toHaveLength(3);
  });
});
