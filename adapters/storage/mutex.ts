/**
 * A FIFO async mutex: `run` waits for every earlier holder to finish, so the work of two callers never
 * interleaves. Used to serialise transactions where the engine allows one writer (memory, SQLite).
 */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  async run<T>(work: () => Promise<T>): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    try {
      return await work();
    } finally {
      release();
    }
  }
}
