import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import type { CodeableConcept, OrganizationIdentifier } from '../../core/domain/types.js';
import { CoreError } from '../../core/errors.js';
import { isSamePerson, type Demographics } from '../../core/matching/decide.js';
import type { NetworkDirectoryEntry } from '../../core/ports/data-network.port.js';
import type { HieDocumentRef, HieNetworkPort, HiePatientQuery } from '../../core/ports/hie.port.js';
import { SANDBOX_NETWORK, sandboxOid } from './sandbox-directory.js';

export interface SandboxHieOptions {
  /** Folder of C-CDA documents (`*.xml`) the sandbox network serves. */
  fixturesDir: string;
}

interface CatalogEntry {
  fileName: string;
  description: string;
  type: CodeableConcept;
  organizationIdentifiers: OrganizationIdentifier[];
  /** The person the document is about (its recordTarget), when the header names one fully. */
  person: Demographics | undefined;
}

const LOINC = 'http://loinc.org';
const LOINC_OID = '2.16.840.1.113883.6.1';
const ID_PREFIX = 'sandbox';
/** About one patient in this many holds no document, so both outcomes of a query show up on the sandbox. */
const NO_DOCUMENT_ONE_IN = 5;
const MAX_DOCUMENTS = 4;

/**
 * A health information exchange for the sandbox: it "holds" real C-CDA documents from a folder. A patient
 * who is the person a document is about (the import's matching rule against the document's recordTarget:
 * same dob and gender, a first and a last name in common, a zip in common) gets exactly that person's
 * documents, as a real exchange would answer, so a developer can ask for a known person and know what
 * comes back. Any other patient gets documents decided by a hash of the patientId alone, so the answer is
 * the same on every run, host and database: about 1 in 5 patients has none, the others 1 to 4 distinct
 * documents (this keeps imports of made-up patients realistic: most have some documents).
 *
 * Document metadata is read from the documents themselves: description = `title`, type = the LOINC
 * document `code`, organizations = the custodian and the authors' represented organizations (name, and
 * each id's extension, or its root when there is no extension).
 */
export class SandboxHieNetwork implements HieNetworkPort {
  private readonly fixturesDir: string;
  private catalog?: Promise<CatalogEntry[]>;

  constructor(options: SandboxHieOptions) {
    this.fixturesDir = options.fixturesDir;
  }

  async findDocuments(query: HiePatientQuery): Promise<HieDocumentRef[]> {
    const catalog = await this.loadCatalog();
    const patientHash = sha256(`patient:${query.patientId}`);
    const theirs = catalog.filter((entry) => entry.person !== undefined && isSamePerson(entry.person, query));
    const chosen = theirs.length > 0 ? theirs : hashedChoice(catalog, query.patientId, patientHash);

    return chosen.map((entry) => ({
      // Scoped to the patient: at a real network a document belongs to one patient.
      networkDocumentId: `${ID_PREFIX}:${patientHash.slice(0, 16)}:${entry.fileName}`,
      fileName: entry.fileName,
      description: entry.description,
      mimeType: 'application/xml',
      type: structuredClone(entry.type),
      organizationIdentifiers: structuredClone(entry.organizationIdentifiers),
    }));
  }

  /**
   * The people the network's documents are about, with the titles of their documents, in a stable order:
   * what a sandbox user can ask for to get known documents.
   */
  async people(): Promise<{ person: Demographics; documents: string[] }[]> {
    const people: { person: Demographics; documents: string[] }[] = [];
    for (const entry of await this.loadCatalog()) {
      if (!entry.person) continue;
      const known = people.find((candidate) => isSamePerson(candidate.person, entry.person!));
      if (known) known.documents.push(entry.description);
      else people.push({ person: entry.person, documents: [entry.description] });
    }
    return people;
  }

  async retrieve(ref: HieDocumentRef): Promise<Uint8Array> {
    const [prefix, , fileName, ...rest] = ref.networkDocumentId.split(':');
    const catalog = await this.loadCatalog();
    if (prefix !== ID_PREFIX || rest.length > 0 || !catalog.some((entry) => entry.fileName === fileName)) {
      throw new CoreError('DOCUMENT_NOT_FOUND', 'The network holds no document with this id.', {
        details: { networkDocumentId: ref.networkDocumentId },
      });
    }
    try {
      return new Uint8Array(await readFile(path.join(this.fixturesDir, fileName!)));
    } catch (cause) {
      throw new CoreError('DOCUMENT_NOT_FOUND', 'The network no longer has this document.', {
        cause,
        details: { networkDocumentId: ref.networkDocumentId },
      });
    }
  }

  /**
   * The organizations the sandbox's documents come from (custodians and authors), each once, by name; its
   * OID is the first of its ids that is an OID no other entry took, else one derived from its name.
   */
  async directory(): Promise<NetworkDirectoryEntry[]> {
    const byName = new Map<string, Set<string>>();
    for (const entry of await this.loadCatalog()) {
      for (const organization of entry.organizationIdentifiers) {
        const values = byName.get(organization.name) ?? new Set<string>();
        for (const value of organization.identifierValues) values.add(value);
        byName.set(organization.name, values);
      }
    }
    // Two organizations of the sample documents share an OID; the directory keys entries by OID.
    const used = new Set<string>();
    return [...byName]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, values]) => {
        const given = [...values].find((value) => /^\d+(\.\d+)+$/.test(value) && !used.has(value));
        const oid = given ?? sandboxOid(name);
        used.add(oid);
        return { name, oid, network: SANDBOX_NETWORK, supportsMessaging: false, active: true };
      });
  }

  /** Read once, lazily: constructing the network does no I/O. A failed read is retried on the next call. */
  private loadCatalog(): Promise<CatalogEntry[]> {
    this.catalog ??= readCatalog(this.fixturesDir).catch((error: unknown) => {
      this.catalog = undefined;
      throw error;
    });
    return this.catalog;
  }
}

