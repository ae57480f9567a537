import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { MemoryBlob } from '../../adapters/blob/memory/memory.blob.js';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { HmacUrlSigner } from '../../adapters/crypto/hmac.url-signer.js';
import { NodeSecrets } from '../../adapters/crypto/node.secrets.js';
import { SandboxLabNetwork } from '../../adapters/hie/sandbox.lab.js';
import { SandboxPharmacyNetwork } from '../../adapters/hie/sandbox.pharmacy.js';
import { SandboxHieNetwork } from '../../adapters/hie/sandbox.hie.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryQueue } from '../../adapters/queue/memory/memory.queue.js';
import { QueueRunner } from '../../adapters/queue/runner.js';
import { BundleRenderer } from '../../adapters/render/bundle.renderer.js';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import { HttpWebhookSender } from '../../adapters/webhook/http.webhook-sender.js';
import { createAccount } from '../accounts.js';
import type { CoreDeps } from '../deps.js';
import type { Account, Patient } from '../domain/types.js';
import { createPatient, setHieOptOut } from '../entities/patients.js';
import { CoreError } from '../errors.js';
import { coreJobHandlers } from '../jobs.js';
import { startNetworkQuery } from '../network/query.js';
import type { CcdaConverterPort } from '../ports/ccda.port.js';
import type { HieDocumentRef, HieNetworkPort, HiePatientQuery } from '../ports/hie.port.js';
import type { SearchIndexPort } from '../ports/search-index.port.js';
import { dataStamp, indexReflects } from './patient-index.js';
import { PatientSnapshots, SNAPSHOTS_KEPT } from './patient-snapshots.js';
import { READ_AHEAD, getDocumentQueryStatus, startDocumentQuery, startDocumentQueryUnlessOptedOut } from './query.js';
import { searchEntries } from './search.js';
import { acceptDocumentUpload, createDocumentUpload } from './upload.js';
import { countingReads, countingWrites, readsOverBounds } from '../../spec/support/storage-reads.js';

const FIXTURES = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' as const };

/** The sandbox network, counting every call, with hooks a test uses to act between calls. */
class WatchedNetwork implements HieNetworkPort {
  finds = 0;
  retrieves = 0;
  beforeRetrieve?: (call: number) => Promise<void>;
  failFind = false;

  constructor(private readonly inner: SandboxHieNetwork) {}

  async findDocuments(query: HiePatientQuery): Promise<HieDocumentRef[]> {
    this.finds++;
    if (this.failFind) throw new Error('network unreachable');
    return this.inner.findDocuments(query);
  }

  async retrieve(ref: HieDocumentRef): Promise<Uint8Array> {
    this.retrieves++;
    await this.beforeRetrieve?.(this.retrieves);
    return this.inner.retrieve(ref);
  }

  directory() {
    return this.inner.directory();
  }
}

interface World {
  deps: CoreDeps;
  hie: WatchedNetwork;
  runner: QueueRunner;
  clock: SteppedClock;
  account: Account;
  fixturesDir: string;
}

async function makeWorld(options: { fixturesDir?: string; shareWith?: World; search?: SearchIndexPort } = {}): Promise<World> {
  const clock = options.shareWith?.clock ?? new SteppedClock('2026-01-05T10:00:00.000Z');
  const ids = new SequentialIds({ seed: options.shareWith ? 2 : 1 });
  const fixturesDir = options.fixturesDir ?? FIXTURES;
  const hie = new WatchedNetwork(new SandboxHieNetwork({ fixturesDir }));
  const shared = options.shareWith?.deps;
  const deps: CoreDeps = {
    storage: shared?.storage ?? new MemoryStorage(),
    blob: shared?.blob ?? new MemoryBlob(),
    queue: new MemoryQueue({ clock, ids, random: () => 0 }),
    urlSigner: new HmacUrlSigner('unit-test-secret'),
    clock,
    ids,
    secrets: new NodeSecrets(),
    webhookSender: new HttpWebhookSender({ allowPrivate: true }),
    hie,
    pharmacy: new SandboxPharmacyNetwork(),
    lab: new SandboxLabNetwork(),
    ccda: new MedplumCcdaConverter(),
    search: options.search ?? new MiniSearchIndex(),
    renderer: new BundleRenderer(),
    config: { publicUrl: 'http://carebridge.test', webhookAllowPrivate: true },
    snapshots: new PatientSnapshots(),
  };
  const runner = new QueueRunner({ queue: deps.queue, clock, handlers: coreJobHandlers(deps), workerId: 'unit', concurrency: 1 });
  const account = options.shareWith?.account ?? (await createAccount(deps, { name: 'Unit Clinic' })).account;
  if (!options.shareWith) {
    const now = clock.now().toISOString();
    await deps.storage.facilities.insert({ id: ids.next(), accountId: account.id, oid: '2.25.1', name: 'Main', npi: '1234567893', active: true, address: ADDRESS, createdAt: now, updatedAt: now });
  }
  return { deps, hie, runner, clock, account, fixturesDir };
}

