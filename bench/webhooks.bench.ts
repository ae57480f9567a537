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
import { DEFAULT_ENDPOINT_CONCURRENCY } from '../core/webhooks/delivery.js';
import { deliverDueMessages } from '../core/webhooks/dispatcher.js';
import { enqueueMessage } from '../core/webhooks/enqueue.js';
import { emit } from './support.js';
import { createPgSchema, probePostgres } from '../spec/support/pg.js';
import { bulkPatientCreateMessage } from '../core/webhooks/envelope.js';
import { createRuntime, type RuntimeOptions } from '../runtime/runtime.js';

const MESSAGES = Number(process.env.BENCH_WEBHOOKS ?? 5_000);
/** Which storages the drains and the failing receiver run on: `memory,sqlite,postgres` by default. */
const STORAGES = (process.env.BENCH_WEBHOOK_STORAGES ?? 'memory,sqlite,postgres').split(',');
const ACCOUNTS = Number(process.env.BENCH_WEBHOOK_ACCOUNTS ?? 8);
/** Which measures run: `delivery,drain,fail-first,fan-out,fan-out-live` by default (all). */
const PARTS = (process.env.BENCH_WEBHOOK_PARTS ?? 'delivery,drain,fail-first,fan-out,fan-out-live').split(',');

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
 * Ten endpoints of one account (every message fans out to all of them): one answers 500 to every request,
 * one takes 2 s, eight take 50 ms, delivered by the service's own runtime (its background loop, as
 * `npm start` runs it) on a fresh storage of its own. Two measures:
 *
 * `fan-out`: a backlog of messages already stored. How fast each of the eight healthy endpoints receives its
 * copy, against a single healthy endpoint (50 ms) alone, in the same run. Target: the healthy endpoints
 * within 20% of the one alone. Also measured, to tell the cost of the failing and slow endpoints from that
 * of sending eight times the messages: the eight healthy endpoints without the other two.
 *
 * `fan-out-live`: messages created one after the other at a steady rate while delivery runs (as an API
 * in use makes them), in streams of two. The healthy endpoints' delay from creation to acknowledgement,
 * against a single healthy endpoint alone and against the eight healthy endpoints without the other two: a
 * slow or failing endpoint must delay no other, so the last two should be alike. The loop polls every
 * 20 ms here, standing in for the wake an API write gives it.
 *
 * The receivers run in a process of their own (fan-out-receivers.ts), as receivers are other machines.
 */
const FAN_HEALTHY_MS = 50;
const FAN_SLOW_MS = 2_000;
/** Epoch ms on the clock the receivers' process reports with (not `Date.now()`, which the system may step). */
const epochMs = () => performance.timeOrigin + performance.now();

/** The receivers' process: `listen` starts named receivers and answers their URLs; `doneAt` fills as each has all it expects. */
function fanOutReceivers() {
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
  return {
    doneAt,
    listen: async (receivers: { name: string; answerMs: number; status?: number }[], expect: number) =>
      (await ask<{ urls: Record<string, string> }>({ listen: receivers.map((r) => ({ status: 200, ...r })), expect })).urls,
    counts: async () => (await ask<{ counts: Record<string, number> }>({ counts: true })).counts,
    /** When each receiver first acknowledged each message id (epoch ms). */
    arrivals: async (names: readonly string[]) => (await ask<{ arrivals: Record<string, Record<string, number>> }>({ arrivals: names })).arrivals,
    close: () => child.send({ close: true }),
  };
}

/**
 * The service's runtime on a fresh storage of `storageKind`, with an account whose default endpoint is the
 * first URL and the others extra endpoints. Its background is not started. `claims` counts the outbox claims.
 */
