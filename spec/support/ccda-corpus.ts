/**
 * The C-CDA corpus (corpus/ccda, written by scripts/import-ccda-corpus.mjs) and what a converter makes of
 * it, per source group: documents converted and crashed, coded entries that land (coverage.ts's
 * independent reading of the XML, polarity included), FHIR R4 validator errors, parser artefacts left in
 * the resources, and codings still naming their code system by `urn:oid:`. Everything collected is
 * counted; the examples kept (messages, paths) are capped so a report stays readable.
 */
import { readFileSync } from 'node:fs';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import type { CcdaConverterPort, FhirResource } from '../../core/ports/ccda.port.js';
import { CODED_ENTRY_TEMPLATES, codedEntriesOf, coverageOf } from './ccda-coverage.js';
import { fhirErrorsOf } from './fhir-validator.js';

const CORPUS_DIR = new URL('../../corpus/ccda/', import.meta.url);

/** Every source group, in the order tables list them. */
export const CORPUS_GROUPS = [
  'hl7-documents',
  'hl7-scenarios',
  'Allscripts',
  'Cerner',
  'EMERGE',
  'Greenway',
  'HL7 Samples',
  'Kareo',
  'Kinsights',
  'mTuitive',
  'NextGen',
  'NIST',
  'Partners',
  'PracticeFusion',
  'Transitions of Care',
  'Vitera',
] as const;

export interface CorpusDocument {
  /** Relative to corpus/ccda. */
  path: string;
  group: string;
  source: { repository: string; path: string };
  /** How an HL7 fragment was made a document; absent for a document copied as it is. */
  wrapped?: string;
  bomStripped?: boolean;
}

export interface CorpusIndex {
  sources: Record<string, { commit: string; licence: string }>;
  emergeSample: { of: number; every: number };
  documents: CorpusDocument[];
}

export function corpusIndex(): CorpusIndex {
  return JSON.parse(readFileSync(new URL('index.json', CORPUS_DIR), 'utf8')) as CorpusIndex;
}

export function corpusPath(document: CorpusDocument): URL {
  return new URL(document.path.split('/').map(encodeURIComponent).join('/'), CORPUS_DIR);
}

/** Every document of the corpus with its text, in the index's order. */
export function loadCorpus(): (CorpusDocument & { xml: string })[] {
  return corpusIndex().documents.map((document) => ({ ...document, xml: readFileSync(corpusPath(document), 'utf8') }));
}

/**
 * Code systems whose FHIR canonical URI is not their OID: a coding naming one of them by `urn:oid:` is
 * one that a FHIR reader matching on the URI misses. HL7 v3 code systems (2.16.840.1.113883.5.*) and v2
 * tables (2.16.840.1.113883.12.*) all have a terminology.hl7.org URI too.
 */
export const OIDS_WITH_URI: Record<string, string> = {
  '2.16.840.1.113883.6.1': 'http://loinc.org',
  '2.16.840.1.113883.6.96': 'http://snomed.info/sct',
  '2.16.840.1.113883.6.88': 'http://www.nlm.nih.gov/research/umls/rxnorm',
  '2.16.840.1.113883.12.292': 'http://hl7.org/fhir/sid/cvx',
  '2.16.840.1.113883.6.12': 'http://www.ama-assn.org/go/cpt',
  '2.16.840.1.113883.6.90': 'http://hl7.org/fhir/sid/icd-10-cm',
  '2.16.840.1.113883.6.3': 'http://hl7.org/fhir/sid/icd-10',
  '2.16.840.1.113883.6.4': 'http://www.cms.gov/Medicare/Coding/ICD10',
  '2.16.840.1.113883.6.103': 'http://hl7.org/fhir/sid/icd-9-cm',
  '2.16.840.1.113883.6.104': 'http://hl7.org/fhir/sid/icd-9-cm',
  '2.16.840.1.113883.6.2': 'http://hl7.org/fhir/sid/icd-9-cm',
  '2.16.840.1.113883.6.69': 'http://hl7.org/fhir/sid/ndc',
  '2.16.840.1.113883.6.8': 'http://unitsofmeasure.org',
  '2.16.840.1.113883.6.101': 'http://nucc.org/provider-taxonomy',
  '2.16.840.1.113883.6.285': 'http://www.cms.gov/Medicare/Coding/HCPCSReleaseCodeSets',
  '2.16.840.1.113883.6.13': 'http://www.ada.org/cdt',
  '2.16.840.1.113883.6.259': 'https://www.cdc.gov/nhsn/cdaportal/terminology/codesystem/hsloc.html',
  '2.16.840.1.113883.3.26.1.1': 'http://ncithesaurus-stage.nci.nih.gov',
  '2.16.840.1.113883.4.9': 'http://fdasis.nlm.nih.gov',
  '1.2.840.10008.2.16.4': 'http://dicom.nema.org/resources/ontology/DCM',
};