async function newPatient(world: World, n: number): Promise<Patient> {
  const { patient } = await createPatient(world.deps, world.account.id, undefined, {
    firstName: 'Eve',
    lastName: `Unit${n}`,
    dob: '1975-05-01',
    genderAtBirth: 'F',
    address: [ADDRESS],
    contact: [],
    personalIdentifiers: [],
    externalId: undefined,
  });
  return patient;
}

/** A new patient for whom the world's sandbox holds documents satisfying `wanted`. */
async function patientWhere(world: World, wanted: (files: string[]) => boolean): Promise<Patient> {
  const probe = new SandboxHieNetwork({ fixturesDir: world.fixturesDir });
  for (let n = 0; n < 80; n++) {
    const patient = await newPatient(world, n);
    const files = (await probe.findDocuments({ patientId: patient.id, firstName: '', lastName: '', dob: '', genderAtBirth: 'U', zips: [] })).map((r) => r.fileName);
    if (wanted(files)) return patient;
  }
  throw new Error('no patient fits');
}

async function messagesOf(world: World) {
  return (await world.deps.storage.outbox.list(world.account.id)).map((message) => JSON.parse(message.body));
}

const tempDirs: string[] = [];
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe('document query use case', () => {
  test('an opted-out patient: refused at the start, and a patient who opts out later gets no network call', async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length >= 2);

    await setHieOptOut(world.deps, world.account.id, patient.id, true);
    await expect(startDocumentQuery(world.deps, world.account, { patientId: patient.id })).rejects.toMatchObject({ code: 'PATIENT_OPTED_OUT' });
    // The path other work (bulk create) takes: nothing recorded, nothing queued.
    const optedOut = (await world.deps.storage.patients.get(world.account.id, patient.id))!;
    expect(await startDocumentQueryUnlessOptedOut(world.deps, optedOut, { facilityId: patient.facilityIds[0]! })).toBeUndefined();
    expect(await world.deps.queue.stats()).toMatchObject({ pending: 0 });
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toBeUndefined();

    // Opted out between the start and the job.
    await setHieOptOut(world.deps, world.account.id, patient.id, false);
    const optedIn = (await world.deps.storage.patients.get(world.account.id, patient.id))!;
    const first = (await startDocumentQueryUnlessOptedOut(world.deps, optedIn, { facilityId: patient.facilityIds[0]!, metadata: { from: 'bulk' } }))!;
    expect(first.metadata).toEqual({ from: 'bulk' });
    await setHieOptOut(world.deps, world.account.id, patient.id, true);
    await world.runner.drain();
    expect([world.hie.finds, world.hie.retrieves]).toEqual([0, 0]);
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ id: first.id, download: { status: 'failed' } });

    // Opted out while documents are being fetched: the next document is not asked for.
    await setHieOptOut(world.deps, world.account.id, patient.id, false);
    await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    world.hie.beforeRetrieve = async (call) => {
      if (call === 1) await setHieOptOut(world.deps, world.account.id, patient.id, true);
    };
    await world.runner.drain();
    expect([world.hie.finds, world.hie.retrieves]).toEqual([1, 1]);
    const status = await getDocumentQueryStatus(world.deps, world.account.id, patient.id);
    expect(status).toMatchObject({ download: { status: 'failed' }, convert: { status: 'failed' } });
    const types = (await messagesOf(world)).map((m) => `${m.meta.type}:${m.patients[0].status}`);
    expect(types).toEqual(Array(2).fill(['medical.document-download:failed', 'medical.document-conversion:failed']).flat());
  });

  test('a document that cannot be converted fails alone: the query completes and the others are consolidated', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'carebridge-ccda-'));
    tempDirs.push(dir);
    copyFileSync(path.join(FIXTURES, 'ccd-2.xml'), path.join(dir, 'ccd-2.xml'));
    // A ClinicalDocument the network serves, but without the recordTarget a conversion needs.
    writeFileSync(path.join(dir, 'broken.xml'), '<?xml version="1.0"?><ClinicalDocument xmlns="urn:hl7-org:v3"><title>Broken note</title><code code="34133-9" codeSystem="2.16.840.1.113883.6.1"/></ClinicalDocument>');
    const world = await makeWorld({ fixturesDir: dir });
    const patient = await patientWhere(world, (files) => files.length === 2);

    const query = await startDocumentQuery(world.deps, world.account, { patientId: patient.id, metadata: { run: 'x' } });
    await world.runner.drain();
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({
      id: query.id,
      download: { status: 'completed', total: 2, successful: 2, errors: 0 },
      convert: { status: 'completed', total: 2, successful: 1, errors: 1 },
    });
    const documents = await world.deps.storage.documents.listByPatient(world.account.id, patient.id);
    const broken = documents.find((d) => d.fileName.endsWith('broken.xml'))!;
    expect(broken).toMatchObject({ conversionStatus: 'failed', conversionError: expect.stringContaining('recordTarget') });
    expect(documents.find((d) => d.fileName.endsWith('ccd-2.xml'))).toMatchObject({ conversionStatus: 'completed' });
    const messages = await messagesOf(world);
    expect(messages.map((m) => `${m.meta.type}:${m.patients[0].status}`)).toEqual(['medical.document-download:completed', 'medical.document-conversion:failed']);
    const resources = await world.deps.storage.fhirResources.listByPatient(world.account.id, patient.id);
    expect(resources.filter((r) => r.resourceType !== 'DocumentReference').length).toBeGreaterThan(10);
    // Only the broken document's own DocumentReference comes from it.
    expect(resources.filter((r) => r.sourceDocumentIds.includes(broken.id)).map((r) => `${r.resourceType}/${r.id}`)).toEqual([`DocumentReference/${broken.id}`]);
  });

  test('a converter too busy to take a document (RATE_LIMITED) leaves it to a retry, not failed', async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length >= 1);
    const converter = world.deps.ccda;
    let refusals = 1;
    Object.assign(world.deps, {
      ccda: {
        convert: (xml: string) => (refusals-- > 0 ? Promise.reject(new CoreError('RATE_LIMITED', 'busy')) : converter.convert(xml)),
      } satisfies CcdaConverterPort,
    });
    await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    await world.runner.drain();
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ convert: { status: 'processing' } });
    expect(await world.deps.queue.stats()).toMatchObject({ pending: 1, dead: 0 });

    world.clock.advance(3_600_000);
    await world.runner.drain();
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ convert: { status: 'completed', errors: 0 } });
    const documents = await world.deps.storage.documents.listByPatient(world.account.id, patient.id);
    expect(documents.every((d) => d.conversionStatus === 'completed')).toBe(true);
  });

  test('a job that fails half-way resumes: each document stored once, each message sent once', async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length >= 3);
    world.hie.beforeRetrieve = async (call) => {
      if (call === 2) throw new Error('connection reset');
    };
    await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    await world.runner.drain();
    expect(await world.deps.storage.documents.listByPatient(world.account.id, patient.id)).toHaveLength(1);
    expect(await world.deps.queue.stats()).toMatchObject({ pending: 1, dead: 0 });

    world.clock.advance(3_600_000);
    await world.runner.drain();
    const documents = await world.deps.storage.documents.listByPatient(world.account.id, patient.id);
    const status = await getDocumentQueryStatus(world.deps, world.account.id, patient.id);
    expect(status).toMatchObject({ download: { status: 'completed', successful: documents.length }, convert: { status: 'completed', errors: 0 } });
    expect(new Set(documents.map((d) => d.fileName)).size).toBe(documents.length);
    expect(documents.length).toBeGreaterThanOrEqual(3);
    const messages = await messagesOf(world);
    expect(messages.map((m) => m.meta.type)).toEqual(['medical.document-download', 'medical.document-conversion']);
    expect(messages[0].patients[0].documents).toHaveLength(documents.length);
  });

  test("a query's last fetched documents and its conversions commit together with the end of their step: its progress and its message", async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length >= 2);
    // Each transaction's writes, by repository and method, so a test can see which commit together.
    const commits: string[][] = [];
    const storage = world.deps.storage;
    const recording = <T extends object>(target: T, writes: string[], name: string): T =>
      new Proxy(target, {
        get(object, key, receiver) {
          const value = Reflect.get(object, key, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (/^(insert|update|put|remove|add|replace)/.test(String(key))) writes.push(`${name}.${String(key)}`);
            return value.apply(object, args);
          };
        },
      });
    world.deps.storage = new Proxy(storage, {
      get(object, key, receiver) {
        if (key !== 'transaction') return Reflect.get(object, key, receiver);
        return <T>(work: (tx: typeof storage) => Promise<T>) =>
          object.transaction((tx) => {
            const writes: string[] = [];
            commits.push(writes);
            const wrapped = new Proxy(tx, { get: (inner, name) => recording(Reflect.get(inner, name) as object, writes, String(name)) });
            return work(wrapped);
          });
      },
    });
    await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    await world.runner.drain();

    const storing = commits.filter((writes) => writes.includes('documents.insertMany'));
    expect(storing.length).toBeGreaterThan(0);
    expect(storing.at(-1)).toEqual(expect.arrayContaining(['documents.insertMany', 'documentQueries.update', 'outbox.add']));
    expect(storing.slice(0, -1).flat()).not.toContain('documentQueries.update');
    const converting = commits.filter((writes) => writes.includes('documents.updateMany'));
    expect(converting).toHaveLength(1);
    expect(converting[0]).toEqual(expect.arrayContaining(['fhirResources.putManyJson', 'documentQueries.update', 'outbox.add']));
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ convert: { status: 'completed', errors: 0 } });
  });

  test('on its last attempt a failing query ends failed, with both messages; earlier attempts leave it running', async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length >= 1);
    world.hie.failFind = true;
    const query = await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    const handler = coreJobHandlers(world.deps)['documents.query'];
    const job = (attempt: number) => ({ id: 'j', type: 'documents.query', payload: { accountId: world.account.id, queryId: query.id }, attempt, maxAttempts: 3, lane: 'interactive' as const, leaseUntil: '' });
    await expect(handler(job(1).payload, job(1))).rejects.toThrow('network unreachable');
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ download: { status: 'processing' } });
    await expect(handler(job(3).payload, job(3))).rejects.toThrow('network unreachable');
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ download: { status: 'failed' }, convert: { status: 'failed' } });
    expect((await messagesOf(world)).map((m) => `${m.meta.type}:${m.patients[0].status}`)).toEqual([
      'medical.document-download:failed',
      'medical.document-conversion:failed',
    ]);
  });
});

