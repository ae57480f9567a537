// Writes corpus/ccda/ from two public collections of C-CDA documents, each read from a git repository
// (a clone or a bare mirror: only `git ls-tree` and `git show` of its HEAD are used):
//
//   node scripts/import-ccda-corpus.mjs <HL7/C-CDA-Examples> <jmandel/sample_ccdas>
//
// Complete documents are copied byte for byte (a UTF-8 byte order mark aside). HL7's examples are mostly
// fragments (a section, a section's component, a header element, a bare entry); each is wrapped in a
// minimal US Realm Header document so that it can be converted like any other, the fragment's own text
// left as it is inside. The output is the same for the same two commits, so a regenerated corpus diffs
// only where the sources changed. corpus/ccda/README.md says what is there and under which licence.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const OUT = fileURLToPath(new URL('../corpus/ccda/', import.meta.url));
const HL7_REPOSITORY = 'HL7/C-CDA-Examples';
const SAMPLES_REPOSITORY = 'jmandel/sample_ccdas';
/** How many EMERGE documents are kept: the folder holds 683 generated patients much alike. */
const EMERGE_SAMPLE = 50;

/** HL7 folders that are not examples of C-CDA content: the implementation guide's own snippets and stylesheets. */
const HL7_SKIPPED_FOLDERS = new Set(['Guide Examples', 'Stylesheets - Community Submitted']);

/** sample_ccdas folders, by the name of the source group they make. */
const SAMPLE_GROUPS = {
  'Allscripts Samples': 'Allscripts',
  'Cerner Samples': 'Cerner',
  'Greenway Samples': 'Greenway',
  'HL7 Samples': 'HL7 Samples',
  'Kareo Samples': 'Kareo',
  'Kinsights Samples': 'Kinsights',
  'NIST Samples': 'NIST',
  'NextGen Samples': 'NextGen',
  'Partners HealthCare': 'Partners',
  'PracticeFusion Samples': 'PracticeFusion',
  'Transitions of Care Samples': 'Transitions of Care',
  Vitera: 'Vitera',
  'mTuitive OpNote Samples': 'mTuitive',
  EMERGE: 'EMERGE',
};

/** Every source group, in the order tables list them. */
const GROUPS = ['hl7-documents', 'hl7-scenarios', ...Object.values(SAMPLE_GROUPS).sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }))];

const SECTION = '2.16.840.1.113883.10.20.22.2.';
const ENTRY = '2.16.840.1.113883.10.20.22.4.';

/** The sections a bare entry is put in: templateId suffix, LOINC code and title. */
const SECTIONS = {
  allergies: ['6.1', '48765-2', 'Allergies and Adverse Reactions'],
  problems: ['5.1', '11450-4', 'Problem List'],
  medications: ['1.1', '10160-0', 'History of Medication Use'],
  immunizations: ['2.1', '11369-6', 'History of Immunizations'],
  results: ['3.1', '30954-2', 'Relevant Diagnostic Tests and/or Laboratory Data'],
  vitalSigns: ['4.1', '8716-3', 'Vital Signs'],
  procedures: ['7.1', '47519-4', 'History of Procedures'],
  encounters: ['22.1', '46240-8', 'History of Encounters'],
  socialHistory: ['17', '29762-2', 'Social History'],
  familyHistory: ['15', '10157-6', 'Family History'],
  goals: ['60', '61146-7', 'Goals'],
  healthConcerns: ['58', '75310-3', 'Health Concerns'],
  medicalEquipment: ['23', '46264-8', 'Medical Equipment'],
  functionalStatus: ['14', '47420-5', 'Functional Status'],
  mentalStatus: ['56', '10190-7', 'Mental Status'],
  planOfTreatment: ['10', '18776-5', 'Plan of Treatment'],
  notes: ['65', '34109-9', 'Notes'],
  payers: ['18', '48768-6', 'Payers'],
};

