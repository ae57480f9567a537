/**
 * Webhook benchmarks through the real delivery path (outbox in storage, the delivery use case, the HTTP
 * sender with its signatures): messages per second to a local receiver with enqueue-to-delivery latency
 * while messages keep arriving, then backlog drains. One JSON object per measure.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SystemClock } from '../adapters/clock/system.clock.js';
import { Uuid7Ids } from '../adapters/ids/uuid7.ids.js';
import { MemoryStorage } from '../adapters/storage/memory/memory.storage.js';
import { HttpWebhookSender } from '../adapters/webhook/http.webhook-sender.js';
import { SequelizeStorage } from '../adapters/storage/sequelize/sequelize.storage.js';
import { DEFAULT_ENDPOINT_CONCURRENCY, deliverDueMessages, enqueueMessage } from '../core/webhooks/deliver.js';
import { emit } from './support.js';
import { bulkPatientCreateMessage } from '../core/webhooks/envelope.js';

const MESSAGES = Number(process.env.BENCH_WEBHOOKS ?? 5_000);
const ACCOUNTS = Number(process.env.BENCH_WEBHOOK_ACCOUNTS ?? 8);

const arrivedAt = new Map<string, number>();
const server = createServer((req, res) => {
  const id = String(req.headers['webhook-id']);
  req.resume();
  req.on('end', () => {
    arrivedAt.set(id, performance.now());
    res.writeHead(200).end();
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as { port: number };

const clock = new SystemClock();
const ids = new Uuid7Ids();
const storage = new MemoryStorage();
const sender = new HttpWebhookSender({ allowPrivate: true });
const accounts = Array.from({ length: ACCOUNTS }, () => ids.next());
for (const accountId of accounts) {
  await storage.webhookSettings.put({
    accountId,
    webhookUrl: `http://127.0.0.1:${port}/hooks`,
    webhookKey: 'bench-webhook-key-bench-webhook-key',
    webhookEnabled: true,
    webhookStatusDetail: null,
    updatedAt: clock.now().toISOString(),
  });
}

const enqueuedAt = new Map<string, number>();
const started = performance.now();
// Producers and the delivery loop run together, as in the service: messages arrive while others go out.
const producing = (async () => {
  for (let i = 0; i < MESSAGES; i++) {
    const message = bulkPatientCreateMessage({ messageId: ids.next(), requestId: ids.next(), when: clock.now() }, { requestId: `r${i}`, status: 'processing' });
    enqueuedAt.set(message.meta.messageId, performance.now());
    await storage.transaction((tx) => enqueueMessage(tx, accounts[i % ACCOUNTS]!, message).then(() => undefined));
    if (i % 200 === 199) await new Promise((resolve) => setImmediate(resolve));
  }
})();
let delivered = 0;
while (delivered < MESSAGES) {
  const report = await deliverDueMessages({ storage, webhookSender: sender, clock, random: Math.random }, { limit: 500 });
  delivered += report.delivered;
  if (report.delivered === 0) await new Promise((resolve) => setTimeout(resolve, 1));
}
await producing;
const elapsedMs = performance.now() - started;

const latencies = [...enqueuedAt].map(([id, at]) => arrivedAt.get(id)! - at).sort((a, b) => a - b);
const quantile = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
process.stdout.write(
  `${JSON.stringify({
    measure: 'webhook delivery to a local receiver',
    messages: MESSAGES,
    accounts: ACCOUNTS,
    perSecond: Math.round((MESSAGES / elapsedMs) * 1000),
    targetPerSecond: 1_000,
    enqueueToDeliveryMs: { p50: Math.round(quantile(0.5)), p99: Math.round(quantile(0.99)) },
  })}\n`,
);
await sender.close();
server.close();

/*
 * Backlog drains: 10,000 messages already in the outbox (a bulk import's worth, two per stream, as document
 * queries make them) drained into one endpoint, through the host's pass size and the default 16 requests
 * in flight per endpoint. Memory and a SQLite file, into a receiver that answers at once and one that
 * takes 50 ms.
 */
const BACKLOG = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 10_000);
const PASS_LIMIT = 500;

async function drainBacklog(storageKind: 'memory' | 'sqlite', answerMs: number): Promise<void> {
  let received = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      if (answerMs === 0) res.writeHead(200).end();
      else setTimeout(() => res.writeHead(200).end(), answerMs);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverPort = (receiver.address() as { port: number }).port;
  const dataDir = storageKind === 'sqlite' ? await mkdtemp(join(tmpdir(), 'carebridge-webhook-bench-')) : undefined;
  const store = dataDir ? await SequelizeStorage.open({ dataDir }) : new MemoryStorage();
  const backlogSender = new HttpWebhookSender({ allowPrivate: true });
  try {
    const accountId = ids.next();
    await store.webhookSettings.put({
      accountId,
      webhookUrl: `http://127.0.0.1:${receiverPort}/hooks`,
      webhookKey: 'bench-webhook-key-bench-webhook-key',
      webhookEnabled: true,
      webhookStatusDetail: null,
      updatedAt: clock.now().toISOString(),
    });
    for (let i = 0; i < BACKLOG; i += 500) {
      await store.transaction(async (tx) => {
        for (let j = i; j < Math.min(BACKLOG, i + 500); j++) {
          const requestId = `q${Math.floor(j / 2)}`;
          const message = bulkPatientCreateMessage({ messageId: ids.next(), requestId, when: clock.now() }, { requestId, status: 'processing' });
          await enqueueMessage(tx, accountId, message);
        }
      });
    }
    const endpointPauses = new Map<string, number>();
    const started = performance.now();
    let delivered = 0;
    let passes = 0;
    while (delivered < BACKLOG && passes < 10_000) {
      const report = await deliverDueMessages({ storage: store, webhookSender: backlogSender, clock, random: Math.random, endpointPauses }, { limit: PASS_LIMIT });
      delivered += report.delivered;
      passes += 1;
    }
    const elapsedMs = performance.now() - started;
    const target = answerMs === 0 ? 2_000 : 150;
    emit({
      measure: `webhook backlog drain into a receiver answering in ${answerMs} ms (${storageKind})`,
      messages: BACKLOG,
      delivered,
      received,
      passes,
      endpointConcurrency: DEFAULT_ENDPOINT_CONCURRENCY,
      elapsedMs: Math.round(elapsedMs),
      perSecond: Math.round((delivered / elapsedMs) * 1000),
      targetPerSecond: target,
      ...(answerMs > 0 ? { ceilingPerSecond: Math.round((DEFAULT_ENDPOINT_CONCURRENCY * 1000) / answerMs) } : {}),
    });
  } finally {
    await backlogSender.close();
    await store.close();
    receiver.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

for (const storageKind of ['memory', 'sqlite'] as const) {
  for (const answerMs of [0, 50]) await drainBacklog(storageKind, answerMs);
}
