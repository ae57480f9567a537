/**
 * Webhook benchmarks through the real delivery path (outbox in storage, the delivery use case, the HTTP
 * sender with its signatures): messages per second to a local receiver with enqueue-to-delivery latency
 * while messages keep arriving, then backlog drains. One JSON object per measure.
 */
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SystemClock } from '../adapters/clock/system.clock.js';
import { Uuid7Ids } from '../adapters/ids/uuid7.ids.js';
import { MemoryStorage } from '../adapters/storage/memory/memory.storage.js';
import { HttpWebhookSender } from '../adapters/webhook/http.webhook-sender.js';
import { SequelizeStorage } from '../adapters/storage/sequelize/sequelize.storage.js';
import { DEFAULT_ENDPOINT_CONCURRENCY, deliverDueMessages, enqueueMessage } from '../core/webhooks/deliver.js';
import { emit } from './support.js';
import { createPgSchema, probePostgres } from '../spec/support/pg.js';
import { bulkPatientCreateMessage } from '../core/webhooks/envelope.js';

const MESSAGES = Number(process.env.BENCH_WEBHOOKS ?? 5_000);
/** Which storages the drains and the failing receiver run on: `memory,sqlite,postgres` by default. */
const STORAGES = (process.env.BENCH_WEBHOOK_STORAGES ?? 'memory,sqlite,postgres').split(',');
const ACCOUNTS = Number(process.env.BENCH_WEBHOOK_ACCOUNTS ?? 8);
/** Which measures run: `delivery,drain,fail-first,fan-out` by default (all). */
const PARTS = (process.env.BENCH_WEBHOOK_PARTS ?? 'delivery,drain,fail-first,fan-out').split(',');

const clock = new SystemClock();
const ids = new Uuid7Ids();

if (PARTS.includes('delivery')) {
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
    const report = await deliverDueMessages({ storage, webhookSender: sender, clock, ids, random: Math.random }, { limit: 500 });
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
}

/*
 * Backlog drains: 10,000 messages already in the outbox (a bulk import's worth, two per stream, as document
 * queries make them) drained into one endpoint, through the host's pass size and the default 16 requests
 * in flight per endpoint. Memory and a SQLite file, into a receiver that answers at once and one that
 * takes 50 ms.
 */
const BACKLOG = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 10_000);
const PASS_LIMIT = 500;

async function openStore(storageKind: 'memory' | 'sqlite' | 'postgres'): Promise<{ store: MemoryStorage | SequelizeStorage; cleanup: () => Promise<void> }> {
  if (storageKind === 'memory') return { store: new MemoryStorage(), cleanup: async () => {} };
  if (storageKind === 'sqlite') {
    const dataDir = await mkdtemp(join(tmpdir(), 'carebridge-webhook-bench-'));
    const store = await SequelizeStorage.open({ dataDir });
    return { store, cleanup: async () => { await store.close(); await rm(dataDir, { recursive: true, force: true }); } };
  }
  const schema = await createPgSchema('webhookbench');
  const store = await SequelizeStorage.open({ url: schema.url, schema: schema.schema });
  return { store, cleanup: async () => { await store.close(); await schema.drop(); } };
}