/** The section an entry belongs in, by the last part of the entry's templateId. */
const SECTION_OF_ENTRY = {
  30: 'allergies', 7: 'allergies',
  3: 'problems', 4: 'problems',
  16: 'medications',
  52: 'immunizations',
  1: 'results', 2: 'results',
  26: 'vitalSigns', 27: 'vitalSigns',
  12: 'procedures', 13: 'procedures', 14: 'procedures',
  49: 'encounters',
  38: 'socialHistory', 78: 'socialHistory', 85: 'socialHistory', 200: 'socialHistory',
  45: 'familyHistory', 46: 'familyHistory',
  121: 'goals',
  132: 'healthConcerns',
  135: 'medicalEquipment', 50: 'medicalEquipment', 37: 'medicalEquipment',
  67: 'functionalStatus', 68: 'functionalStatus',
  74: 'mentalStatus', 75: 'mentalStatus',
  39: 'planOfTreatment', 40: 'planOfTreatment', 41: 'planOfTreatment', 42: 'planOfTreatment', 43: 'planOfTreatment', 44: 'planOfTreatment',
  60: 'payers',
  202: 'notes',
};

/** The section of an entry whose template is not above, by the HL7 folder it sits in. */
const SECTION_OF_FOLDER = {
  Allergies: 'allergies',
  Problems: 'problems',
  Medications: 'medications',
  Immunizations: 'immunizations',
  Results: 'results',
  'Vital Signs': 'vitalSigns',
  Procedures: 'procedures',
  Encounters: 'encounters',
  'Social History': 'socialHistory',
  'Family History': 'familyHistory',
  Goals: 'goals',
  'Health Concerns': 'healthConcerns',
  'Medical Equipment': 'medicalEquipment',
  'Functional Status': 'functionalStatus',
  'Mental Status': 'mentalStatus',
  'Plan of Treatment': 'planOfTreatment',
  Notes: 'notes',
};

const STATEMENTS = new Set(['act', 'observation', 'substanceAdministration', 'procedure', 'encounter', 'organizer', 'supply']);

function git(repository, args) {
  return execFileSync('git', ['-C', repository, ...args], { maxBuffer: 1 << 28 });
}

function filesOf(repository) {
  return git(repository, ['ls-tree', '-r', '-z', '--name-only', 'HEAD']).toString('utf8').split('\0').filter(Boolean);
}

/** The file's text, without a UTF-8 byte order mark (every file of both collections is UTF-8). */
function textOf(repository, file) {
  const bytes = git(repository, ['show', `HEAD:${file}`]);
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  return { text: (bom ? bytes.subarray(3) : bytes).toString('utf8'), bom };
}

