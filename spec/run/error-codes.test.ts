import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { ERROR_CODES } from '../../core/errors.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('the error code table', () => {
  test('every code in it is answered somewhere (no dead codes for clients to branch on), and the hosts answer no code outside it', () => {
    const tables = [join('core', 'errors.ts'), join('contract', 'errors.ts')];
    const files = ['core', 'contract', 'adapters', 'runtime', 'http', 'hosts'].flatMap(sources).filter((path) => !tables.includes(relative(ROOT, join(ROOT, path))));
    const text = files.map((path) => readFileSync(join(ROOT, path), 'utf8')).join('\n');
    const unused = Object.keys(ERROR_CODES).filter((code) => !text.includes(`'${code}'`));
    expect(unused).toEqual([]);
    // FHIR codings (the C-CDA adapter's `code: 'UNK'`, a null flavor) are clinical codes, not answers.
    const answerText = files
      .filter((path) => !relative(ROOT, join(ROOT, path)).startsWith(join('adapters', 'ccda')))
      .map((path) => readFileSync(join(ROOT, path), 'utf8'))
      .join('\n');
    const answered = [...answerText.matchAll(/code: '([A-Z][A-Z0-9_]+)'/g)].map((match) => match[1]!);
    expect(answered.filter((code) => !(code in ERROR_CODES))).toEqual([]);
  });
});
