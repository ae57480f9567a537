/**
 * Webhook receivers for the fan-out benchmark, in a process of their own (forked by webhooks.bench.ts), as
 * receivers are other machines: their HTTP work does not share the measured process's event loop. Each
 * receiver is a server on 127.0.0.1 answering every request after a delay: 200, or 500 when failing.
 *
 * Messages from the parent: `{ listen: [{ name, answerMs, status }], expect }` -> `{ urls: { name: url } }`;
 * then `{ done: name, at }` once a receiver has acknowledged `expect` distinct messages (`at`: epoch ms);
 * `{ counts: true }` -> `{ counts: { name: distinct acknowledged } }`; `{ arrivals: [name] }` ->
 * `{ arrivals: { name: { messageId: epoch ms of its first acknowledgement } } }`; `{ close: true }` ends the process.
 */
import { createServer, type Server } from 'node:http';

interface Listen {
  name: string;
  answerMs: number;
  status: number;
}

type Command = { listen: Listen[]; expect: number } | { counts: true } | { arrivals: string[] } | { close: true };

const servers: Server[] = [];
/** Per receiver: message id -> when it was first acknowledged (epoch ms). */
const acknowledged = new Map<string, Map<string, number>>();
const send = (message: unknown) => process.send!(message);

process.on('message', async (command: Command) => {
  if ('listen' in command) {
    const urls: Record<string, string> = {};
    for (const { name, answerMs, status } of command.listen) {
      const seen = new Map<string, number>();
      acknowledged.set(name, seen);
      const server = createServer((req, res) => {
        const id = String(req.headers['webhook-id']);
        req.resume();
        req.on('end', () => {
          setTimeout(() => {
            if (res.destroyed) return;
            res.writeHead(status).end();
            if (status >= 300 || seen.has(id)) return;
            const at = performance.timeOrigin + performance.now();
            seen.set(id, at);
            if (seen.size === command.expect) send({ done: name, at });
          }, answerMs);
        });
      });
      server.keepAliveTimeout = 30_000;
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      urls[name] = `http://127.0.0.1:${(server.address() as { port: number }).port}/${name}`;
    }
    send({ urls });
  } else if ('arrivals' in command) {
    send({ arrivals: Object.fromEntries(command.arrivals.map((name) => [name, Object.fromEntries(acknowledged.get(name) ?? [])])) });
  } else if ('counts' in command) {
    send({ counts: Object.fromEntries([...acknowledged].map(([name, seen]) => [name, seen.size])) });
  } else {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
    process.exit(0);
  }
});