/** A search index that keeps its stamps itself, and can be told to forget everything (a restart). */
class StampingIndex extends MiniSearchIndex {
  stamps = new Map<string, string>();
  override async stampOf(accountId: string, patientId: string) {
    return this.stamps.get(`${accountId}/${patientId}`);
  }
  override async setStamp(accountId: string, patientId: string, stamp: string) {
    this.stamps.set(`${accountId}/${patientId}`, stamp);
  }
}

describe('search index upkeep', () => {
  const keysOf = async (world: World, patientId: string, query: string) =>
    (await searchEntries(world.deps, world.account.id, patientId, query)).filter((e) => e.search.mode === 'match').map((e) => `${e.resource.resourceType}`);
  const entriesOf = async (world: World, patientId: string, query: string) =>
    (await searchEntries(world.deps, world.account.id, patientId, query)).map((e) => `${e.search.mode}:${e.resource.resourceType}/${e.resource.id}`);

  test('an index kept within a small budget forgets patients, and every search is still right (rebuilt from storage) within the budget', async () => {
    const world = await makeWorld();
    const patients: Patient[] = [];
    for (let n = 1; n <= 5; n++) patients.push(await newPatient(world, n));
    for (const patient of patients) await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    await world.runner.drain();

    // The budget holds the largest patient and a bit more: never all five.
    let largest = 0;
    for (const patient of patients) {
      const alone = new MiniSearchIndex();
      await searchEntries((await makeWorld({ shareWith: world, search: alone })).deps, world.account.id, patient.id, 'pneumonia');
      largest = Math.max(largest, alone.usage.bytes);
    }
    const budgetBytes = Math.ceil(largest * 1.5);
    const bounded = new MiniSearchIndex({ budgetBytes });
    const forgetful = await makeWorld({ shareWith: world, search: bounded });

    let found = 0;
    for (let round = 0; round < 2; round++) {
      for (const patient of patients) {
        for (const query of ['pneumonia', 'albuterl', 'pacemaker', 'appendicitis']) {
          const entries = await entriesOf(forgetful, patient.id, query);
          found += entries.length;
          // The same resources; their order may differ, as a rebuilt index weighs terms afresh.
          expect(entries.sort()).toEqual((await entriesOf(world, patient.id, query)).sort());
          expect(bounded.usage.bytes).toBeLessThanOrEqual(budgetBytes);
        }
      }
    }
    expect(found).toBeGreaterThan(0);
    expect(bounded.usage.evictions).toBeGreaterThan(0);
    expect(bounded.usage.patients).toBeLessThan(patients.length);
  });

  test('the resources searches read are kept for the last few patients only', async () => {
    const world = await makeWorld();
    const patients: Patient[] = [];
    for (let n = 1; n <= SNAPSHOTS_KEPT + 1; n++) {
      const patient = await newPatient(world, n);
      patients.push(patient);
      const upload = await createDocumentUpload(world.deps, world.account, { patientId: patient.id, documentReference: { description: `Referral ${n}` } });
      await acceptDocumentUpload(world.deps, world.account.id, upload.documentReferenceId, { contentType: 'text/plain', body: 'Letter' });
    }
    const reads: string[] = [];
    const resources = world.deps.storage.fhirResources;
    const listByPatient = resources.listByPatient.bind(resources);
    resources.listByPatient = (accountId, patientId, ...rest) => {
      reads.push(patientId);
      return listByPatient(accountId, patientId, ...rest);
    };
    for (const patient of patients) await searchEntries(world.deps, world.account.id, patient.id, 'referral');
    expect(reads).toEqual(patients.map((patient) => patient.id));
    // The last SNAPSHOTS_KEPT are held; the first was forgotten and is read again.
    reads.length = 0;
    for (const patient of patients.slice(1)) await searchEntries(world.deps, world.account.id, patient.id, 'referral');
    expect(reads).toEqual([]);
    await searchEntries(world.deps, world.account.id, patients[0]!.id, 'referral');
    expect(reads).toEqual([patients[0]!.id]);
  });

  test('after a restart (a fresh, empty index over the same storage) the index is rebuilt on first use', async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.includes('ccd-1.xml'));
    await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    await world.runner.drain();
    expect(await keysOf(world, patient.id, 'albuterl')).toContain('MedicationStatement');

    const restarted = await makeWorld({ shareWith: world });
    expect(await restarted.deps.search.search(world.account.id, patient.id, 'albuterol')).toEqual([]);
    // A document landing before the first search is not enough to make the empty index current.
    const upload = await createDocumentUpload(restarted.deps, world.account, { patientId: patient.id, documentReference: {} });
    await acceptDocumentUpload(restarted.deps, world.account.id, upload.documentReferenceId, {
      contentType: 'application/xml',
      body: readFileSync(path.join(FIXTURES, 'procedure-note.xml')),
    });
    await restarted.runner.drain();
    expect(await keysOf(restarted, patient.id, 'albuterl')).toContain('MedicationStatement');
    expect(await keysOf(restarted, patient.id, 'pacemaker')).toContain('DocumentReference');
    expect(await keysOf(restarted, patient.id, 'appendicitis')).toContain('Condition');
  });

  test('an index another process changed data behind is rebuilt, and an adapter that keeps stamps is used', async () => {
    const index = new StampingIndex();
    const world = await makeWorld({ search: index });
    const patient = await newPatient(world, 1);
    expect(await keysOf(world, patient.id, 'propofol')).toEqual([]);

    // Another process (its own index) takes an upload and converts it.
    const other = await makeWorld({ shareWith: world });
    const upload = await createDocumentUpload(other.deps, world.account, { patientId: patient.id, documentReference: { description: 'Procedure' } });
    await acceptDocumentUpload(other.deps, world.account.id, upload.documentReferenceId, {
      contentType: 'application/xml',
      body: readFileSync(path.join(FIXTURES, 'procedure-note.xml')),
    });
    await other.runner.drain();
    expect(await keysOf(other, patient.id, 'appendicitis')).toContain('Condition');

    // This process's index never saw it; its stamp says so, and the first search rebuilds it.
    expect(await index.search(world.account.id, patient.id, 'appendicitis')).toEqual([]);
    expect(await keysOf(world, patient.id, 'appendicitis')).toContain('Condition');
    const documents = await world.deps.storage.documents.listByPatient(world.account.id, patient.id);
    expect(await index.stampOf(world.account.id, patient.id)).toBe(dataStamp(documents));

    // Forgetting its stamp (as an evicting index would) makes it rebuild again rather than trust itself.
    index.stamps.clear();
    expect(await keysOf(world, patient.id, 'propofol')).toContain('DocumentReference');
  });

  test('a change is applied to the index only when the index was current before it', async () => {
    const world = await makeWorld();
    const patient = await newPatient(world, 1);
    const upload = await createDocumentUpload(world.deps, world.account, { patientId: patient.id, documentReference: { description: 'Referral: sprained ankle' } });
    // A patient never searched: the index holds nothing for them and is not built as documents land.
    await acceptDocumentUpload(world.deps, world.account.id, upload.documentReferenceId, { contentType: 'text/plain', body: 'Letter' });
    expect(await world.deps.search.stampOf(world.account.id, patient.id)).toBeUndefined();
    expect(await world.deps.search.search(world.account.id, patient.id, 'ankle')).toEqual([]);
    // The first search builds it from storage; from then on it is current, and a change is applied as it lands.
    expect((await searchEntries(world.deps, world.account.id, patient.id, 'ankle')).filter((entry) => entry.search.mode === 'match').map((entry) => entry.resource.id)).toEqual([upload.documentReferenceId]);
    const second = await createDocumentUpload(world.deps, world.account, { patientId: patient.id, documentReference: { description: 'Discharge: wrist fracture' } });
    await acceptDocumentUpload(world.deps, world.account.id, second.documentReferenceId, { contentType: 'text/plain', body: 'Letter' });
    expect(await world.deps.search.search(world.account.id, patient.id, 'wrist')).toEqual([`DocumentReference/${second.documentReferenceId}`]);
    await expect(acceptDocumentUpload(world.deps, world.account.id, upload.documentReferenceId, { contentType: 'text/plain', body: 'again' })).rejects.toBeInstanceOf(CoreError);
  });

  test('each fetched C-CDA document is read once where the converter runs (text and conversion together), and the query ends as it does without that', async () => {
    const withRead = await makeWorld();
    const without = await makeWorld();
    const inner = new MedplumCcdaConverter();
    const calls = { read: 0, convert: 0, searchText: 0 };
    Object.assign(withRead.deps, {
      ccda: {
        read: (xml: string) => (calls.read++, inner.read(xml)),
        convert: (xml: string) => (calls.convert++, inner.convert(xml)),
        searchText: (xml: string) => (calls.searchText++, inner.searchText(xml)),
      } satisfies CcdaConverterPort,
    });
    // The same converter without `read`: text and conversion asked for separately, as before it existed.
    Object.assign(without.deps, { ccda: { convert: (xml: string) => inner.convert(xml), searchText: (xml: string) => inner.searchText(xml) } satisfies CcdaConverterPort });
    const patient = await patientWhere(withRead, (files) => files.length >= 3);
    await patientWhere(without, (files) => files.length >= 3);

    for (const world of [withRead, without]) {
      await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
      await world.runner.drain();
    }
    const documents = await withRead.deps.storage.documents.listByPatient(withRead.account.id, patient.id);
    expect(calls).toEqual({ read: documents.length, convert: 0, searchText: 0 });
    const stateOf = async (world: World) => ({
      documents: await world.deps.storage.documents.listByPatient(world.account.id, patient.id),
      resources: await world.deps.storage.fhirResources.listByPatient(world.account.id, patient.id),
      messages: await messagesOf(world),
      found: await searchEntries(world.deps, world.account.id, patient.id, 'ibuprofen'),
    });
    expect(await stateOf(withRead)).toEqual(await stateOf(without));
  });

  test('the next document is fetched while the one before is being read by the converter', async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length >= 2);
    const inner = new MedplumCcdaConverter();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const reads = { asked: 0, answered: 0 };
    Object.assign(world.deps, {
      ccda: {
        read: async (xml: string) => {
          reads.asked++;
          await gate;
          reads.answered++;
          return inner.read(xml);
        },
        convert: (xml: string) => inner.convert(xml),
      } satisfies CcdaConverterPort,
    });
    const atSecondFetch: (typeof reads)[] = [];
    world.hie.beforeRetrieve = async (call) => {
      if (call !== 2) return;
      atSecondFetch.push({ ...reads });
      release();
    };
    await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    await world.runner.drain();
    expect(atSecondFetch).toEqual([{ asked: 1, answered: 0 }]);
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ convert: { status: 'completed', errors: 0 } });
  });
});

