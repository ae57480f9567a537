import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The C-CDA documents the sandbox HIE network serves: `SANDBOX_DOCUMENTS_DIR`, else the copies in the repo. */
export function sandboxDocumentsDir(): string {
  const configured = process.env.SANDBOX_DOCUMENTS_DIR;
  if (configured && existsSync(configured)) return configured;
  return fileURLToPath(new URL('../sandbox-data/ccda/', import.meta.url));
}