async function fanOutService(storageKind: 'memory' | 'sqlite' | 'postgres', urls: readonly string[], pollMs?: number) {
  let dataDir: string | undefined;
  let schema: Awaited<ReturnType<typeof createPgSchema>> | undefined;
  let profile: RuntimeOptions['profile'];
  if (storageKind === 'memory') profile = { kind: 'memory' };
  else {
    dataDir = await mkdtemp(join(tmpdir(), 'carebridge-fan-out-bench-'));
    if (storageKind === 'postgres') schema = await createPgSchema('webhookfanout');
    profile = { kind: 'sql', dataDir, ...(schema ? { database: schema.url, databaseSchema: schema.schema } : {}) };
  }
  const runtime = await createRuntime({ profile, publicUrl: 'http://carebridge.bench', webhooks: { allowPrivate: true }, ...(pollMs === undefined ? {} : { pollMs }) });
  const { storage } = runtime.deps;
  let claims = 0;
  const claim = storage.outbox.claim.bind(storage.outbox);
  storage.outbox.claim = (now, limit, lease) => {
    claims += 1;
    return claim(now, limit, lease);
  };
  const { accountId } = await runtime.createAccount('fan-out');
  let enqueued = 0;
  const now = () => clock.now().toISOString();
  await storage.webhookSettings.put({ accountId, webhookUrl: urls[0]!, webhookKey: 'bench-webhook-key-bench-webhook-key', webhookEnabled: true, webhookStatusDetail: null, updatedAt: now() });
  for (const url of urls.slice(1)) {
    await storage.webhookEndpoints.insert({
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
  }
  return {
    runtime,
    claims: () => claims,
    /** Stores `count` messages in streams of two (an import's processing and completed), `perTransaction` at a time. */
    async enqueue(count: number, perTransaction = 250): Promise<{ id: string; at: number }[]> {
      const stored: { id: string; at: number }[] = [];
      for (let i = 0; i < count; i += perTransaction) {
        await storage.transaction(async (tx) => {
          for (let j = i; j < Math.min(count, i + perTransaction); j++) {
            const n = enqueued++;
            const requestId = `fan-${accountId}-${Math.floor(n / 2)}`;
            const message = bulkPatientCreateMessage({ messageId: ids.next(), requestId, when: clock.now() }, { requestId, status: n % 2 === 0 ? 'processing' : 'completed' });
            await enqueueMessage(tx, accountId, message);
            stored.push({ id: message.meta.messageId, at: epochMs() });
          }
        });
      }
      return stored;
    },
    async close() {
      await runtime.close();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
      await schema?.drop();
    },
  };
}

const healthyNames = (prefix: string) => Array.from({ length: 8 }, (_, i) => `${prefix}${i}`);
/** The ten endpoints' receivers: `healthy0` first (the default endpoint), the failing and the slow one next. */
const tenReceivers = (ten: readonly string[]) => [
  { name: ten[0]!, answerMs: FAN_HEALTHY_MS },
  { name: 'failing', answerMs: 0, status: 500 },
  { name: 'slow', answerMs: FAN_SLOW_MS },
  ...ten.slice(1).map((name) => ({ name, answerMs: FAN_HEALTHY_MS })),
];

async function endpointsFanOut(storageKind: 'memory' | 'sqlite' | 'postgres'): Promise<void> {
  const FAN_MESSAGES = Number(process.env.BENCH_WEBHOOK_FANOUT ?? 2_000);
  const receivers = fanOutReceivers();
  /** Stores the backlog, starts the background and waits until every receiver in `names` has it all; each one's rate, messages a second. */
  const drive = async (urls: string[], names: readonly string[]) => {
    const service = await fanOutService(storageKind, urls);
    try {
      await service.enqueue(FAN_MESSAGES);
      const claimsBefore = service.claims();
      const cpuBefore = process.cpuUsage();
      const started = epochMs();
      service.runtime.background.start();
      const deadline = started + 600_000;
      while (names.some((name) => !receivers.doneAt.has(name)) && epochMs() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      const elapsedMs = epochMs() - started;
      const cpu = process.cpuUsage(cpuBefore);
      const rates = names.map((name) => (receivers.doneAt.has(name) ? Math.round((FAN_MESSAGES / (receivers.doneAt.get(name)! - started)) * 1000) : 0));
      return {
        min: Math.min(...rates),
        mean: Math.round(rates.reduce((a, b) => a + b, 0) / rates.length),
        claims: service.claims() - claimsBefore,
        elapsedMs,
        // Of one core: the share of the run this process computed (the rest it waited, for receivers or the CPU).
        cpuShare: Number(((cpu.user + cpu.system) / 1000 / elapsedMs).toFixed(2)),
      };
    } finally {
      await service.close();
    }
  };
  try {
    const aloneUrls = await receivers.listen([{ name: 'alone', answerMs: FAN_HEALTHY_MS }], FAN_MESSAGES);
    const alone = await drive([aloneUrls.alone!], ['alone']);

    const eight = healthyNames('eight');
    const eightUrls = await receivers.listen(eight.map((name) => ({ name, answerMs: FAN_HEALTHY_MS })), FAN_MESSAGES);
    const eightOnly = await drive(eight.map((name) => eightUrls[name]!), eight);

    const ten = healthyNames('healthy');
    const tenUrls = await receivers.listen(tenReceivers(ten), FAN_MESSAGES);
    const tenRun = await drive(tenReceivers(ten).map(({ name }) => tenUrls[name]!), ten);
    const counts = await receivers.counts();
    emit({
      measure: `webhook fan-out to 10 endpoints, one failing and one taking ${FAN_SLOW_MS} ms (${storageKind})`,
      messages: FAN_MESSAGES,
      endpointConcurrency: DEFAULT_ENDPOINT_CONCURRENCY,
      ceilingPerSecond: Math.round((DEFAULT_ENDPOINT_CONCURRENCY * 1000) / FAN_HEALTHY_MS),
      alone: { perSecond: alone.min, claims: alone.claims, elapsedMs: alone.elapsedMs, cpuShare: alone.cpuShare },
      healthy: { perSecond: { min: tenRun.min, mean: tenRun.mean }, claims: tenRun.claims, elapsedMs: tenRun.elapsedMs, cpuShare: tenRun.cpuShare },
      eightHealthyOnly: { perSecond: { min: eightOnly.min, mean: eightOnly.mean }, claims: eightOnly.claims, elapsedMs: eightOnly.elapsedMs, cpuShare: eightOnly.cpuShare },
      slowDelivered: counts.slow ?? 0,
      ratio: alone.min > 0 ? Number((tenRun.min / alone.min).toFixed(2)) : null,
      ratioToEightHealthyOnly: eightOnly.min > 0 ? Number((tenRun.min / eightOnly.min).toFixed(2)) : null,
      targetRatio: 0.8,
    });
  } finally {
    receivers.close();
  }
}

async function endpointsFanOutLive(storageKind: 'memory' | 'sqlite' | 'postgres'): Promise<void> {
  const RATE = Number(process.env.BENCH_WEBHOOK_LIVE_RATE ?? 40);
  const SECONDS = Number(process.env.BENCH_WEBHOOK_LIVE_SECONDS ?? 10);
  const total = RATE * SECONDS;
  const receivers = fanOutReceivers();
  /** Creates `total` messages at `RATE` a second while the background delivers; each healthy receiver's delays, creation to acknowledgement. */
  const drive = async (urls: string[], names: readonly string[]) => {
    const service = await fanOutService(storageKind, urls, 20);
    try {
      service.runtime.background.start();
      const created: { id: string; at: number }[] = [];
      const started = epochMs();
      for (let i = 0; i < total; i += 2) {
        // A stream of two at a time, at the rate's pace.
        created.push(...(await service.enqueue(2)));
        const wait = started + ((i + 2) * 1000) / RATE - epochMs();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      const deadline = Date.now() + 120_000;
      while (names.some((name) => !receivers.doneAt.has(name)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      const arrivals = await receivers.arrivals(names);
      const delays = names.flatMap((name) => created.map(({ id, at }) => (arrivals[name]?.[id] ?? Number.POSITIVE_INFINITY) - at)).sort((a, b) => a - b);
      const quantile = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))]!;
      const rounded = (ms: number) => (Number.isFinite(ms) ? Math.round(ms) : null);
      return { p50: rounded(quantile(0.5)), p90: rounded(quantile(0.9)), p99: rounded(quantile(0.99)), max: rounded(delays.at(-1)!) };
    } finally {
      await service.close();
    }
  };
  try {
    const aloneUrls = await receivers.listen([{ name: 'live-alone', answerMs: FAN_HEALTHY_MS }], total);
    const alone = await drive([aloneUrls['live-alone']!], ['live-alone']);
    const eight = healthyNames('live-eight');
    const eightUrls = await receivers.listen(eight.map((name) => ({ name, answerMs: FAN_HEALTHY_MS })), total);
    const eightOnly = await drive(eight.map((name) => eightUrls[name]!), eight);
    const ten = healthyNames('live-healthy');
    const tenUrls = await receivers.listen(tenReceivers(ten), total);
    const tenRun = await drive(tenReceivers(ten).map(({ name }) => tenUrls[name]!), ten);
    const ratio = (a: number | null, b: number | null) => (a && b ? Number((a / b).toFixed(2)) : null);
    emit({
      measure: `webhook fan-out while messages are created, 10 endpoints, one failing and one taking ${FAN_SLOW_MS} ms (${storageKind})`,
      messages: total,
      perSecond: RATE,
      aloneDelayMs: alone,
      healthyDelayMs: tenRun,
      eightHealthyOnlyDelayMs: eightOnly,
      p99Ratio: ratio(tenRun.p99, alone.p99),
      p99RatioToEightHealthyOnly: ratio(tenRun.p99, eightOnly.p99),
    });
  } finally {
    receivers.close();
  }
}

for (const storageKind of ['memory', 'sqlite', ...(postgres ? (['postgres'] as const) : [])] as const) {
  if (STORAGES.includes(storageKind) && PARTS.includes('fan-out')) await endpointsFanOut(storageKind);
  if (STORAGES.includes(storageKind) && PARTS.includes('fan-out-live')) await endpointsFanOutLive(storageKind);
}
