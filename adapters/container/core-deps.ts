import type { Container } from 'inversify';
import type { CoreDeps } from '../../core/deps.js';
import { PORT_NAMES, TOKENS, type Ports } from './tokens.js';

/** Resolves every port the core needs from a container whose modules are loaded. Composition roots only. */
export async function resolveCoreDeps(container: Container): Promise<CoreDeps> {
  const ports: Partial<Ports> = {};
  for (const name of PORT_NAMES) Object.assign(ports, { [name]: await container.getAsync<unknown>(TOKENS[name] as symbol) });
  return { ...(ports as Ports), config: await container.getAsync(TOKENS.config) };
}

/**
 * Binds the given implementations in place of the modules' adapters, before anything is resolved, so an
 * adapter replaced is never made (no converter threads started for a converter someone else provides).
 * Whoever passes an implementation closes it; the container closes only what it made.
 */
export async function replacePorts(container: Container, given: Partial<Ports>): Promise<void> {
  for (const name of PORT_NAMES) {
    const implementation = given[name];
    if (implementation === undefined) continue;
    (await container.rebindAsync(TOKENS[name] as never)).toConstantValue(implementation as never);
  }
}