/** A name every common filesystem takes: no reserved characters, no trailing dot or space. */
function safeName(name) {
  return name.replace(/[<>:"\\|?*\u0000-\u001f]/g, '_').replace(/[. ]+$/, '');
}

/** `a/b/C.XML` -> `a/b/C.xml`; any other extension gains `.xml` in place of its own. */
function outputPath(file) {
  const parts = file.split('/').map(safeName);
  const last = parts.pop();
  const extension = path.extname(last);
  parts.push(`${extension ? last.slice(0, -extension.length) : last}.xml`);
  return parts.join('/');
}

/** Where the first element starts, past the XML declaration, processing instructions and comments. */
function rootOf(text) {
  const prolog = /^\s*(?:(?:<\?[\s\S]*?\?>|<!--[\s\S]*?-->)\s*)*/.exec(text)[0];
  const match = /^<([A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)/.exec(text.slice(prolog.length));
  return match ? { name: match[2], start: prolog.length } : undefined;
}

function escapeXml(text) {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A UUID made of the text, so the same fragment gets the same document id at every import. */
function uuidOf(text) {
  const hex = createHash('sha256').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const NAMESPACES = 'xmlns="urn:hl7-org:v3" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:sdtc="urn:hl7-org:sdtc"';

const PATIENT = [
  '<recordTarget>',
  '  <patientRole>',
  '    <id root="2.16.840.1.113883.19.5.99999.2" extension="corpus-patient-1"/>',
  '    <addr use="HP"><streetAddressLine>1 Example Street</streetAddressLine><city>Springfield</city><state>IL</state><postalCode>62701</postalCode><country>US</country></addr>',
  '    <telecom use="HP" value="tel:+1(555)555-0100"/>',
  '    <patient>',
  '      <name use="L"><given>Alex</given><family>Example</family></name>',
  '      <administrativeGenderCode code="F" codeSystem="2.16.840.1.113883.5.1" codeSystemName="AdministrativeGender" displayName="Female"/>',
  '      <birthTime value="19700101"/>',
  '      <raceCode code="2106-3" codeSystem="2.16.840.1.113883.6.238" codeSystemName="Race &amp; Ethnicity - CDC" displayName="White"/>',
  '      <ethnicGroupCode code="2186-5" codeSystem="2.16.840.1.113883.6.238" codeSystemName="Race &amp; Ethnicity - CDC" displayName="Not Hispanic or Latino"/>',
  '    </patient>',
  '  </patientRole>',
  '</recordTarget>',
];

/** The header around a fragment: the US Realm Header's required elements, with made-up content. */
function header({ id, title, recordTarget, after }) {
  return [
    '<realmCode code="US"/>',
    '<typeId root="2.16.840.1.113883.1.3" extension="POCD_HD000040"/>',
    '<templateId root="2.16.840.1.113883.10.20.22.1.1"/>',
    '<templateId root="2.16.840.1.113883.10.20.22.1.1" extension="2015-08-01"/>',
    `<id root="${id}"/>`,
    '<code code="34133-9" codeSystem="2.16.840.1.113883.6.1" codeSystemName="LOINC" displayName="Summarization of Episode Note"/>',
    `<title>${escapeXml(title)}</title>`,
    '<effectiveTime value="20200101120000-0500"/>',
    '<confidentialityCode code="N" codeSystem="2.16.840.1.113883.5.25"/>',
    '<languageCode code="en-US"/>',
    ...(recordTarget ?? PATIENT),
    '<author>',
    '  <time value="20200101120000-0500"/>',
    '  <assignedAuthor>',
    '    <id root="2.16.840.1.113883.4.6" extension="9999999999"/>',
    '    <addr><streetAddressLine>2 Example Street</streetAddressLine><city>Springfield</city><state>IL</state><postalCode>62701</postalCode><country>US</country></addr>',
    '    <telecom use="WP" value="tel:+1(555)555-0101"/>',
    '    <assignedPerson><name><given>Sam</given><family>Author</family></name></assignedPerson>',
    '  </assignedAuthor>',
    '</author>',
    '<custodian>',
    '  <assignedCustodian>',
    '    <representedCustodianOrganization>',
    '      <id root="2.16.840.1.113883.19.5.99999.1"/>',
    '      <name>Example Custodian</name>',
    '      <telecom use="WP" value="tel:+1(555)555-0102"/>',
    '      <addr><streetAddressLine>3 Example Street</streetAddressLine><city>Springfield</city><state>IL</state><postalCode>62701</postalCode><country>US</country></addr>',
    '    </representedCustodianOrganization>',
    '  </assignedCustodian>',
    '</custodian>',
    ...(after ?? []),
  ];
}

/**
 * The last part of the first C-CDA entry templateId at the start of the fragment: templateIds come first in
 * an entry's statement, before any element with content (and so before the first end tag).
 */
function entryTemplateOf(text) {
  const end = text.indexOf('</');
  const head = end < 0 ? text : text.slice(0, end);
  for (const match of head.matchAll(/<templateId\b[^>]*\broot="([^"]+)"/g)) {
    if (match[1].startsWith(ENTRY)) return match[1].slice(ENTRY.length);
  }
  return undefined;
}

/**
 * The HL7 example as a whole document, and how it was made one: `document` (copied), `section` (wrapped in
 * a component), `component` (put in the body as it is), `entry` or `statement` (put in the section its
 * template or folder calls for), `recordTarget` or `documentationOf` (put in the header, with a narrative
 * section as the body), `header` (a ClinicalDocument with a body only: the header is put before its body).
 */
function hl7Document(file, text) {
  const root = rootOf(text);
  if (!root) throw new Error(`${file}: no root element`);
  const newline = text.includes('\r\n') ? '\r\n' : '\n';
  const scenario = file.split('/').at(-2);
  const id = uuidOf(`${HL7_REPOSITORY}/${file}`);
  const title = `${scenario} (HL7 C-CDA example, wrapped)`;
  // The fragment keeps its comments; only an XML declaration cannot stand inside another element.
  const fragment = text.replace(/^\s*<\?xml\s[\s\S]*?\?>\s*/, '').replace(/\s+$/, '');
  const document = (lines) =>
    ['<?xml version="1.0" encoding="UTF-8"?>', `<!-- ${escapeXml(`Wrapped by scripts/import-ccda-corpus.mjs: the header (and any section around the fragment) is made up; the fragment is ${HL7_REPOSITORY}, ${file}.`).replace(/--/g, '- -')} -->`, ...lines, ''].join(newline);
  const body = (lines) => ['<component>', '<structuredBody>', ...lines, '</structuredBody>', '</component>'];
  const narrative = [
    '<component>',
    '<section>',
    `<title>${escapeXml(scenario)}</title>`,
    '<text>This document carries a header example; its body is this narrative only.</text>',
    '</section>',
    '</component>',
  ];
  const open = `<ClinicalDocument ${NAMESPACES}>`;
  const close = '</ClinicalDocument>';

  switch (root.name) {
    case 'ClinicalDocument': {
      if (/<(?:[\w.-]+:)?recordTarget\b/.test(text)) return { kind: 'document', xml: text };
      // A body without a header: its root start tag (which declares no namespace) becomes the wrapper's.
      const tagEnd = fragment.indexOf('>', rootOf(fragment).start) + 1;
      const before = fragment.slice(0, rootOf(fragment).start).trim();
      return { kind: 'header', xml: document([...(before ? [before] : []), open, ...header({ id, title }), fragment.slice(tagEnd).replace(/^\s*\n/, '')]) };
    }
    case 'recordTarget':
      return { kind: 'recordTarget', xml: document([open, ...header({ id, title, recordTarget: [fragment] }), ...body(narrative), close]) };
    case 'documentationOf':
      return { kind: 'documentationOf', xml: document([open, ...header({ id, title, after: [fragment] }), ...body(narrative), close]) };
    case 'component':
      return { kind: 'component', xml: document([open, ...header({ id, title }), ...body([fragment]), close]) };
    case 'section':
      return { kind: 'section', xml: document([open, ...header({ id, title }), ...body(['<component>', fragment, '</component>']), close]) };
    case 'entry':
    default: {
      if (root.name !== 'entry' && !STATEMENTS.has(root.name)) throw new Error(`${file}: do not know where a <${root.name}> goes`);
      const template = entryTemplateOf(fragment);
      const sectionName = SECTION_OF_ENTRY[template] ?? SECTION_OF_FOLDER[file.split('/')[0]];
      if (!sectionName) throw new Error(`${file}: no section known for entry template ${template ?? '(none)'}`);
      const [suffix, loinc, sectionTitle] = SECTIONS[sectionName];
      const section = [
        '<component>',
        '<section>',
        `<templateId root="${SECTION}${suffix}"/>`,
        `<code code="${loinc}" codeSystem="2.16.840.1.113883.6.1" codeSystemName="LOINC" displayName="${escapeXml(sectionTitle)}"/>`,
        `<title>${escapeXml(sectionTitle)}</title>`,
        `<text>${escapeXml(scenario)}</text>`,
        ...(root.name === 'entry' ? [fragment] : ['<entry>', fragment, '</entry>']),
        '</section>',
        '</component>',
      ];
      return { kind: root.name === 'entry' ? 'entry' : 'statement', xml: document([open, ...header({ id, title }), ...body(section), close]) };
    }
  }
}

/** A complete document of sample_ccdas: its root element is a ClinicalDocument. */
function isDocument(text) {
  return rootOf(text)?.name === 'ClinicalDocument';
}

function commitOf(repository) {
  return git(repository, ['rev-parse', 'HEAD']).toString('utf8').trim();
}

function write(relative, text) {
  const target = path.join(OUT, relative);
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, text);
}

function sampleLicence(commit, contributors) {
  return `# Licence of the documents in this folder

The documents in this folder come from the repository ${SAMPLES_REPOSITORY} (https://github.com/${SAMPLES_REPOSITORY}),
commit ${commit}: "Sample C-CDA Documents", collected by the SMART community from EHR vendors and
implementers who shared their systems' output, and made available under the Creative Commons Attribution 4.0
International licence (CC BY 4.0, https://creativecommons.org/licenses/by/4.0/; legal code:
https://creativecommons.org/licenses/by/4.0/legalcode).

Attribution: the contributors to ${SAMPLES_REPOSITORY} (${contributors.join(', ')}) and the organisations
whose sample documents they shared, named by the folders here (Allscripts, Cerner, Greenway, HL7, Kareo,
Kinsights, NIST, NextGen, Partners HealthCare, Practice Fusion, Vitera, mTuitive, and the EMERGE samples).

Changes: none to the documents' content. A UTF-8 byte order mark at the start of a file was removed; files
whose name ended in \`.ccd\` or \`.txt\` end in \`.xml\` here; of the 683 EMERGE documents, 50 are kept
(see ../README.md). The material is provided as is, without warranties, as the licence states.
`;
}

function readme({ documents, hl7Commit, samplesCommit, emerge }) {
  const groups = new Map(GROUPS.map((group) => [group, 0]));
  for (const document of documents) groups.set(document.group, groups.get(document.group) + 1);
  const kinds = new Map();
  for (const document of documents) if (document.wrapped) kinds.set(document.wrapped, (kinds.get(document.wrapped) ?? 0) + 1);
  const boms = documents.filter((document) => document.bomStripped).length;
  return `# C-CDA corpus

Public C-CDA documents for the tests and benchmarks of the C-CDA conversion (\`spec/run/ccda-corpus.test.ts\`,
\`npm run bench ccda-corpus\`). This folder is not in the npm package and the service never reads it.
Written by \`scripts/import-ccda-corpus.mjs\`; do not edit it by hand.

| group | documents | folder |
| --- | ---: | --- |
${[...groups].map(([group, count]) => `| ${group} | ${count} | ${group.startsWith('hl7-') ? 'hl7-examples/' : `sample-ccdas/${Object.keys(SAMPLE_GROUPS).find((folder) => SAMPLE_GROUPS[folder] === group)}/`} |`).join('\n')}
| all | ${documents.length} | |

\`index.json\` lists every document with its group, the repository and path it comes from, how a fragment
was wrapped (\`wrapped\`) and whether a byte order mark was removed (\`bomStripped\`).

## Where they come from

- \`hl7-examples/\`: ${HL7_REPOSITORY} (https://github.com/${HL7_REPOSITORY}), commit ${hl7Commit}.
  Every \`.xml\` file outside its "Guide Examples" and "Stylesheets - Community Submitted" folders, under
  the same folder and file names (an upper-case \`.XML\` ends in \`.xml\`). Group \`hl7-documents\`: the
  complete documents of its \`Documents\` folder; \`hl7-scenarios\`: everything else.
- \`sample-ccdas/\`: ${SAMPLES_REPOSITORY} (https://github.com/${SAMPLES_REPOSITORY}), commit ${samplesCommit}.
  Every C-CDA document of every vendor folder, under the same names (\`.ccd\` and \`.txt\` files end in
  \`.xml\`); not its stylesheets, read-me files or the Kinsights HTML export. One group per folder. Of the
  ${emerge.of} EMERGE documents (generated patients, much alike), ${EMERGE_SAMPLE} are kept: every ${emerge.every}th in natural sort
  order of their names (Patient-0, Patient-${emerge.every}, ...).

## What was changed

Complete documents are the source's bytes, except that a UTF-8 byte order mark was removed (${boms} files).
Most HL7 scenarios are fragments; each is wrapped in a minimal C-CDA R2.1 document (US Realm Header
templateIds, a made-up patient with name, gender and birth time, an author and a custodian, a structured
body), the fragment's own text unchanged inside, at the depth it belongs:
${[...kinds].sort(([a], [b]) => a.localeCompare(b)).map(([kind, count]) => `- \`${kind}\` (${count}): ${WRAPPED[kind]}`).join('\n')}

The wrapper's first comment says so and names the source file.

## Licences

- \`hl7-examples/\`: CC0 1.0 Universal (\`hl7-examples/LICENSE\`, the source repository's LICENSE file). The
  source's README adds that submissions to it are governed by the intellectual-property section of HL7's
  Governance and Operations Manual.
- \`sample-ccdas/\`: Creative Commons Attribution 4.0 International, as the source's README states; the
  attribution and the changes are in \`sample-ccdas/LICENSE.md\`.

## Regenerating

\`\`\`sh
git clone https://github.com/${HL7_REPOSITORY} /tmp/C-CDA-Examples && git -C /tmp/C-CDA-Examples checkout ${hl7Commit}
git clone https://github.com/${SAMPLES_REPOSITORY} /tmp/sample_ccdas && git -C /tmp/sample_ccdas checkout ${samplesCommit}
node scripts/import-ccda-corpus.mjs /tmp/C-CDA-Examples /tmp/sample_ccdas
\`\`\`

The script reads the two repositories' HEAD with git only (a bare mirror does too), replaces this folder
and writes the same bytes for the same two commits. Then update the ratchets of \`spec/run/ccda-corpus.test.ts\`.
`;
}

/** What each kind of wrapping did, for the README. */
const WRAPPED = {
  section: 'a `section` root, put in a `component` of the structured body.',
  component: "a section's `component`, put in the structured body as it is.",
  entry: 'an `entry`, put in a section of the kind its template (or folder) calls for.',
  statement: 'a bare clinical statement, put in an `entry` of a section of the kind its template (or folder) calls for.',
  recordTarget: 'a header `recordTarget`, used as the header\'s; the body is one narrative section.',
  documentationOf: 'a header `documentationOf`, put after the custodian; the body is one narrative section.',
  header: 'a `ClinicalDocument` with a body and no header: its start tag (which declares no namespace) is replaced by one that does, followed by the header.',
};

function main() {
  const [hl7, samples] = process.argv.slice(2);
  if (!hl7 || !samples) {
    process.stderr.write('usage: node scripts/import-ccda-corpus.mjs <HL7/C-CDA-Examples repository> <jmandel/sample_ccdas repository>\n');
    process.exit(2);
  }
  rmSync(OUT, { recursive: true, force: true });
  const documents = [];
  const taken = new Set();
  const add = (relative, text, entry) => {
    if (taken.has(relative.toLowerCase())) throw new Error(`two sources would be written to ${relative}`);
    taken.add(relative.toLowerCase());
    write(relative, text);
    documents.push({ path: relative, ...entry });
  };

  for (const file of filesOf(hl7).sort()) {
    if (!/\.xml$/i.test(file) || HL7_SKIPPED_FOLDERS.has(file.split('/')[0])) continue;
    const { text, bom } = textOf(hl7, file);
    const { kind, xml } = hl7Document(file, text);
    add(`hl7-examples/${outputPath(file)}`, xml, {
      group: file.startsWith('Documents/') && kind === 'document' ? 'hl7-documents' : 'hl7-scenarios',
      source: { repository: HL7_REPOSITORY, path: file },
      ...(kind === 'document' ? {} : { wrapped: kind }),
      ...(bom ? { bomStripped: true } : {}),
    });
  }
  write('hl7-examples/LICENSE', git(hl7, ['show', 'HEAD:LICENSE']));

  const sampleFiles = filesOf(samples).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  const emerge = sampleFiles.filter((file) => file.startsWith('EMERGE/'));
  const step = Math.floor(emerge.length / EMERGE_SAMPLE);
  const emergeKept = new Set(emerge.filter((_, index) => index % step === 0).slice(0, EMERGE_SAMPLE));
  for (const file of sampleFiles) {
    const folder = file.split('/')[0];
    const group = SAMPLE_GROUPS[folder];
    if (!group || (folder === 'EMERGE' && !emergeKept.has(file))) continue;
    const { text, bom } = textOf(samples, file);
    if (!isDocument(text)) continue;
    add(`sample-ccdas/${outputPath(file)}`, text, {
      group,
      source: { repository: SAMPLES_REPOSITORY, path: file },
      ...(bom ? { bomStripped: true } : {}),
    });
  }

  const hl7Commit = commitOf(hl7);
  const samplesCommit = commitOf(samples);
  const contributors = [...new Set(git(samples, ['log', '--format=%an', 'HEAD']).toString('utf8').split('\n').filter(Boolean))].sort((a, b) => a.localeCompare(b, 'en'));
  write('sample-ccdas/LICENSE.md', sampleLicence(samplesCommit, contributors));
  write('README.md', readme({ documents, hl7Commit, samplesCommit, emerge: { of: emerge.length, every: step } }));

  const index = {
    sources: {
      [HL7_REPOSITORY]: { commit: hl7Commit, licence: 'CC0-1.0' },
      [SAMPLES_REPOSITORY]: { commit: samplesCommit, licence: 'CC-BY-4.0' },
    },
    emergeSample: { of: emerge.length, every: step },
    documents,
  };
  write('index.json', `${JSON.stringify(index, null, 2)}\n`);
  const byGroup = {};
  for (const document of documents) byGroup[document.group] = (byGroup[document.group] ?? 0) + 1;
  process.stdout.write(`${JSON.stringify({ documents: documents.length, byGroup })}\n`);
}

main();
