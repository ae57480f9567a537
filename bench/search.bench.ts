/**
 * Benchmark: consolidated search for a patient with about 5,000 resources, in process, on the
 * in-memory adapters (storage, blob, queue) and the embedded index (MiniSearchIndex). The patient's data
 * is the sandbox fixtures converted once, replicated with fresh ids and codes (so deduplication keeps every
 * copy) and stored with their documents, as the document flow leaves them; the first search builds the
 * index from storage (reported apart). Then a mix of queries (common, misspelt, several terms, rare,
 * prefix, unrelated) is timed through the search use case (index, storage reads, related resources,
 * bundle stored, URL signed) and through the index port alone. Last, the first search after a new document
 * lands (the data's stamp changed, so the resources are read from storage again).
 *
 * Then cold searches: the first search of the patient after its index was forgotten, by the index's
 * budget (another patient took the room) and by a restart (a new, empty index), against warm ones.
 *
 * Prints one JSON object per measure. `BENCH_RESOURCES` (default 5000), `BENCH_QUERIES` (default 400) and
 * `BENCH_COLD_ROUNDS` (default 15) adjust it. Targets: warm p50 <= 20 ms, p99 <= 100 ms; cold p50 <= 150 ms.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { MemoryBlob } from '../adapters/blob/memory/memory.blob.js';
import { MedplumCcdaConverter } from '../adapters/ccda/medplum.ccda.js';
import { SystemClock } from '../adapters/clock/system.clock.js';
import { HmacUrlSigner } from '../adapters/crypto/hmac.url-signer.js';
import { NodeSecrets } from '../adapters/crypto/node.secrets.js';
import { SandboxHieNetwork } from '../adapters/hie/sandbox.hie.js';
import { SandboxLabNetwork } from '../adapters/hie/sandbox.lab.js';
import { SandboxPharmacyNetwork } from '../adapters/hie/sandbox.pharmacy.js';
import { Uuid7Ids } from '../adapters/ids/uuid7.ids.js';
import { MemoryQueue } from '../adapters/queue/memory/memory.queue.js';
import { BundleRenderer } from '../adapters/render/bundle.renderer.js';
import { MiniSearchIndex } from '../adapters/search/minisearch.search-index.js';
import { MemoryStorage } from '../adapters/storage/memory/memory.storage.js';
import { HttpWebhookSender } from '../adapters/webhook/http.webhook-sender.js';
import { createAccount } from '../core/accounts.js';
import { adoptDocumentResources } from '../core/documents/consolidate.js';
import { resourceKey } from '../core/documents/dedupe.js';
import { withReferencesReplaced } from '../core/documents/references.js';
import { documentBlobKey, documentReferenceOf } from '../core/documents/document-reference.js';
import { searchPatientData } from '../core/documents/search.js';
import { storeDocument } from '../core/documents/store-document.js';
import type { CoreDeps } from '../core/deps.js';
import type { DocumentRecord, FhirResourceRecord, Patient } from '../core/domain/types.js';
import type { FhirResource } from '../core/ports/ccda.port.js';
import { sandboxDocumentsDir } from '../runtime/sandbox-documents.js';

const TARGET_RESOURCES = Number(process.env.BENCH_RESOURCES ?? 5_000);
const QUERY_COUNT = Number(process.env.BENCH_QUERIES ?? 400);
const WARMUP = 40;
/** Cold searches timed (each on a fresh index). */
const COLD_ROUNDS = Number(process.env.BENCH_COLD_ROUNDS ?? 15);
/** An index budget that one patient of this size fits into, but not two. */
const EVICTING_BUDGET_BYTES = 64 * 1024 * 1024;
const QUERIES = ['pneumonia', 'albuterl', 'pnuemonia chest', 'penicillin allergy', 'pacemaker', 'hyperten', 'blood pressure', 'xylophone', 'aspirin', 'diabetes mellitus'];

interface Fixture {
  fileName: string;
  xml: string;
  resources: FhirResource[];
}

