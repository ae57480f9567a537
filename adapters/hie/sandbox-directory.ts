import { createHash } from 'node:crypto';

/** The `network` of every directory entry of the sandbox networks: none of them is a production network. */
export const SANDBOX_NETWORK = 'SANDBOX';

/** A stable OID under the UUID arc (2.25) for an organization the sandbox names without one. */
export function sandboxOid(name: string): string {
  return `2.25.${BigInt(`0x${createHash('sha256').update(`sandbox-organization:${name}`, 'utf8').digest('hex').slice(0, 24)}`).toString()}`;
}

/** A hex digest of `text`, from which the sandbox networks draw their deterministic choices. */
export function sandboxHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * A stream of deterministic numbers in [0, 1) drawn from a seed: the same seed gives the same sequence on
 * every run, host and database.
 */
export function seededRandom(seed: string): () => number {
  let counter = 0;
  return () => {
    const hex = sandboxHash(`${seed}:${counter++}`).slice(0, 13);
    return parseInt(hex, 16) / 2 ** 52;
  };
}
