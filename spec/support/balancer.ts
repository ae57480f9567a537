import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A round-robin load balancer on 127.0.0.1 for tests and benchmarks of several instances: each request
 * goes to the next backend of `backends` (change the list at will); a backend that refuses the connection
 * is skipped for the next. Request and answer bodies are buffered whole: fine for test-sized files.
 */
export interface Balancer {
  url: string;
  /** Base URLs (`http://127.0.0.1:<port>`) of the live backends. */
  backends: string[];
  close(): Promise<void>;
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const HOP_BY_HOP = ['host', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'content-encoding'];

export async function startBalancer(): Promise<Balancer> {
  const backends: string[] = [];
  let next = 0;
  const server: Server = createServer(async (req, res) => {
    const body = await readAll(req);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string' && !HOP_BY_HOP.includes(name)) headers[name] = value;
    }
    for (let tries = 0; tries < Math.max(1, backends.length); tries++) {
      const backend = backends[next++ % backends.length];
      if (!backend) break;
      try {
        const response = await fetch(`${backend}${req.url}`, { method: req.method!, headers, ...(body.length > 0 ? { body } : {}), redirect: 'manual' });
        const answer = Buffer.from(await response.arrayBuffer());
        const out: Record<string, string> = {};
        response.headers.forEach((value, name) => {
          if (!HOP_BY_HOP.includes(name)) out[name] = value;
        });
        res.writeHead(response.status, out).end(answer);
        return;
      } catch (error) {
        // Only a backend that never took the request is skipped: one that took it may have acted on it.
        if ((error as { cause?: { code?: string } }).cause?.code !== 'ECONNREFUSED') {
          res.writeHead(502).end(String(error));
          return;
        }
      }
    }
    res.writeHead(503).end('no live backend');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    backends,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
