import type { IdsPort } from '../../core/ports/ids.port.js';

const MAX_SEED = 0xffff_ffff;
const MAX_COUNTER = 0xffff_ffff_ffff;

/**
 * Deterministic, UUID-shaped ids for tests and the sandbox: `00000000-0000-7000-8000-000000000001`,
 * `...002`, and so on. The version and variant nibbles are those of UUID v7, so validators that accept
 * the production ids accept these. `seed` fills the first group, so two generators used in one test
 * (say two hosts) never hand out the same id.
 */
export class SequentialIds implements IdsPort {
  private readonly prefix: string;
  private counter: number;

  constructor(options: { seed?: number; start?: number } = {}) {
    const seed = options.seed ?? 0;
    if (!Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) {
      throw new RangeError(`SequentialIds: seed must be an integer in [0, ${MAX_SEED}]`);
    }
    const start = options.start ?? 0;
    if (!Number.isInteger(start) || start < 0 || start > MAX_COUNTER) {
      throw new RangeError(`SequentialIds: start must be an integer in [0, ${MAX_COUNTER}]`);
    }
    this.prefix = seed.toString(16).padStart(8, '0');
    this.counter = start;
  }

  next(): string {
    if (this.counter >= MAX_COUNTER) throw new RangeError('SequentialIds: counter exhausted');
    this.counter += 1;
    return `${this.prefix}-0000-7000-8000-${this.counter.toString(16).padStart(12, '0')}`;
  }
}