/** Counts the reads of the world's storage from now on. */
function countReads(world: World): Map<string, number> {
  const reads = new Map<string, number>();
  world.deps.storage = countingReads(world.deps.storage, reads);
  return reads;
}

function expectReadsWithin(reads: Map<string, number>, bounds: Record<string, number>): void {
  expect(readsOverBounds(reads, bounds)).toEqual([]);
}

/** A network that holds every fixture document for every patient: more than one batch of fetches. */
class EveryFixtureNetwork implements HieNetworkPort {
  private readonly files = readdirSync(FIXTURES).filter((file) => file.endsWith('.xml')).sort();

  async findDocuments(): Promise<HieDocumentRef[]> {
    return this.files.map((file) => ({
      networkDocumentId: `every:${file}`,
      fileName: file,
      description: file,
      mimeType: 'application/xml',
      type: { text: 'Clinical document' },
      organizationIdentifiers: [],
    }));
  }

  async retrieve(ref: HieDocumentRef): Promise<Uint8Array> {
    return readFileSync(path.join(FIXTURES, ref.fileName));
  }

  directory() {
    return Promise.resolve([]);
  }
}

/*
 * What one document query job reads, whatever the number of documents D it fetches, as a fact to hold:
 * - its query 3 times: at the start of the job, and in the commit ending each step (where a second worker
 *   that took the job over may have ended the step already);
 * - its patient 1 + D times: before the network is asked anything, and before each document is fetched
 *   (a patient who opts out meanwhile gets no further call); the conversion step takes the patient the
 *   download step read last, and never reads it again;
 * - the patient's documents twice: once before the fetches (which tells the documents held already, and
 *   is the state each batch recorded moves the index's stamp from), once in the download step's commit
 *   (handed to the conversion step); never one look-up per document;
 * - the patient's resources once (to fold into), the patient's running network queries once (ended with
 *   the query), the account's extra webhook endpoints once per message (in the message's commit);
 * - nothing else.
 */