/** The FHIR URI of a code system named by this OID, if it has one other than `urn:oid:`. */
export function uriOfOid(oid: string): string | undefined {
  if (OIDS_WITH_URI[oid]) return OIDS_WITH_URI[oid];
  if (oid.startsWith('2.16.840.1.113883.5.')) return 'http://terminology.hl7.org/CodeSystem/v3-*';
  if (oid.startsWith('2.16.840.1.113883.12.')) return 'http://terminology.hl7.org/CodeSystem/v2-*';
  return undefined;
}

export interface GroupFigures {
  documents: number;
  converted: number;
  crashed: number;
  resources: number;
  /** Coded entries of the documents (crashed ones included: none of theirs lands). */
  entries: number;
  landed: number;
  /** Entries not landed that have no usable id (none, or a nullFlavor): the counter cannot trace them. */
  entriesWithoutId: number;
  validatorErrors: number;
  documentsWithErrors: number;
  /** Parser leftovers in resources: `@_` or `#text` keys, strings holding `@_`. */
  artefacts: number;
  documentsWithArtefacts: number;
  /** Codings (system and code) whose system is `urn:oid:...`. */
  oidCodings: number;
  /** Of those, codings whose OID has a FHIR URI of its own (see uriOfOid). */
  oidCodingsWithUri: number;
  /** Messages the converter wrote with console.warn. */
  converterWarnings: number;
  /** Wall-clock time of the conversions, for the reader; no assertion reads it. */
  convertMs: number;
}

/** A finding counted across documents, with the first few places it was seen. */
export interface Tally {
  key: string;
  count: number;
  documents: number;
  examples: string[];
}

export interface CorpusReport {
  groups: Record<string, GroupFigures>;
  total: GroupFigures;
  crashes: { group: string; path: string; message: string }[];
  /** By message and path pattern (`Observation.referenceRange[*].low`). */
  validatorErrors: Tally[];
  /** By entry template, expected resource type and reason (counts in reasons folded to N). */
  missing: Tally[];
  /** Per polarity rule: [held, applied]. */
  polarity: Record<string, [number, number]>;
  /** By kind and path pattern. */
  artefacts: Tally[];
  /** By OID, with the URI it has, if any. */
  oids: (Tally & { uri?: string })[];
  warnings: Tally[];
}

const EXAMPLES = 3;

function emptyFigures(): GroupFigures {
  return {
    documents: 0, converted: 0, crashed: 0, resources: 0, entries: 0, landed: 0, entriesWithoutId: 0, validatorErrors: 0, documentsWithErrors: 0,
    artefacts: 0, documentsWithArtefacts: 0, oidCodings: 0, oidCodingsWithUri: 0, converterWarnings: 0, convertMs: 0,
  };
}

class Tallies {
  private readonly byKey = new Map<string, Tally & { seenIn: Set<string> }>();

  add(key: string, document: string, example: string, count = 1): void {
    let tally = this.byKey.get(key);
    if (!tally) this.byKey.set(key, (tally = { key, count: 0, documents: 0, examples: [], seenIn: new Set() }));
    tally.count += count;
    if (!tally.seenIn.has(document)) {
      tally.seenIn.add(document);
      tally.documents++;
      if (tally.examples.length < EXAMPLES) tally.examples.push(example);
    }
  }

  sorted(): Tally[] {
    return [...this.byKey.values()].map(({ seenIn: _, ...tally }) => tally).sort((a, b) => b.count - a.count || a.key.localeCompare(b.key));
  }
}

