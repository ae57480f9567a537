import { ContainerModule } from 'inversify';
import { MedplumCcdaConverter } from '../ccda/medplum.ccda.js';
import { SandboxHieNetwork } from '../hie/sandbox.hie.js';
import { BundleRenderer } from '../render/bundle.renderer.js';
import { MiniSearchIndex } from '../search/minisearch.search-index.js';
import { TOKENS } from './tokens.js';

export interface DocumentsModuleOptions {
  /** The C-CDA documents the sandbox HIE network serves. Real networks plug in at TOKENS.hie instead. */
  sandboxDocumentsDir: string;
  /** Estimated bytes of per-patient search indexes kept in memory; the index's default (64 MB) when absent. */
  searchCacheBytes?: number;
}

/** Binds the document half: the HIE network (sandbox), the C-CDA converter, the search index and the renderer. */
export function documentsModule(options: DocumentsModuleOptions): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind(TOKENS.hie).toConstantValue(new SandboxHieNetwork({ fixturesDir: options.sandboxDocumentsDir }));
    bind(TOKENS.ccda).toConstantValue(new MedplumCcdaConverter());
    // The index is in memory, one per process, within a budget: a patient's index is rebuilt from storage
    // on first use after a start or after the budget made room for others.
    bind(TOKENS.search).toConstantValue(new MiniSearchIndex(options.searchCacheBytes === undefined ? {} : { budgetBytes: options.searchCacheBytes }));
    bind(TOKENS.renderer).toConstantValue(new BundleRenderer());
  });
}
