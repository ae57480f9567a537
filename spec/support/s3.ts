import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./s3rver-child.cjs', import.meta.url));

/** s3rver's built-in account: it checks request signatures against this key pair. */
const S3RVER_KEY = 'S3RVER';

export interface TestS3Server {
  /** `http://127.0.0.1:<port>`: pass as the endpoint, with path-style addressing. */
  endpoint: string;
  /** The buckets asked for, created empty. */
  buckets: string[];
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** Stops the server and removes its files. Idempotent. */
  stop(): Promise<void>;
}

/**
 * An S3-protocol server (@20minutes/s3rver) on 127.0.0.1, in a child process, storing under a fresh
 * temporary directory. Every test file that needs one starts its own.
 */
export async function startS3Server(buckets: string[] = ['carebridge-test']): Promise<TestS3Server> {
  const directory = mkdtempSync(join(tmpdir(), 'carebridge-s3-'));
  const child: ChildProcess = spawn(process.execPath, [CHILD, directory, ...buckets], { stdio: ['pipe', 'pipe', 'pipe'] });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => reject(new Error(`the S3 test server did not start within 20 s: ${errors}`)), 20_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { port: number }).port);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the S3 test server exited with ${code}: ${errors}`));
    });
  });
  let stopping: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    buckets,
    accessKeyId: S3RVER_KEY,
    secretAccessKey: S3RVER_KEY,
    region: 'us-east-1',
    stop() {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          await exited;
        }
        rmSync(directory, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}
