/**
 * Issue 7 benchmark: webhook messages per second delivered to a local receiver that answers at once, and
 * enqueue-to-delivery latency (p50/p99), through the real delivery path: outbox in storage, the delivery
 * use case, the HTTP sender with its signatures. Prints one JSON object.
 */
import { createServer } from 'node:http';
import { SystemClock } from '../adapters/clock/system.clock.js';
import { Uuid7Ids } from '../adapters/ids/uuid7.ids.js';
import { MemoryStorage } from '../adapters/storage/memory/memory.storage.js';
import { HttpWebhookSender } from '../adapters/webhook/http.webhook-sender.js';
import { deliverDueMessages, enqueueMessage } from '../core/webhooks/deliver.js';
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
