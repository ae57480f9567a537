/**
 * Run by search-memory.test.ts as `node --expose-gc --import tsx <this file>`: document queries for many
 * patients, each converted, indexed and searched once, the way a bulk import's document queries go.
 * Stored data lives outside the heap (SQLite, files), so what the heap holds after GC is what the process keeps
 * for itself: caches and indexes. Prints one JSON line: the heap after GC at each checkpoint.
 *
 * `PATIENTS` (default 400), `CHECKPOINT` (default 100), `SEARCH_BUDGET_BYTES` (default 8 MB).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsBlob } from '../../adapters/blob/fs/fs.blob.js';
import { MedplumCcdaConverter } from '../../adapters/ccda/medplum.ccda.js';
import { SystemClock } from '../../adapters/clock/system.clock.js';
import { HmacUrlSigner } from '../../adapters/crypto/hmac.url-signer.js';
import { NodeSecrets } from '../../adapters/crypto/node.secrets.js';
import { SandboxHieNetwork } from '../../adapters/hie/sandbox.hie.js';
import { SandboxLabNetwork } from '../../adapters/hie/sandbox.lab.js';
import { SandboxPharmacyNetwork } from '../../adapters/hie/sandbox.pharmacy.js';
import { Uuid7Ids } from '../../adapters/ids/uuid7.ids.js';
import { MemoryQueue } from '../../adapters/queue/memory/memory.queue.js';
import { QueueRunner } from '../../adapters/queue/runner.js';
import { BundleRenderer } from '../../adapters/render/bundle.renderer.js';
import { MiniSearchIndex } from '../../adapters/search/minisearch.search-index.js';
import { SequelizeStorage } from '../../adapters/storage/sequelize/sequelize.storage.js';
import { HttpWebhookSender } from '../../adapters/webhook/http.webhook-sender.js';
import { createAccount } from '../../core/accounts.js';
import type { CoreDeps } from '../../core/deps.js';
import { startDocumentQuery } from '../../core/documents/query.js';
import { searchEntries } from '../../core/documents/search.js';
import { createPatient } from '../../core/entities/patients.js';
import { coreJobHandlers } from '../../core/jobs.js';
import type { CcdaConverterPort, FhirBundle } from '../../core/ports/ccda.port.js';
import { sandboxDocumentsDir } from '../../runtime/sandbox-documents.js';

const PATIENTS = Number(process.env.PATIENTS ?? 400);
const CHECKPOINT = Number(process.env.CHECKPOINT ?? 100);
const SEARCH_BUDGET_BYTES = Number(process.env.SEARCH_BUDGET_BYTES ?? 8 * 1024 * 1024);
const BATCH = 10;
const ADDRESS = { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' as const };

/**
 * The sandbox serves the same few documents to every patient; converting each once keeps the run short
 * without changing what is stored or indexed per patient (every patient gets its own copy of the result).
 */
class ConvertOnce implements CcdaConverterPort {
  private readonly converted = new Map<string, FhirBundle>();
  constructor(private readonly inner: CcdaConverterPort) {}
  async convert(xml: string): Promise<FhirBundle> {
    let bundle = this.converted.get(xml);
    if (!bundle) {
      bundle = await this.inner.convert(xml);
      this.converted.set(xml, bundle);
    }
    return structuredClone(bundle);
  }
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'carebridge-memory-'));
  // SQLite keeps an in-memory database outside the JavaScript heap: the heap shows only what the process
  // keeps for itself, and the run is not bound by the disk.
  const storage = await SequelizeStorage.open({ url: ':memory:' });
  const clock = new SystemClock();
  const ids = new Uuid7Ids();
  const search = new MiniSearchIndex({ budgetBytes: SEARCH_BUDGET_BYTES });
  const deps: CoreDeps = {
    storage,
    blob: new FsBlob({ root: join(dir, 'blobs') }),
    queue: new MemoryQueue({ clock, ids }),
    urlSigner: new HmacUrlSigner('memory-test-url-secret'),
    clock,
    ids,
    secrets: new NodeSecrets(),
    webhookSender: new HttpWebhookSender({ allowPrivate: true }),
    hie: new SandboxHieNetwork({ fixturesDir: sandboxDocumentsDir() }),
    pharmacy: new SandboxPharmacyNetwork(),
    lab: new SandboxLabNetwork(),
    ccda: new ConvertOnce(new MedplumCcdaConverter()),
    search,
    renderer: new BundleRenderer(),
    config: { publicUrl: 'http://memory.carebridge.local', webhookAllowPrivate: true },
  };
  const runner = new QueueRunner({ queue: deps.queue, clock, handlers: coreJobHandlers(deps), workerId: 'memory', concurrency: 4 });
  try {
    const { account } = await createAccount(deps, { name: 'Memory' });
    const now = clock.now().toISOString();
    const facilityId = ids.next();
    await storage.facilities.insert({ id: facilityId, accountId: account.id, oid: '2.25.7', name: 'Main', npi: '1234567893', active: true, address: ADDRESS, createdAt: now, updatedAt: now });

    const checkpoints: { patients: number; heapBytes: number; indexedPatients: number; indexBytes: number }[] = [];
    let documents = 0;
    const started = performance.now();
    // Patients come in batches, their queries run side by side, as after a bulk import.
    for (let n = 1; n <= PATIENTS; n += BATCH) {
      const batch: string[] = [];
      for (let i = n; i < n + BATCH && i <= PATIENTS; i++) {
        const { patient } = await createPatient(deps, account.id, facilityId, {
          firstName: 'Eve',
          lastName: `Memory${i}`,
          dob: '1975-05-01',
          genderAtBirth: 'F',
          address: [ADDRESS],
          contact: [],
          personalIdentifiers: [],
          externalId: undefined,
        });
        await startDocumentQuery(deps, account, { patientId: patient.id });
        batch.push(patient.id);
      }
      await runner.drain();
      for (const patientId of batch) {
        documents += (await storage.documents.listByPatient(account.id, patientId)).length;
        await searchEntries(deps, account.id, patientId, 'pneumonia');
      }
      const done = Math.min(n + BATCH - 1, PATIENTS);
      if (done % CHECKPOINT === 0) checkpoints.push({ patients: done, heapBytes: heapAfterGc(), indexedPatients: search.usage.patients, indexBytes: search.usage.bytes });
    }
    process.stdout.write(`${JSON.stringify({ patients: PATIENTS, documents, budgetBytes: SEARCH_BUDGET_BYTES, evictions: search.usage.evictions, seconds: Math.round((performance.now() - started) / 1000), checkpoints })}\n`);
  } finally {
    await runner.stop();
    await storage.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
