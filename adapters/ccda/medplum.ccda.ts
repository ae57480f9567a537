import { searchTextOfCcda } from '../../core/documents/search-text.js';
import { convertCcdaToFhir, convertXmlToCcda } from '@medplum/ccda';
import { XMLValidator } from 'fast-xml-parser';
import { CoreError, isCoreError } from '../../core/errors.js';
import type { CcdaConverterPort, CcdaReading, FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';
import { readPlainCcdaXml } from './ccda-xml.js';
import { isNode, normaliseParsedCcda } from './normalise-ccda.js';
import { repairFamilyHistory } from './family-history.js';
import { linkLiftedStatements } from './nested-statements.js';
import { narrativeIndex } from './narrative.js';
import { repairPatient } from './patient.js';
import { repairConvertedResources, type RepairContext } from './repair.js';
import { sha256Hex, uuidFromSeed, uuidsIn, withRandomUuidsReplaced } from './stable-ids.js';

export interface MedplumCcdaOptions {
  /**
   * Whether the converter's output is repaired (default true): the tree rules before it (tree-rules.ts) and
   * the rules after it (family-history.ts, repair.ts). Without them the library reads the XML itself and
   * only what keeps the converter from crashing is done: @medplum/ccda as it is, which benchmarks compare
   * the converter with.
   */
  repairs?: boolean;
}

/**
 * C-CDA to FHIR R4 with @medplum/ccda 4.5: read the XML into the library's tree (in one pass, see
 * ccda-xml.ts; the library's own parser after its well-formedness check otherwise), repair the tree
 * where the converter would crash or lose entries (see normalise-ccda.ts, tree-rules.ts), convert, make
 * every id stable so converting the same document twice yields the same bundle, then repair what the
 * converter got wrong, reading each resource's source element (family-history.ts, repair.ts).
 *
 * Entries of sections the converter does not know are skipped (`ignoreUnsupportedSections`); their
 * narrative stays in the Composition section text, so the document is never dropped for them.
 */
export class MedplumCcdaConverter implements CcdaConverterPort {
  private readonly repairs: boolean;

  constructor(options: MedplumCcdaOptions = {}) {
    this.repairs = options.repairs ?? true;
  }

  /** On the caller's thread: the in-process converter is for hosts that convert there too (the sandbox). */
  async searchText(xml: string): Promise<string> {
    return searchTextOfCcda(xml);
  }

  /** On the caller's thread, like the two it does. */
  async read(xml: string): Promise<CcdaReading> {
    const searchText = searchTextOfCcda(xml);
    try {
      return { searchText, conversion: { ok: true, bundle: await this.convert(xml) } };
    } catch (error) {
      if (isCoreError(error) && error.code === 'CCDA_INVALID') return { searchText, conversion: { ok: false, code: 'CCDA_INVALID', message: error.message } };
      // What the core says of any other failure: the library's text may quote the document.
      return { searchText, conversion: { ok: false, code: 'INTERNAL', message: 'The converter failed on this document' } };
    }
  }

  async convert(xml: string): Promise<FhirBundle> {
    if (typeof xml !== 'string' || xml.trim() === '') throw invalid('the document is empty');
    // Entity declarations are no part of C-CDA and are the way to blow a parser up.
    if (declaresEntities(xml)) throw invalid('the document declares XML entities');
    let parsed = this.repairs ? readPlainCcdaXml(xml)?.tree : undefined;
    if (parsed === undefined) {
      // Outside plain XML (a CDATA section, a DOCTYPE...) or no ClinicalDocument root: the library reads
      // it, after its check of well-formedness, whose message says where the document breaks.
      const validation = XMLValidator.validate(xml);
      if (validation !== true) throw invalid(`the document is not well-formed XML (line ${validation.err.line})`);
      try {
        parsed = convertXmlToCcda(xml);
      } catch (cause) {
        throw invalid('the XML could not be parsed', cause);
      }
    }
    if (!isNode(parsed)) throw invalid('the root element is not a ClinicalDocument');
    const patientRole = Array.isArray(parsed.recordTarget) && isNode(parsed.recordTarget[0]) ? parsed.recordTarget[0].patientRole : undefined;
    if (!isNode(patientRole)) throw invalid('the document has no recordTarget/patientRole');

    const seed = sha256Hex(xml);
    const { document, assignedUuids, links, liftedSections } = normaliseParsedCcda(parsed, { seed, treeRules: this.repairs });

    let converted: { entry?: { resource?: unknown }[] };
    try {
      converted = convertCcdaToFhir(document as never, { ignoreUnsupportedSections: true }) as typeof converted;
    } catch (cause) {
      throw invalid('the C-CDA document could not be converted', cause);
    }

    const keep = new Set([...uuidsIn(xml), ...assignedUuids]);
    const stable = withRandomUuidsReplaced(converted, keep, seed) as typeof converted;
    const bundle = toBundle(stable.entry ?? [], seed);
    if (!this.repairs) return bundle;
    // The sections added for nested statements are the converter's input, not the document's.
    const composition = bundle.entry?.find((entry) => entry.resource?.resourceType === 'Composition')?.resource;
    if (liftedSections > 0 && Array.isArray(composition?.section)) composition.section = composition.section.slice(0, -liftedSections);
    repairFamilyHistory(parsed, bundle, seed, links.idsOf);
    repairPatient(parsed, bundle);
    const leftOut = new Map<FhirResource, string>();
    const added: FhirResource[] = [];
    const context: RepairContext = {
      add: (key, resource) => {
        const id = uuidFromSeed(`${seed}:added:${key}`);
        if (!added.some((existing) => existing.id === id)) added.push({ ...resource, id } as FhirResource);
        return id;
      },
      sourceOf: (resource) => links.elementOf(resource.id),
      idsOf: links.idsOf,
      leaveOut: (resource, reason) => void leftOut.set(resource, reason),
      narrative: narrativeIndex(parsed),
    };
    const resources = (bundle.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
    repairConvertedResources(resources, undefined, context);
    if (liftedSections > 0) linkLiftedStatements(resources, context.sourceOf, links.linkOf);
    if (leftOut.size > 0) leaveOut(bundle, leftOut);
    for (const resource of added) bundle.entry!.push({ fullUrl: `urn:uuid:${resource.id}`, resource });
    return bundle;
  }
}

/** Records, on the Composition, each statement left out of the clinical resources and why. */
export const LEFT_OUT_EXTENSION = 'urn:carebridge:ccda-statement-left-out';

/**
 * Takes the resources left out by the repairs out of the bundle, drops every reference to them (a panel's
 * members, a section's entries), and records on the Composition which statement was left out and why:
 * the entry's identifiers and the reason, never its content.
 */
function leaveOut(bundle: FhirBundle, leftOut: ReadonlyMap<FhirResource, string>): void {
  const gone = new Set([...leftOut.keys()].map((resource) => `${resource.resourceType}/${resource.id}`));
  bundle.entry = (bundle.entry ?? []).filter((entry) => !entry.resource || !leftOut.has(entry.resource));
  for (const entry of bundle.entry) if (entry.resource) dropReferences(entry.resource, gone);
  const composition = bundle.entry.find((entry) => entry.resource?.resourceType === 'Composition')?.resource;
  if (!composition) return;
  const notes = [...leftOut].map(([resource, reason]) => {
    const identifiers = (resource.identifier as { system?: string; value?: string }[] | undefined) ?? [];
    const which = identifiers.map((id) => `${id.system ?? ''}|${id.value ?? ''}`).join(', ');
    return { url: LEFT_OUT_EXTENSION, valueString: which ? `${reason} (entry ${which})` : reason };
  });
  composition.extension = [...((composition.extension as unknown[] | undefined) ?? []), ...notes];
}

/**
 * Removes, in place, every reference (at any depth) to a resource in `gone`: a list item that is the
 * reference or holds it directly (an encounter's diagnosis, a panel's member, a procedure's device) goes
 * whole, a single reference goes, and a list left empty goes too.
 */
function dropReferences(value: unknown, gone: ReadonlySet<string>): void {
  const names = (item: unknown): boolean => {
    const reference = typeof item === 'object' && item !== null ? (item as Record<string, unknown>).reference : undefined;
    return typeof reference === 'string' && gone.has(reference);
  };
  const holds = (item: Record<string, unknown>) => names(item) || Object.values(item).some((child) => !Array.isArray(child) && names(child));
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const child = record[key];
    if (Array.isArray(child)) {
      const kept = child.filter((item) => typeof item !== 'object' || item === null || !holds(item as Record<string, unknown>));
      for (const item of kept) if (typeof item === 'object' && item !== null) dropReferences(item, gone);
      if (kept.length === 0 && child.length > 0) delete record[key];
      else if (kept.length !== child.length) record[key] = kept;
    } else if (typeof child === 'object' && child !== null) {
      if (names(child)) delete record[key];
      else dropReferences(child, gone);
    }
  }
}

/**
 * Whether the text holds `<!ENTITY` in any case, as `/<!ENTITY/i` finds it, but looking only where `<!`
 * stands: a case-insensitive expression without a literal to anchor on tries every position of a document.
 */
export function declaresEntities(xml: string): boolean {
  for (let at = xml.indexOf('<!'); at !== -1; at = xml.indexOf('<!', at + 2)) {
    let k = 0;
    // ASCII letters either case (a letter's code with bit 5 set is its lower case), nothing else.
    while (k < 6 && (xml.charCodeAt(at + 2 + k) | 0x20) === ENTITY.charCodeAt(k)) k++;
    if (k === 6) return true;
  }
  return false;
}

const ENTITY = 'entity';

function invalid(reason: string, cause?: unknown): CoreError {
  return new CoreError('CCDA_INVALID', `Not a readable C-CDA document: ${reason}.`, cause === undefined ? undefined : { cause });
}

function toBundle(entries: { resource?: unknown }[], seed: string): FhirBundle {
  const seen = new Set<string>();
  const resources: FhirResource[] = [];
  entries.forEach((entry, position) => {
    const resource = entry.resource;
    if (!isNode(resource) || typeof resource.resourceType !== 'string') return;
    if (typeof resource.id !== 'string' || resource.id === '') {
      resource.id = uuidFromSeed(`${seed}:position:${position}`);
    }
    const key = `${resource.resourceType}/${resource.id}`;
    // Ids are unique after normalisation; a repeat would be the same C-CDA element converted twice.
    if (seen.has(key)) return;
    seen.add(key);
    resources.push(resource as FhirResource);
  });
  return {
    resourceType: 'Bundle',
    type: 'document',
    entry: resources.map((resource) => ({ fullUrl: `urn:uuid:${resource.id}`, resource })),
  };
}
