import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { FsBlob } from '../../adapters/blob/fs/fs.blob.js';
import { MemoryBlob } from '../../adapters/blob/memory/memory.blob.js';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { HmacUrlSigner } from '../../adapters/crypto/hmac.url-signer.js';
import { NodeSecrets } from '../../adapters/crypto/node.secrets.js';
import { SandboxHieNetwork } from '../../adapters/hie/sandbox.hie.js';
import { SandboxLabNetwork } from '../../adapters/hie/sandbox.lab.js';
import { SandboxPharmacyNetwork } from '../../adapters/hie/sandbox.pharmacy.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryQueue } from '../../adapters/queue/memory/memory.queue.js';
import { QueueRunner } from '../../adapters/queue/runner.js';
import { BundleRenderer } from '../../adapters/render/bundle.renderer.js';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { MemoryStorage } from '../../adapters/storage/memory/memory.storage.js';
import { SequelizeStorage } from '../../adapters/storage/sequelize/sequelize.storage.js';
import { HttpWebhookSender } from '../../adapters/webhook/http.webhook-sender.js';
import { createAccount } from '../accounts.js';
import type { CoreDeps } from '../deps.js';
import { createPatient } from '../entities/patients.js';
import { coreJobHandlers } from '../jobs.js';
import type { BlobPort } from '../ports/blob.port.js';
import type { StoragePort } from '../ports/storage.port.js';
import { persistedIndexBlobKey } from './patient-index.js';
import { startDocumentQuery } from './query.js';
import { searchEntries } from './search.js';
import { acceptDocumentUpload, createDocumentUpload } from './upload.js';

const ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' as const };
const QUERIES = ['pneumonia', 'albuterl', 'pnuemonia chest', 'pacemaker', 'referral letter', 'xylophone'];

interface Stores {
  storage: StoragePort;
  blob: BlobPort;
  close: () => Promise<void>;
}

/** An index that counts what it is asked to restore and rebuild. */
class CountingIndex extends MiniSearchIndex {
  restores = 0;
  restored = 0;
  upserts = 0;
  override async restore(accountId: string, patientId: string, serialized: string): Promise<boolean> {
    this.restores++;
    const done = await super.restore(accountId, patientId, serialized);
    if (done) this.restored++;
    return done;
  }
  override async upsert(...args: Parameters<MiniSearchIndex['upsert']>): Promise<void> {
    this.upserts++;
    return super.upsert(...args);
  }
}

