import type { Container } from 'inversify';
import type { CoreDeps } from '../../core/deps.js';
import { PORT_NAMES, TOKENS, type CorePorts, type Ports } from './tokens.js';
import { withStamps } from '../search/stamped.search-index.js';

/** Resolves every port the core needs from a container whose modules are loaded. Composition roots only. */
export async function resolveCoreDeps(container: Container): Promise<CoreDeps> {
  const ports: Partial<CorePorts> = {};
  for (const name of PORT_NAMES) Object.assign(ports, { [name]: await container.getAsync<unknown>(TOKENS[name] as symbol) });
  return { ...(ports as CorePorts), config: await container.getAsync(TOKENS.config) };
}

/**
 * Binds the given implementations in place of the modules' adapters, before anything is resolved, so an
 * adapter replaced is never made (no converter threads started for a converter someone else provides).
 * Whoever passes an implementation closes it; the container closes only what it made.
 */
export async function replacePorts(container: Container, given: Partial<Ports>): Promise<void> {
  for (const name of PORT_NAMES) {
    const supplied = given[name];
    if (supplied === undefined) continue;
    // The core reads stamps from every index: one that keeps none gets them kept beside it.
    const implementation = name === 'search' ? withStamps(supplied as Ports['search']) : supplied;
    (await container.rebindAsync(TOKENS[name] as never)).toConstantValue(implementation as never);
  }
}