/** A copy of a document's resources with ids and codes of its own (suffix `r`), references kept inside it. */
function replicate(resources: readonly FhirResource[], r: number): FhirResource[] {
  const renamed = new Map(resources.map((resource) => [resourceKey(resource), `${resource.resourceType}/${resource.id}-r${r}`]));
  return resources.map((resource) => {
    const copy = withReferencesReplaced(resource, renamed);
    copy.id = `${resource.id}-r${r}`;
    // Distinct codes keep every copy through deduplication: a patient with this many distinct facts.
    return JSON.parse(JSON.stringify(copy).replace(/"code":"([^"]+)"/g, `"code":"$1.${r}"`)) as FhirResource;
  });
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function summary(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted.at(-1)!) };
}

async function main(): Promise<void> {
  const clock = new SystemClock();
  const ids = new Uuid7Ids();
  const deps: CoreDeps = {
    storage: new MemoryStorage(),
    blob: new MemoryBlob(),
    queue: new MemoryQueue({ clock, ids }),
    urlSigner: new HmacUrlSigner('bench-url-signing-secret'),
    clock,
    ids,
    secrets: new NodeSecrets(),
    webhookSender: new HttpWebhookSender({ allowPrivate: true }),
    hie: new SandboxHieNetwork({ fixturesDir: sandboxDocumentsDir() }),
    pharmacy: new SandboxPharmacyNetwork(),
    lab: new SandboxLabNetwork(),
    ccda: new MedplumCcdaConverter(),
    search: new MiniSearchIndex(),
    renderer: new BundleRenderer(),
    config: { publicUrl: 'http://bench.carebridge.local', webhookAllowPrivate: false },
  };
  const { account } = await createAccount(deps, { name: 'Bench' });
  const now = clock.now().toISOString();
  const patient: Patient = {
    id: ids.next(),
    accountId: account.id,
    facilityIds: [],
    cohortIds: [],
    firstName: 'Eve',
    lastName: 'Everywoman',
    dob: '1975-05-01',
    genderAtBirth: 'F',
    address: [{ addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'USA' }],
    contact: [],
    personalIdentifiers: [],
    hieOptOut: false,
    matchKeys: [],
    version: 1,
    createdAt: now,
    updatedAt: now,
  };
  await deps.storage.patients.insert(patient);

  const dir = sandboxDocumentsDir();
  const fixtures: Fixture[] = [];
  for (const fileName of readdirSync(dir).filter((name) => name.endsWith('.xml')).sort()) {
    const xml = readFileSync(path.join(dir, fileName), 'utf8');
    const bundle = await deps.ccda.convert(xml);
    fixtures.push({ fileName, xml, resources: adoptDocumentResources((bundle.entry ?? []).map((entry) => entry.resource!), patient.id) });
  }

  let resourceCount = 0;
  let documentCount = 0;
  for (let r = 0; resourceCount < TARGET_RESOURCES; r++) {
    for (const fixture of fixtures) {
      if (resourceCount >= TARGET_RESOURCES) break;
      const id = ids.next();
      const blobKey = documentBlobKey(account.id, id);
      const { size } = await deps.blob.put(blobKey, fixture.xml, { contentType: 'application/xml' });
      const document: DocumentRecord = {
        id,
        accountId: account.id,
        patientId: patient.id,
        source: 'hie',
        fileName: `${patient.id}_${id}_${fixture.fileName}`,
        description: fixture.fileName,
        status: 'current',
        indexed: now,
        mimeType: 'application/xml',
        size,
        type: { text: 'Summary of episode note' },
        organizationIdentifiers: [],
        blobKey,
        conversionStatus: 'completed',
        createdAt: now,
      };
      await deps.storage.documents.insert(document);
      const resources = [documentReferenceOf(document), ...replicate(fixture.resources, r)];
      const records: FhirResourceRecord[] = resources.map((resource) => ({
        accountId: account.id,
        patientId: patient.id,
        resourceType: resource.resourceType,
        id: resource.id!,
        resource,
        sourceDocumentIds: [id],
        updatedAt: now,
      }));
      await deps.storage.fhirResources.putMany(records);
      resourceCount += records.length;
      documentCount++;
    }
  }

  // The first search finds the index empty (as after a restart) and builds it from storage.
  let started = performance.now();
  await searchPatientData(deps, account.id, patient.id, 'pneumonia');
  const indexBuildMs = Math.round(performance.now() - started);

  const useCase: number[] = [];
  const index: number[] = [];
  const resultSizes: number[] = [];
  for (let i = 0; i < WARMUP + QUERY_COUNT; i++) {
    const query = QUERIES[i % QUERIES.length]!;
    started = performance.now();
    const outcome = await searchPatientData(deps, account.id, patient.id, query);
    const elapsed = performance.now() - started;
    started = performance.now();
    await deps.search.search(account.id, patient.id, query);
    const indexElapsed = performance.now() - started;
    if (i >= WARMUP) {
      useCase.push(elapsed);
      index.push(indexElapsed);
      resultSizes.push(outcome.resourceCount);
    }
  }

  // A document landing changes the data's stamp: the next search reads the patient's resources again
  // (the index itself was kept current by the change).
  const afterChange: number[] = [];
  for (let i = 0; i < 5; i++) {
    const id = ids.next();
    const blobKey = documentBlobKey(account.id, id);
    const bytes = new TextEncoder().encode('%PDF-1.4 scanned letter');
    await deps.blob.put(blobKey, bytes, { contentType: 'application/pdf' });
    const letter: DocumentRecord = {
      id,
      accountId: account.id,
      patientId: patient.id,
      source: 'upload',
      fileName: `${patient.id}_${id}_letter.pdf`,
      description: `Referral letter ${i}`,
      status: 'current',
      indexed: now,
      mimeType: 'application/pdf',
      size: bytes.length,
      type: { text: 'Referral' },
      organizationIdentifiers: [],
      blobKey,
      conversionStatus: 'not-applicable',
      createdAt: now,
    };
    await storeDocument(deps, letter, { mode: 'insert' });
    started = performance.now();
    await searchPatientData(deps, account.id, patient.id, QUERIES[i]!);
    afterChange.push(performance.now() - started);
  }

  // Cold: the first search of a patient whose index was forgotten (evicted to make room for others, or
  // a restart), so the index is rebuilt from storage before it answers. The resources stay in the
  // process's snapshot when only the index was evicted; after a restart they are read again as well.
  const coldAfterEviction: number[] = [];
  const coldAfterRestart: number[] = [];
  for (let i = 0; i < COLD_ROUNDS; i++) {
    const evicting = new MiniSearchIndex({ budgetBytes: EVICTING_BUDGET_BYTES });
    const restarted = { ...deps, search: new MiniSearchIndex() };
    started = performance.now();
    await searchPatientData(restarted, account.id, patient.id, QUERIES[i % QUERIES.length]!);
    coldAfterRestart.push(performance.now() - started);

    const evicted = { ...deps, search: evicting };
    await searchPatientData(evicted, account.id, patient.id, 'pneumonia');
    // Another patient's documents take the budget: this patient's index is forgotten, its snapshot kept.
    await evicting.upsert(account.id, 'another-patient', [{ key: 'Observation/1', text: 'x'.repeat(EVICTING_BUDGET_BYTES) }]);
    started = performance.now();
    await searchPatientData(evicted, account.id, patient.id, QUERIES[i % QUERIES.length]!);
    coldAfterEviction.push(performance.now() - started);
    if (evicting.usage.evictions < 1) throw new Error('the index was not evicted');
  }
  const coldSummary = summary(coldAfterEviction);
  const coldRestartSummary = summary(coldAfterRestart);
  const warmSummary = summary(useCase);

  const useCaseSummary = summary(useCase);
  process.stdout.write(
    `${JSON.stringify({
      bench: 'consolidated-search-cold-warm',
      resources: resourceCount,
      coldAfterEvictionMs: coldSummary,
      coldAfterRestartMs: coldRestartSummary,
      warmMs: warmSummary,
      rounds: COLD_ROUNDS,
      target: { coldP50: 150, warmP50: 20 },
      meetsTarget: coldSummary.p50 <= 150 && coldRestartSummary.p50 <= 150 && warmSummary.p50 <= 20,
      node: process.version,
    })}\n`,
  );
  process.stdout.write(
    `${JSON.stringify({
      bench: 'consolidated-search',
      resources: resourceCount,
      documents: documentCount,
      queries: QUERY_COUNT,
      indexBuildMs,
      searchUseCaseMs: useCaseSummary,
      indexOnlyMs: summary(index),
      firstSearchAfterNewDocumentMs: summary(afterChange),
      resultResources: { min: Math.min(...resultSizes), max: Math.max(...resultSizes) },
      target: { p50: 20, p99: 100 },
      meetsTarget: useCaseSummary.p50 <= 20 && useCaseSummary.p99 <= 100,
      node: process.version,
    })}\n`,
  );
}

await main();
