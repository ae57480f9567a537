import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { Container } from 'inversify';
import { describe, expect, test } from 'vitest';
import { isCoreError } from '../../core/errors.js';
import { MedplumCcdaConverter } from '../ccda/medplum.ccda.js';
import { PooledCcdaConverter } from '../ccda/pooled.ccda.js';
import { sandboxDocumentsDir } from '../../runtime/sandbox-documents.js';
import { documentsModule } from './documents.module.js';
import { TOKENS } from './tokens.js';

const fixture = readFileSync(new URL('../../sandbox-data/ccda/ccd-2.xml', import.meta.url), 'utf8');

describe('documentsModule', () => {
  test('converts in process unless asked for a pool', () => {
    const container = new Container();
    container.load(documentsModule({ sandboxDocumentsDir: sandboxDocumentsDir() }));
    expect(container.get(TOKENS.ccda)).toBeInstanceOf(MedplumCcdaConverter);
  });

  test('a pooled converter of the given size, one per container, whose threads stop with the container', async () => {
    const container = new Container();
    container.load(documentsModule({ sandboxDocumentsDir: sandboxDocumentsDir(), ccda: { kind: 'pooled', maxThreads: 1 } }));
    const converter = container.get(TOKENS.ccda);
    expect(converter).toBeInstanceOf(PooledCcdaConverter);
    expect((converter as PooledCcdaConverter).maxThreads).toBe(1);
    expect(container.get(TOKENS.ccda)).toBe(converter);
    expect((await converter.convert(fixture)).resourceType).toBe('Bundle');

    await container.unbindAllAsync();
    const error = await converter.convert(fixture).catch((caught: unknown) => caught);
    expect(isCoreError(error) && error.code).toBe('INTERNAL');
  });
});