/** 0 to 4 documents of the catalog, by a hash of the patient id: about 1 patient in 5 gets none. */
function hashedChoice(catalog: readonly CatalogEntry[], patientId: string, patientHash: string): CatalogEntry[] {
  const roll = parseInt(patientHash.slice(0, 8), 16);
  if (catalog.length === 0 || roll % NO_DOCUMENT_ONE_IN === 0) return [];
  const count = 1 + (Math.floor(roll / NO_DOCUMENT_ONE_IN) % Math.min(MAX_DOCUMENTS, catalog.length));
  return catalog
    .map((entry) => ({ entry, rank: sha256(`${patientId}:${entry.fileName}`) }))
    .sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0))
    .slice(0, count)
    .map(({ entry }) => entry)
    .sort((a, b) => a.fileName.localeCompare(b.fileName));
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

async function readCatalog(fixturesDir: string): Promise<CatalogEntry[]> {
  const names = (await readdir(fixturesDir)).filter((name) => name.toLowerCase().endsWith('.xml')).sort();
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@_',
    parseTagValue: false,
    parseAttributeValue: false,
    // Only the header is read; the narrative can stay undecoded.
    stopNodes: ['ClinicalDocument.component'],
  });
  const entries: CatalogEntry[] = [];
  for (const fileName of names) {
    const parsed = parser.parse(await readFile(path.join(fixturesDir, fileName), 'utf8')) as Record<string, unknown>;
    const document = asNode(parsed.ClinicalDocument);
    // A file that is not a C-CDA document is not something the network holds.
    if (!document) continue;
    entries.push(describe(fileName, document));
  }
  return entries;
}

type Node = Record<string, unknown>;

function asNode(value: unknown): Node | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Node) : undefined;
}

function asList(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value.replace(/\s+/g, ' ').trim();
  if (Array.isArray(value)) return value.map(textOf).filter(Boolean).join(' ');
  const node = asNode(value);
  return node ? textOf(node['#text']) : '';
}

function describe(fileName: string, document: Node): CatalogEntry {
  const code = asNode(document.code);
  const display = typeof code?.['@_displayName'] === 'string' ? code['@_displayName'] : undefined;
  const codeValue = typeof code?.['@_code'] === 'string' ? code['@_code'] : undefined;
  const system = code?.['@_codeSystem'] === LOINC_OID ? LOINC : code?.['@_codeSystem'] ? `urn:oid:${String(code['@_codeSystem'])}` : undefined;
  const title = textOf(document.title);

  const type: CodeableConcept = {};
  if (codeValue) type.coding = [{ ...(system ? { system } : {}), code: codeValue, ...(display ? { display } : {}) }];
  if (display ?? title) type.text = display ?? title;

  const organizations = [
    asNode(asNode(asNode(document.custodian)?.assignedCustodian)?.representedCustodianOrganization),
    ...asList(document.author).map((author) => asNode(asNode(asNode(author)?.assignedAuthor)?.representedOrganization)),
  ];
  const byName = new Map<string, Set<string>>();
  for (const organization of organizations) {
    const name = organization ? textOf(organization.name) : '';
    if (!organization || !name) continue;
    const values = byName.get(name) ?? new Set<string>();
    for (const id of asList(organization.id)) {
      const node = asNode(id);
      const value = node?.['@_extension'] ?? node?.['@_root'];
      if (typeof value === 'string' && value) values.add(value);
    }
    byName.set(name, values);
  }

  return {
    fileName,
    description: title || display || fileName,
    type,
    organizationIdentifiers: Array.from(byName, ([name, values]) => ({ name, identifierValues: Array.from(values) })),
    person: personOf(asNode(asNode(asList(document.recordTarget)[0])?.patientRole)),
  };
}

const GENDERS = new Set(['M', 'F', 'O', 'U']);

/** The recordTarget's patient as matching compares people; undefined when a name, the dob or the gender is missing. */
function personOf(patientRole: Node | undefined): Demographics | undefined {
  const patient = asNode(patientRole?.patient);
  const name = asNode(asList(patient?.name)[0]);
  const firstName = asList(name?.given).map(textOf).filter(Boolean).join(' ');
  const lastName = asList(name?.family).map(textOf).filter(Boolean).join(' ');
  const birth = asNode(patient?.birthTime)?.['@_value'];
  const gender = asNode(patient?.administrativeGenderCode)?.['@_code'];
  if (!firstName || !lastName || typeof birth !== 'string' || !/^\d{8}/.test(birth) || typeof gender !== 'string') return undefined;
  const zips = asList(patientRole?.addr)
    .map((addr) => textOf(asNode(addr)?.postalCode))
    .filter(Boolean);
  return {
    firstName,
    lastName,
    dob: `${birth.slice(0, 4)}-${birth.slice(4, 6)}-${birth.slice(6, 8)}`,
    genderAtBirth: GENDERS.has(gender) ? (gender as Demographics['genderAtBirth']) : 'U',
    zips,
  };
}
