import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A real webhook receiver on 127.0.0.1 for tests. Each request is answered according to a behaviour: the
 * next one queued with `enqueue(...)`, else the default set with `setDefault(...)` (200 at first). It
 * records every request (raw body, headers) and what it answered, and can go down (port closed: connection
 * refused) and come back up on the same port.
 */

export type ReceiverBehaviour =
  /** 2xx with an optional body; `pong` answers `{"pong": <the ping value of the request>}`. */
  | { kind: 'ok'; status?: number; body?: string; pong?: boolean }
  /** Any status with optional headers (e.g. 500, 410, 429 with Retry-After). */
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: string }
  | { kind: 'redirect'; status?: 301 | 302 | 303 | 307 | 308; location: string }
  /** Waits `delayMs` before answering as `then` (200 when absent): a receiver that is too slow. */
  | { kind: 'slow'; delayMs: number; then?: ReceiverBehaviour }
  /** Closes the connection without answering. */
  | { kind: 'hang-up' }
  /**
   * Never answers: the request stays open until the client gives up and closes it. A receiver slower than
   * any timeout, with no race between its answer and the client's timeout (a test of what a timeout does
   * must not depend on which of two timers fires first on a busy machine).
   */
  | { kind: 'silent' };

/** Chooses a behaviour from what was received. */
export type BehaviourRule = (request: { path: string; headers: IncomingHttpHeaders; body: string }) => ReceiverBehaviour;

export interface RecordedRequest {
  index: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received (UTF-8). */
  body: string;
  behaviour: ReceiverBehaviour;
  /** Status written, once answered; absent when the client had gone (timeout) or the behaviour hung up. */
  answeredStatus?: number;
}

export interface Receiver {
  /** Base URL, e.g. `http://127.0.0.1:40123`. Stays the same across down/up. */
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Behaviours for the next requests, in order; then the default applies. */
  enqueue(...behaviours: ReceiverBehaviour[]): void;
  /** What requests get once the queue is empty: a fixed behaviour, or one chosen from the request (e.g. by `webhook-id`). */
  setDefault(behaviour: ReceiverBehaviour | BehaviourRule): void;
  /** Stops listening and drops open connections: new requests are refused. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  readonly isUp: boolean;
  /** Closes for good, cancelling pending slow answers. */
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function pongBody(requestBody: string): string {
  try {
    return JSON.stringify({ pong: (JSON.parse(requestBody) as { ping?: unknown }).ping });
  } catch {
    return JSON.stringify({ pong: null });
  }
}

export async function startReceiver(options: { port?: number } = {}): Promise<Receiver> {
  const queued: ReceiverBehaviour[] = [];
  let fallback: ReceiverBehaviour | BehaviourRule = { kind: 'ok' };
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let server: Server | undefined;
  let port = options.port ?? 0;
  let closed = false;

  const answer = (res: ServerResponse, record: RecordedRequest, behaviour: ReceiverBehaviour): void => {
    if (res.destroyed || res.socket?.destroyed) return;
    const finish = (status: number, headers: Record<string, string>, body: string) => {
      res.on('finish', () => {
        record.answeredStatus = status;
      });
      res.writeHead(status, { 'content-length': String(Buffer.byteLength(body)), ...headers });
      res.end(body);
    };
    switch (behaviour.kind) {
      case 'ok':
        finish(behaviour.status ?? 200, { 'content-type': 'application/json' }, behaviour.pong ? pongBody(record.body) : (behaviour.body ?? ''));
        return;
      case 'status':
        finish(behaviour.status, behaviour.headers ?? {}, behaviour.body ?? '');
        return;
      case 'redirect':
        finish(behaviour.status ?? 302, { location: behaviour.location }, '');
        return;
      case 'slow': {
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer(res, record, behaviour.then ?? { kind: 'ok' });
        }, behaviour.delayMs);
        timers.add(timer);
        return;
      }
      case 'hang-up':
        res.socket?.destroy();
        return;
      case 'silent':
        return;
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    const path = req.url ?? '';
    const behaviour = queued.shift() ?? (typeof fallback === 'function' ? fallback({ path, headers: req.headers, body }) : fallback);
    const record: RecordedRequest = {
      index: requests.length,
      method: req.method ?? '',
      path,
      headers: req.headers,
      body,
      behaviour,
    };
    requests.push(record);
    answer(res, record, behaviour);
  };

  const listen = async (): Promise<void> => {
    const created = createServer((req, res) => {
      handle(req, res).catch(() => res.destroy());
    });
    created.keepAliveTimeout = 5_000;
    created.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      created.once('error', reject);
      created.listen(port, '127.0.0.1', () => {
        created.off('error', reject);
        resolve();
      });
    });
    port = (created.address() as AddressInfo).port;
    server = created;
  };

  const stop = async (): Promise<void> => {
    const current = server;
    server = undefined;
    if (!current) return;
    const closing = new Promise<void>((resolve) => current.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    current.closeAllConnections();
    await closing;
  };

  await listen();
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    port,
    requests,
    enqueue: (...behaviours) => {
      queued.push(...behaviours);
    },
    setDefault: (behaviour) => {
      fallback = behaviour;
    },
    down: stop,
    up: async () => {
      if (closed) throw new Error('receiver is closed');
      if (!server) await listen();
    },
    get isUp() {
      return server !== undefined;
    },
    close: async () => {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await stop();
    },
  };
}