/** Starts `receiver` on 127.0.0.1 and gives a new account of `store` an enabled endpoint there. */
async function accountListeningAt(store: MemoryStorage | SequelizeStorage, receiver: ReturnType<typeof createServer>): Promise<string> {
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const accountId = ids.next();
  await store.webhookSettings.put({
    accountId,
    webhookUrl: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`,
    webhookKey: 'bench-webhook-key-bench-webhook-key',
    webhookEnabled: true,
    webhookStatusDetail: null,
    updatedAt: clock.now().toISOString(),
  });
  return accountId;
}

async function drainBacklog(storageKind: 'memory' | 'sqlite' | 'postgres', answerMs: number): Promise<void> {
  let received = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      if (answerMs === 0) res.writeHead(200).end();
      else setTimeout(() => res.writeHead(200).end(), answerMs);
    });
  });
  const { store, cleanup } = await openStore(storageKind);
  const backlogSender = new HttpWebhookSender({ allowPrivate: true });
  try {
    const accountId = await accountListeningAt(store, receiver);
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
      const report = await deliverDueMessages({ storage: store, webhookSender: backlogSender, clock, ids, random: Math.random, endpointPauses }, { limit: PASS_LIMIT });
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
    await cleanup();
    receiver.close();
  }
}

const postgres = (await probePostgres()).available;
for (const storageKind of ['memory', 'sqlite', ...(postgres ? (['postgres'] as const) : [])] as const) {
  if (!STORAGES.includes(storageKind) || !PARTS.includes('drain')) continue;
  for (const answerMs of [0, 50]) await drainBacklog(storageKind, answerMs);
}

/*
 * A receiver that fails the first attempt of every message, with the real retry schedule (the second
 * attempt 5 s after the first, with jitter) and the service's loop (a pass, then a 500 ms poll when a pass
 * had nothing to do). Messages arrive in streams of two over a few seconds, as an import's processing and
 * completed do. Target: every message delivered within 15 s of its creation.
 */
async function failEveryFirstAttempt(storageKind: 'memory' | 'sqlite'): Promise<void> {
  const STREAMS = Number(process.env.BENCH_WEBHOOK_FAIL_FIRST_STREAMS ?? 500);
  const tried = new Set<string>();
  const arrived = new Map<string, number>();
  const receiver = createServer((req, res) => {
    const id = String(req.headers['webhook-id']);
    req.resume();
    req.on('end', () => {
      if (!tried.has(id)) {
        tried.add(id);
        res.writeHead(500).end();
        return;
      }
      if (!arrived.has(id)) arrived.set(id, Date.now());
      res.writeHead(200).end();
    });
  });
  const { store, cleanup } = await openStore(storageKind);
  const failSender = new HttpWebhookSender({ allowPrivate: true });
  try {
    const accountId = await accountListeningAt(store, receiver);
    const createdAt = new Map<string, number>();
    const producing = (async () => {
      for (let stream = 0; stream < STREAMS; stream++) {
        const requestId = `fail-first-${stream}`;
        await store.transaction(async (tx) => {
          for (const status of ['processing', 'completed'] as const) {
            const message = bulkPatientCreateMessage({ messageId: ids.next(), requestId, when: clock.now() }, { requestId, status });
            createdAt.set(message.meta.messageId, Date.parse(message.meta.when));
            await enqueueMessage(tx, accountId, message);
          }
        });
        // About 3 s of arrivals, so messages are created while others are retried.
        if (stream % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 300));
      }
    })();
    const endpointPauses = new Map<string, number>();
    const deadline = Date.now() + 120_000;
    let producingDone = false;
    void producing.then(() => (producingDone = true));
    while (Date.now() < deadline && !(producingDone && arrived.size >= STREAMS * 2)) {
      const report = await deliverDueMessages({ storage: store, webhookSender: failSender, clock, ids, random: Math.random, endpointPauses }, { limit: PASS_LIMIT });
      if (report.delivered + report.failed + report.parked === 0) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await producing;
    const latencies = [...createdAt].map(([id, at]) => (arrived.has(id) ? arrived.get(id)! - at : Number.POSITIVE_INFINITY)).sort((a, b) => a - b);
    emit({
      measure: `webhook delivery when every first attempt fails (${storageKind})`,
      messages: createdAt.size,
      delivered: arrived.size,
      creationToDeliveryMs: {
        p50: Math.round(latencies[Math.floor(latencies.length / 2)]!),
        max: Number.isFinite(latencies.at(-1)!) ? Math.round(latencies.at(-1)!) : null,
      },
      targetMaxMs: 15_000,
    });
  } finally {
    await failSender.close();
    await cleanup();
    receiver.close();
  }
}

for (const storageKind of ['memory', 'sqlite'] as const) if (STORAGES.includes(storageKind) && PARTS.includes('fail-first')) await failEveryFirstAttempt(storageKind);

/*
 * Ten endpoints of one account, fed the same backlog (every message fans out to all of them): one answers
 * 500 to every request, one takes 2 s, eight take 50 ms. Measured: how fast each of the eight healthy
 * endpoints receives its copy of the backlog, against a single healthy endpoint (50 ms) alone in another
 * account, in the same run and through the same delivery loop. Target: the healthy endpoints within 20%
 * of the one alone (a failing or slow endpoint never delays another). Also measured, to tell the cost of
 * the failing and slow endpoints from that of sending eight times the messages: the eight healthy
 * endpoints without the other two. The receivers run in a process of their own (fan-out-receivers.ts).
 */
async function endpointsFanOut(storageKind: 'memory' | 'sqlite' | 'postgres'): Promise<void> {
  const FAN_MESSAGES = Number(process.env.BENCH_WEBHOOK_FANOUT ?? 2_000);
  const HEALTHY_MS = 50;
  const SLOW_MS = 2_000;
  const child = fork(fileURLToPath(new URL('fan-out-receivers.ts', import.meta.url)), { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const doneAt = new Map<string, number>();
  const replies: ((message: Record<string, unknown>) => void)[] = [];
  child.on('message', (message: Record<string, unknown>) => {
    if ('done' in message) doneAt.set(String(message.done), Number(message.at));
    else replies.shift()?.(message);
  });
  const ask = <T>(command: unknown) =>
    new Promise<T>((resolve) => {
      replies.push((message) => resolve(message as T));
      child.send(command as object);
    });
  const listen = async (receivers: { name: string; answerMs: number; status?: number }[]) =>
    (await ask<{ urls: Record<string, string> }>({ listen: receivers.map((r) => ({ status: 200, ...r })), expect: FAN_MESSAGES })).urls;

  const { store, cleanup } = await openStore(storageKind);
  const fanSender = new HttpWebhookSender({ allowPrivate: true });
  const claimTimes: number[] = [];
  if (process.env.BENCH_DEBUG) {
    const claim = store.outbox.claim.bind(store.outbox);
    store.outbox.claim = async (n, limit, lease) => {
      const started = performance.now();
      const got = await claim(n, limit, lease);
      claimTimes.push(performance.now() - started);
      if (claimTimes.length % 50 === 0) process.stderr.write(`claims ${claimTimes.length}: last 50 took ${Math.round(claimTimes.slice(-50).reduce((a, b) => a + b, 0))} ms (this one: ${lease.endpointId === undefined ? 'pass' : 'refill'} ${limit} -> ${got.length})\n`);
      return got;
    };
  }
  const now = () => clock.now().toISOString();
  const putDefault = async (accountId: string, url: string) =>
    store.webhookSettings.put({ accountId, webhookUrl: url, webhookKey: 'bench-webhook-key-bench-webhook-key', webhookEnabled: true, webhookStatusDetail: null, updatedAt: now() });
  const addEndpoint = async (accountId: string, url: string) =>
    store.webhookEndpoints.insert({
      id: ids.next(),
      accountId,
      url,
      description: '',
      enabled: true,
      eventTypes: [],
      secret: 'whsec_YmVuY2gtZW5kcG9pbnQtc2VjcmV0LWJ5dGVz',
      statusDetail: null,
      createdAt: now(),
      updatedAt: now(),
    });
  /** An account whose default endpoint is the first receiver and the others extra endpoints, with the backlog. */
  const account = async (urls: string[]): Promise<string> => {
    const accountId = ids.next();
    await putDefault(accountId, urls[0]!);
    for (const url of urls.slice(1)) await addEndpoint(accountId, url);
    for (let i = 0; i < FAN_MESSAGES; i += 250) {
      await store.transaction(async (tx) => {
        for (let j = i; j < Math.min(FAN_MESSAGES, i + 250); j++) {
          const requestId = `fan-${accountId}-${Math.floor(j / 2)}`;
          await enqueueMessage(tx, accountId, bulkPatientCreateMessage({ messageId: ids.next(), requestId, when: clock.now() }, { requestId, status: j % 2 === 0 ? 'processing' : 'completed' }));
        }
      });
    }
    return accountId;
  };
  /**
   * The service's loop (runtime.ts): passes of its batch, a short wait after one that had nothing to do,
   * until every receiver in `names` has the backlog. Returns each one's rate, messages a second.
   */
  const drive = async (accountId: string, names: readonly string[]) => {
    const endpointPauses = new Map<string, number>();
    const started = performance.timeOrigin + performance.now();
    const cpuBefore = process.cpuUsage();
    let passes = 0;
    const deadline = Date.now() + 600_000;
    while (names.some((name) => !doneAt.has(name)) && Date.now() < deadline) {
      const report = await deliverDueMessages(
        { storage: store, webhookSender: fanSender, clock, ids, random: Math.random, endpointPauses },
        { limit: PASS_LIMIT, accountId },
      );
      passes += 1;
      if (report.delivered + report.failed + report.parked === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const cpu = process.cpuUsage(cpuBefore);
    const elapsedMs = performance.timeOrigin + performance.now() - started;
    const rates = names.map((name) => (doneAt.has(name) ? Math.round((FAN_MESSAGES / (doneAt.get(name)! - started)) * 1000) : 0));
    return {
      rates,
      min: Math.min(...rates),
      mean: Math.round(rates.reduce((a, b) => a + b, 0) / rates.length),
      passes,
      elapsedMs: Math.round(elapsedMs),
      // Of one core: the share of the run this process computed (the rest it waited, for receivers or the CPU).
      cpuShare: Number(((cpu.user + cpu.system) / 1000 / elapsedMs).toFixed(2)),
    };
  };
  const healthyNames = (prefix: string) => Array.from({ length: 8 }, (_, i) => `${prefix}${i}`);
  try {
    const aloneUrls = await listen([{ name: 'alone', answerMs: HEALTHY_MS }]);
    const alone = await drive(await account([aloneUrls.alone!]), ['alone']);

    const eight = healthyNames('eight');
    const eightUrls = await listen(eight.map((name) => ({ name, answerMs: HEALTHY_MS })));
    const eightOnly = await drive(await account(eight.map((name) => eightUrls[name]!)), eight);

    const ten = healthyNames('healthy');
    const tenUrls = await listen([...ten.map((name) => ({ name, answerMs: HEALTHY_MS })), { name: 'failing', answerMs: 0, status: 500 }, { name: 'slow', answerMs: SLOW_MS }]);
    const tenRun = await drive(await account([tenUrls[ten[0]!]!, tenUrls.failing!, tenUrls.slow!, ...ten.slice(1).map((name) => tenUrls[name]!)]), ten);
    const counts = (await ask<{ counts: Record<string, number> }>({ counts: true })).counts;
    emit({
      measure: `webhook fan-out to 10 endpoints, one failing and one taking ${SLOW_MS} ms (${storageKind})`,
      messages: FAN_MESSAGES,
      endpointConcurrency: DEFAULT_ENDPOINT_CONCURRENCY,
      ceilingPerSecond: Math.round((DEFAULT_ENDPOINT_CONCURRENCY * 1000) / HEALTHY_MS),
      alone: { perSecond: alone.min, passes: alone.passes, elapsedMs: alone.elapsedMs, cpuShare: alone.cpuShare },
      healthy: { perSecond: { min: tenRun.min, mean: tenRun.mean }, passes: tenRun.passes, elapsedMs: tenRun.elapsedMs, cpuShare: tenRun.cpuShare },
      eightHealthyOnly: { perSecond: { min: eightOnly.min, mean: eightOnly.mean }, passes: eightOnly.passes, elapsedMs: eightOnly.elapsedMs, cpuShare: eightOnly.cpuShare },
      slowDelivered: counts.slow ?? 0,
      ratio: alone.min > 0 ? Number((tenRun.min / alone.min).toFixed(2)) : null,
      ratioToEightHealthyOnly: eightOnly.min > 0 ? Number((tenRun.min / eightOnly.min).toFixed(2)) : null,
      targetRatio: 0.8,
    });
  } finally {
    await fanSender.close();
    child.send({ close: true });
    await cleanup();
  }
}

for (const storageKind of ['memory', 'sqlite', ...(postgres ? (['postgres'] as const) : [])] as const) {
  if (STORAGES.includes(storageKind) && PARTS.includes('fan-out')) await endpointsFanOut(storageKind);
}