/** `Observation.referenceRange[0].low` -> `Observation.referenceRange[*].low`. */
export function pathPattern(path: string): string {
  return path.replace(/\[\d+\]/g, '[*]');
}

export interface Artefact {
  path: string;
  kind: '@_ key' | '#text key' | '@_ in a string';
}

/** Keys and strings a resource should not hold: what an XML parser's attribute or text nodes leave behind. */
export function artefactsOf(resource: FhirResource): Artefact[] {
  const found: Artefact[] = [];
  const visit = (value: unknown, path: string) => {
    if (typeof value === 'string') {
      if (value.includes('@_')) found.push({ path, kind: '@_ in a string' });
      return;
    }
    if (Array.isArray(value)) {
      value.forEach((item, index) => visit(item, `${path}[${index}]`));
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    for (const [key, child] of Object.entries(value)) {
      if (key.startsWith('@_')) found.push({ path: `${path}.${key}`, kind: '@_ key' });
      else if (key === '#text') found.push({ path: `${path}.${key}`, kind: '#text key' });
      visit(child, `${path}.${key}`);
    }
  };
  visit(resource, resource.resourceType);
  return found;
}

/** Every coding-like object (a string `system` beside a string `code`) whose system is an OID. */
export function oidCodingsOf(resource: FhirResource): { oid: string; path: string }[] {
  const found: { oid: string; path: string }[] = [];
  const visit = (value: unknown, path: string) => {
    if (Array.isArray(value)) {
      value.forEach((item, index) => visit(item, `${path}[${index}]`));
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const node = value as Record<string, unknown>;
    if (typeof node.system === 'string' && typeof node.code === 'string' && node.system.startsWith('urn:oid:')) {
      found.push({ oid: node.system.slice('urn:oid:'.length), path });
    }
    for (const [key, child] of Object.entries(node)) visit(child, `${path}.${key}`);
  };
  visit(resource, resource.resourceType);
  return found;
}

function messageOf(error: unknown): string {
  const parts: string[] = [];
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 4; depth++) {
    parts.push(current instanceof Error ? current.message : String(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(' <- ');
}

/** Quoted values and numbers in a validator message, folded so that messages of one kind share a key. */
function foldMessage(message: string): string {
  return message.replace(/"[^"]*"/g, '"…"').replace(/\b\d+(\.\d+)?\b/g, 'N');
}

export interface MeasureOptions {
  /** Default: MedplumCcdaConverter with its repairs. */
  converter?: CcdaConverterPort;
}

/** Converts every document and measures what came out. */
export async function measureCorpus(documents: readonly (CorpusDocument & { xml: string })[], options: MeasureOptions = {}): Promise<CorpusReport> {
  const converter = options.converter ?? new MedplumCcdaConverter();
  const groups: Record<string, GroupFigures> = {};
  const crashes: CorpusReport['crashes'] = [];
  const validatorErrors = new Tallies();
  const missing = new Tallies();
  const artefacts = new Tallies();
  const oids = new Tallies();
  const warnings = new Tallies();
  const polarity: Record<string, [number, number]> = {};

  for (const document of documents) {
    const figures = (groups[document.group] ??= emptyFigures());
    figures.documents++;
    const started = performance.now();
    const warned: string[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void warned.push(args.map(String).join(' '));
    let resources: FhirResource[] | undefined;
    try {
      const bundle = await converter.convert(document.xml);
      resources = (bundle.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
    } catch (error) {
      crashes.push({ group: document.group, path: document.path, message: messageOf(error) });
    } finally {
      console.warn = warn;
      figures.convertMs += performance.now() - started;
    }
    for (const message of warned) warnings.add(foldMessage(message), document.path, document.path);
    figures.converterWarnings += warned.length;

    if (!resources) {
      const entries = codedEntriesOf(document.xml);
      figures.crashed++;
      figures.entries += entries.length;
      figures.entriesWithoutId += entries.filter((entry) => entry.identifiers.length === 0).length;
      continue;
    }
    figures.converted++;
    figures.resources += resources.length;

    const coverage = coverageOf(document.xml, resources);
    figures.entries += coverage.entries;
    figures.landed += coverage.landed;
    figures.entriesWithoutId += coverage.missing.filter((entry) => entry.identifiers.length === 0).length;
    for (const entry of coverage.missing) {
      const reason = entry.reason.replace(/\(\d+ /, '(N ');
      missing.add(`${CODED_ENTRY_TEMPLATES[entry.template]} (4.${entry.template}) -> ${entry.expectedType}: ${reason}`, document.path, `${document.path}:${entry.line}`);
    }
    for (const [rule, [held, applied]] of Object.entries(coverage.byRule)) {
      const tally = (polarity[rule] ??= [0, 0]);
      tally[0] += held;
      tally[1] += applied;
    }

    let errors = 0;
    let leftovers = 0;
    for (const resource of resources) {
      for (const issue of fhirErrorsOf(resource)) {
        errors++;
        validatorErrors.add(`${pathPattern(issue.path)}: ${foldMessage(issue.message)}`, document.path, `${document.path} ${issue.path}: ${issue.message}`);
      }
      for (const artefact of artefactsOf(resource)) {
        leftovers++;
        artefacts.add(`${artefact.kind} at ${pathPattern(artefact.path)}`, document.path, `${document.path} ${artefact.path}`);
      }
      for (const coding of oidCodingsOf(resource)) {
        figures.oidCodings++;
        if (uriOfOid(coding.oid)) figures.oidCodingsWithUri++;
        oids.add(coding.oid, document.path, `${document.path} ${coding.path}`);
      }
    }
    figures.validatorErrors += errors;
    if (errors > 0) figures.documentsWithErrors++;
    figures.artefacts += leftovers;
    if (leftovers > 0) figures.documentsWithArtefacts++;
  }

  const total = emptyFigures();
  for (const figures of Object.values(groups)) {
    for (const key of Object.keys(total) as (keyof GroupFigures)[]) total[key] += figures[key];
  }
  return {
    groups,
    total,
    crashes,
    validatorErrors: validatorErrors.sorted(),
    missing: missing.sorted(),
    polarity,
    artefacts: artefacts.sorted(),
    oids: oids.sorted().map((tally) => ({ ...tally, uri: uriOfOid(tally.key) })),
    warnings: warnings.sorted(),
  };
}

/** Landed entries as a share of entries, in percent; 100 when there are none. */
export function coveragePercent(figures: Pick<GroupFigures, 'entries' | 'landed'>): number {
  return figures.entries === 0 ? 100 : (figures.landed / figures.entries) * 100;
}

/** The report's figures as a fixed-width table, one line per group and one for all. */
export function formatTable(report: CorpusReport): string {
  const columns: [string, (figures: GroupFigures) => string][] = [
    ['docs', (f) => String(f.documents)],
    ['converted', (f) => String(f.converted)],
    ['crashed', (f) => String(f.crashed)],
    ['entries', (f) => String(f.entries)],
    ['landed', (f) => String(f.landed)],
    ['coverage%', (f) => coveragePercent(f).toFixed(2)],
    ['noId', (f) => String(f.entriesWithoutId)],
    ['validatorErrors', (f) => String(f.validatorErrors)],
    ['docsWithErrors', (f) => String(f.documentsWithErrors)],
    ['artefacts', (f) => String(f.artefacts)],
    ['oidCodings', (f) => String(f.oidCodings)],
    ['withUri', (f) => String(f.oidCodingsWithUri)],
    ['ms/doc', (f) => (f.documents === 0 ? '-' : (f.convertMs / f.documents).toFixed(1))],
  ];
  const rows = [
    ...Object.keys(report.groups)
      .sort((a, b) => CORPUS_GROUPS.indexOf(a as never) - CORPUS_GROUPS.indexOf(b as never))
      .map((group) => [group, ...columns.map(([, cell]) => cell(report.groups[group]!))]),
    ['all', ...columns.map(([, cell]) => cell(report.total))],
  ];
  const header = ['group', ...columns.map(([name]) => name)];
  const widths = header.map((name, index) => Math.max(name.length, ...rows.map((row) => row[index]!.length)));
  const line = (cells: string[]) => cells.map((cell, index) => (index === 0 ? cell.padEnd(widths[index]!) : cell.padStart(widths[index]!))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}