const QUERY_JOB_READS = (documents: number): Record<string, number> => ({
  'documentQueries.get': 3,
  'patients.get': 1 + documents,
  'documents.listByPatient': 2,
  'fhirResources.listByPatientJson': 1,
  'networkQueries.listProcessing': 1,
  'webhookEndpoints.list': 2,
});

describe('storage reads of a document query', () => {
  test('a query of 3 documents reads its patient once before the network and once per document fetched, its documents twice, nothing per document else', async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length === 3);
    const reads = countReads(world);
    await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    expectReadsWithin(reads, { 'patients.get': 1, 'facilities.get': 1, 'documentQueries.latestForPatient': 1 });
    reads.clear();

    await world.runner.drain();
    expectReadsWithin(reads, QUERY_JOB_READS(3));
    expect(world.hie.retrieves).toBe(3);
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({
      download: { status: 'completed', successful: 3 },
      convert: { status: 'completed', total: 3, successful: 3 },
    });
    expect((await messagesOf(world)).map((m) => `${m.meta.type}:${m.patients[0].status}`)).toEqual(['medical.document-download:completed', 'medical.document-conversion:completed']);
  });

  test('documents fetched in several batches: the patient\'s documents are still read twice, and searches find what every batch brought', async () => {
    const world = await makeWorld({ search: new StampingIndex() });
    const network = new EveryFixtureNetwork();
    world.deps.hie = network;
    const patient = await newPatient(world, 1);
    const count = (await network.findDocuments()).length;
    expect(count).toBeGreaterThan(4);
    // An index current for the patient (who has no document yet) is kept current as each batch lands: the
    // stamp each batch moves it from must be the stored state's, or it is left behind.
    await world.deps.search.setStamp(world.account.id, patient.id, dataStamp([]));
    const reads = countReads(world);
    await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    reads.clear();

    const writes = new Map<string, number>();
    world.deps.storage = countingWrites(world.deps.storage, writes);
    await world.runner.drain();
    expectReadsWithin(reads, QUERY_JOB_READS(count));
    // The documents are written in one call per batch fetched and one for their conversions, whatever their number.
    const batches = Math.ceil(count / READ_AHEAD);
    expect(Object.fromEntries([...writes].filter(([method]) => method.startsWith('documents.')))).toEqual({ 'documents.insertMany': batches, 'documents.updateMany': 1 });
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({
      download: { status: 'completed', successful: count },
      convert: { status: 'completed', total: count },
    });
    const documents = await world.deps.storage.documents.listByPatient(world.account.id, patient.id);
    expect(await indexReflects(world.deps, world.account.id, patient.id, dataStamp(documents))).toBe(true);
    expect((await searchEntries(world.deps, world.account.id, patient.id, 'medication')).length).toBeGreaterThan(0);
  });

  test("a network query's sources end with the patient their jobs read: the patient is read once per source job, and by the hie source's document query", async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length === 3);
    await world.deps.storage.patients.update({ ...patient, externalId: 'ext-42' });
    const reads = countReads(world);
    const query = await startNetworkQuery(world.deps, world.account, { patientId: patient.id, sources: ['hie', 'pharmacy', 'lab'] });
    reads.clear();

    await world.runner.drain();
    // One read in each of the three source jobs, and the document query's own (1 + 3 documents).
    expect(reads.get('patients.get')).toBeLessThanOrEqual(3 + QUERY_JOB_READS(3)['patients.get']!);
    const messages = (await messagesOf(world)).filter((m) => String(m.meta.type).startsWith('network-query.') && m.meta.requestId === query.id);
    expect(messages.map((m) => `${m.meta.type}:${m.payload.source.status}`).sort()).toEqual(['network-query.hie:completed', 'network-query.lab:completed', 'network-query.pharmacy:completed']);
    expect(messages.map((m) => m.payload.externalId)).toEqual(['ext-42', 'ext-42', 'ext-42']);
  });

  test('a query whose patient opted out before its job ends failed having read its patient once, and the last attempt of a failing one reads its query once before ending it', async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length >= 1);
    const optedIn = (await world.deps.storage.patients.get(world.account.id, patient.id))!;
    await startDocumentQueryUnlessOptedOut(world.deps, optedIn, { facilityId: patient.facilityIds[0]! });
    await setHieOptOut(world.deps, world.account.id, patient.id, true);
    const reads = countReads(world);
    await world.runner.drain();
    // The query at the start of the job, again as the ending finds it, and in the ending's transaction.
    expectReadsWithin(reads, { 'patients.get': 1, 'documentQueries.get': 3, 'documents.listByPatient': 1, 'networkQueries.listProcessing': 1, 'webhookEndpoints.list': 2 });
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ download: { status: 'failed' }, convert: { status: 'failed' } });

    await setHieOptOut(world.deps, world.account.id, patient.id, false);
    world.hie.failFind = true;
    const query = await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    const handler = coreJobHandlers(world.deps)['documents.query'];
    const job = { id: 'j', type: 'documents.query', payload: { accountId: world.account.id, queryId: query.id }, attempt: 3, maxAttempts: 3, lane: 'interactive' as const, leaseUntil: '' };
    reads.clear();
    await expect(handler(job.payload, job)).rejects.toThrow('network unreachable');
    // The attempt's own read, the ending's, and the ending's transaction's.
    expectReadsWithin(reads, { 'patients.get': 2, 'documentQueries.get': 3, 'documents.listByPatient': 1, 'networkQueries.listProcessing': 1, 'webhookEndpoints.list': 2 });
    expect((await messagesOf(world)).map((m) => `${m.meta.type}:${m.patients[0].status}`)).toEqual(Array(2).fill(['medical.document-download:failed', 'medical.document-conversion:failed']).flat());
  });

  test('a conversion step resumed on its own (a retried job) reads the patient and their documents once', async () => {
    const world = await makeWorld();
    const patient = await patientWhere(world, (files) => files.length === 3);
    const converter = world.deps.ccda;
    let refusals = 1;
    Object.assign(world.deps, {
      ccda: { convert: (xml: string) => (refusals-- > 0 ? Promise.reject(new CoreError('RATE_LIMITED', 'busy')) : converter.convert(xml)) } satisfies CcdaConverterPort,
    });
    await startDocumentQuery(world.deps, world.account, { patientId: patient.id });
    await world.runner.drain();
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ download: { status: 'completed' }, convert: { status: 'processing' } });

    const reads = countReads(world);
    world.clock.advance(3_600_000);
    await world.runner.drain();
    expectReadsWithin(reads, {
      'documentQueries.get': 2,
      'patients.get': 1,
      'documents.listByPatient': 1,
      'fhirResources.listByPatientJson': 1,
      'networkQueries.listProcessing': 1,
      'webhookEndpoints.list': 1,
    });
    expect(await getDocumentQueryStatus(world.deps, world.account.id, patient.id)).toMatchObject({ convert: { status: 'completed', successful: 3 } });
  });
});
