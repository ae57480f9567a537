import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../adapters/package-root.js';

/** The C-CDA documents the sandbox HIE network serves: `SANDBOX_DOCUMENTS_DIR`, else the copies in the repo. */
export function sandboxDocumentsDir(): string {
  const configured = process.env.SANDBOX_DOCUMENTS_DIR;
  if (configured && existsSync(configured)) return configured;
  return join(packageRoot(), 'sandbox-data', 'ccda');
}