function definePersistedIndexTests(name: string, openStores: () => Promise<Stores>): void {
  describe(`a patient's saved index (${name})`, () => {
    async function world() {
      const stores = await openStores();
      const clock = new SteppedClock('2026-01-05T10:00:00.000Z');
      const ids = new SequentialIds({ seed: 1 });
      const depsWith = (search: MiniSearchIndex): CoreDeps => ({
        storage: stores.storage,
        blob: stores.blob,
        queue,
        urlSigner: new HmacUrlSigner('unit-test-secret'),
        clock,
        ids,
        secrets: new NodeSecrets(),
        webhookSender: new HttpWebhookSender({ allowPrivate: true }),
        hie: new SandboxHieNetwork({ fixturesDir: new URL('../../sandbox-data/ccda/', import.meta.url).pathname }),
        pharmacy: new SandboxPharmacyNetwork(),
        lab: new SandboxLabNetwork(),
        ccda: new MedplumCcdaConverter(),
        search,
        renderer: new BundleRenderer(),
        config: { publicUrl: 'http://carebridge.test', webhookAllowPrivate: true },
      });
      const queue = new MemoryQueue({ clock, ids, random: () => 0 });
      const deps = depsWith(new MiniSearchIndex());
      const runner = new QueueRunner({ queue, clock, handlers: coreJobHandlers(deps), workerId: 'unit', concurrency: 1 });
      const { account } = await createAccount(deps, { name: 'Unit Clinic' });
      const now = clock.now().toISOString();
      await deps.storage.facilities.insert({ id: ids.next(), accountId: account.id, oid: '2.25.1', name: 'Main', npi: '1234567893', active: true, address: ADDRESS, createdAt: now, updatedAt: now });
      const { patient } = await createPatient(deps, account.id, undefined, {
        firstName: 'Eve', lastName: 'Unit1', dob: '1975-05-01', genderAtBirth: 'F', address: [ADDRESS], contact: [], personalIdentifiers: [], externalId: undefined,
      });
      await startDocumentQuery(deps, account, { patientId: patient.id });
      await runner.drain();
      const entriesOf = async (d: CoreDeps, query: string) =>
        (await searchEntries(d, account.id, patient.id, query)).map((e) => `${e.search.mode}:${e.resource.resourceType}/${e.resource.id}`);
      const letter = async () => {
        const upload = await createDocumentUpload(deps, account, { patientId: patient.id, documentReference: { description: 'Referral letter' } });
        await acceptDocumentUpload(deps, account.id, upload.documentReferenceId, { contentType: 'text/plain', body: 'Letter' });
      };
      return { stores, deps, depsWith, account, patient, entriesOf, letter };
    }

    test('a cold search, after a restart or an eviction, answers exactly as the warm one, from the saved index', async () => {
      const w = await world();
      try {
        // The patient was never searched while their documents landed: no index was built or saved then.
        const key = persistedIndexBlobKey(w.account.id, w.patient.id);
        expect(await w.stores.blob.head(key)).toBeUndefined();
        // The first search builds it from storage and saves it.
        const first = new CountingIndex();
        const warm = new Map<string, string[]>();
        for (const query of QUERIES) warm.set(query, await w.entriesOf(w.depsWith(first), query));
        expect(warm.get('pneumonia')!.length).toBeGreaterThan(0);
        expect(first.upserts).toBeGreaterThan(0);
        expect(await w.stores.blob.head(key)).toBeDefined();

        // A restart: a fresh, empty index over the same storage.
        const restarted = new CountingIndex();
        for (const query of QUERIES) expect(await w.entriesOf(w.depsWith(restarted), query), query).toEqual(warm.get(query));
        expect({ restored: restarted.restored, upserts: restarted.upserts }).toEqual({ restored: 1, upserts: 0 });

        // An eviction: another patient's index takes the whole budget.
        const evicting = new CountingIndex({ budgetBytes: 200_000 });
        const evicted = w.depsWith(evicting);
        await w.entriesOf(evicted, 'pneumonia');
        await evicting.upsert(w.account.id, 'another-patient', [{ key: 'Observation/1', text: 'x'.repeat(30_000) }]);
        expect(evicting.usage.evictions).toBeGreaterThan(0);
        for (const query of QUERIES) expect(await w.entriesOf(evicted, query), query).toEqual(warm.get(query));
        expect(evicting.restored).toBeGreaterThanOrEqual(2);
      } finally {
        await w.stores.close();
      }
    });

    test('a saved index whose stamp is not the data\'s is never used: the index is rebuilt, then saved again', async () => {
      const w = await world();
      try {
        // The first search builds and saves the patient's index, held from then on in this process.
        await w.entriesOf(w.deps, 'pneumonia');
        const key = persistedIndexBlobKey(w.account.id, w.patient.id);
        const saved = await w.stores.blob.get(key);
        expect(saved).toBeDefined();
        // A document lands: the index held in this process follows, the saved copy does not.
        await w.letter();
        expect(await w.entriesOf(w.deps, 'referral letter')).toContain(`match:DocumentReference/${(await w.stores.storage.documents.listByPatient(w.account.id, w.patient.id)).at(-1)!.id}`);
        expect(await w.stores.blob.get(key)).toEqual(saved);

        const restarted = new CountingIndex();
        const after = w.depsWith(restarted);
        for (const query of QUERIES) expect(await w.entriesOf(after, query), query).toEqual((await w.entriesOf(w.deps, query)));
        expect({ restores: restarted.restores, rebuilt: restarted.upserts > 0 }).toEqual({ restores: 0, rebuilt: true });
        expect(await w.stores.blob.get(key)).not.toEqual(saved);

        // A damaged copy under the current stamp is refused, and the index rebuilt.
        const text = new TextDecoder().decode((await w.stores.blob.get(key))!);
        await w.stores.blob.put(key, `${text.slice(0, text.indexOf('\n'))}\n{"format":"other"}\n{}`);
        const damaged = new CountingIndex();
        expect(await w.entriesOf(w.depsWith(damaged), 'pneumonia')).toEqual(await w.entriesOf(w.deps, 'pneumonia'));
        expect({ restores: damaged.restores, restored: damaged.restored, rebuilt: damaged.upserts > 0 }).toEqual({ restores: 1, restored: 0, rebuilt: true });
      } finally {
        await w.stores.close();
      }
    });
  });
}

definePersistedIndexTests('memory', async () => ({ storage: new MemoryStorage(), blob: new MemoryBlob(), close: async () => {} }));

definePersistedIndexTests('SQLite and files', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'carebridge-index-'));
  const storage = await SequelizeStorage.open({ dataDir: dir });
  return {
    storage,
    blob: new FsBlob({ root: path.join(dir, 'blobs') }),
    close: async () => {
      await storage.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});
