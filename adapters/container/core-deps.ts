import type { Container } from 'inversify';
import type { CoreDeps } from '../../core/deps.js';
import { TOKENS } from './tokens.js';

/** Resolves every port the core needs from a container whose modules are loaded. Composition roots only. */
export async function resolveCoreDeps(container: Container): Promise<CoreDeps> {
  return {
    storage: await container.getAsync(TOKENS.storage),
    blob: await container.getAsync(TOKENS.blob),
    urlSigner: await container.getAsync(TOKENS.urlSigner),
    clock: await container.getAsync(TOKENS.clock),
    ids: await container.getAsync(TOKENS.ids),
    secrets: await container.getAsync(TOKENS.secrets),
    queue: await container.getAsync(TOKENS.queue),
    webhookSender: await container.getAsync(TOKENS.webhookSender),
    hie: await container.getAsync(TOKENS.hie),
    pharmacy: await container.getAsync(TOKENS.pharmacy),
    lab: await container.getAsync(TOKENS.lab),
    ccda: await container.getAsync(TOKENS.ccda),
    search: await container.getAsync(TOKENS.search),
    renderer: await container.getAsync(TOKENS.renderer),
    config: await container.getAsync(TOKENS.config),
  };
}
