import { ContainerModule } from 'inversify';
import { MedplumCcdaConverter } from '../ccda/medplum.ccda.js';
import { PooledCcdaConverter } from '../ccda/pooled.ccda.js';
import { SandboxHieNetwork } from '../hie/sandbox.hie.js';
import { SandboxLabNetwork } from '../hie/sandbox.lab.js';
import { SandboxPharmacyNetwork } from '../hie/sandbox.pharmacy.js';
import { BundleRenderer } from '../render/bundle.renderer.js';
import { MiniSearchIndex } from '../search/minisearch.search-index.js';
import { TOKENS } from './tokens.js';

export interface DocumentsModuleOptions {
  /** The C-CDA documents the sandbox HIE network serves. Real networks plug in at TOKENS.hie instead. */
  sandboxDocumentsDir: string;
  /** Estimated bytes of per-patient search indexes kept in memory; the index's default (64 MB) when absent. */
  searchCacheBytes?: number;
  /**
   * Where C-CDA documents are converted: in a pool of worker threads (`maxThreads`, default the machine's
   * parallelism less one) or on the calling thread. Default in-process.
   */
  ccda?: { kind: 'in-process' } | { kind: 'pooled'; maxThreads?: number };
}

/**
 * Binds the document half: the HIE, pharmacy and laboratory networks (sandbox), the C-CDA converter, the search index and the renderer.
 * The pooled converter's threads are stopped by `unbindAllAsync()` (container shutdown); the deactivation is
 * async, so the sync `unbindAll()` refuses.
 */
export function documentsModule(options: DocumentsModuleOptions): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind(TOKENS.hie).toConstantValue(new SandboxHieNetwork({ fixturesDir: options.sandboxDocumentsDir }));
    // Network queries' pharmacy and laboratory sources; real networks plug in at these tokens.
    bind(TOKENS.pharmacy).toConstantValue(new SandboxPharmacyNetwork());
    bind(TOKENS.lab).toConstantValue(new SandboxLabNetwork());
    const ccda = options.ccda ?? { kind: 'in-process' };
    if (ccda.kind === 'pooled') {
      bind(TOKENS.ccda)
        .toDynamicValue(() => new PooledCcdaConverter(ccda.maxThreads === undefined ? {} : { maxThreads: ccda.maxThreads }))
        .inSingletonScope()
        .onDeactivation(async (converter) => {
          if (converter instanceof PooledCcdaConverter) await converter.close();
        });
    } else {
      bind(TOKENS.ccda).toConstantValue(new MedplumCcdaConverter());
    }
    // The index is in memory, one per process, within a budget: a patient's index is rebuilt from storage
    // on first use after a start or after the budget made room for others.
    bind(TOKENS.search).toConstantValue(new MiniSearchIndex(options.searchCacheBytes === undefined ? {} : { budgetBytes: options.searchCacheBytes }));
    bind(TOKENS.renderer).toConstantValue(new BundleRenderer());
  });
}
