import { ContainerModule } from 'inversify';
import { MedplumCcdaConverter } from '../ccda/medplum.ccda.js';
import { SandboxHieNetwork } from '../hie/sandbox.hie.js';
import { BundleRenderer } from '../render/bundle.renderer.js';
import { MiniSearchIndex } from '../search/minisearch.search-index.js';
import { TOKENS } from './tokens.js';

export interface DocumentsModuleOptions {
  /** The C-CDA documents the sandbox HIE network serves. Real networks plug in at TOKENS.hie instead. */
  sandboxDocumentsDir: string;
}

/** Binds the document half: the HIE network (sandbox), the C-CDA converter, the search index and the renderer. */
export function documentsModule(options: DocumentsModuleOptions): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind(TOKENS.hie).toConstantValue(new SandboxHieNetwork({ fixturesDir: options.sandboxDocumentsDir }));
    bind(TOKENS.ccda).toConstantValue(new MedplumCcdaConverter());
    // The index is in memory, one per process: it is rebuilt from storage on first use after a start.
    bind(TOKENS.search).toConstantValue(new MiniSearchIndex());
    bind(TOKENS.renderer).toConstantValue(new BundleRenderer());
  });
}
