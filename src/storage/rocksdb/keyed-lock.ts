/**
 * Per-key mutual exclusion inside one process: a read-check-write on a job
 * holds its job's lock until the write is durable, so two transitions of the
 * same job never interleave. Locks on different keys never wait on each other.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /**
   * Take every key's lock (in sorted order, so two callers taking overlapping
   * sets cannot deadlock) and return a function that releases them all.
   */
  async acquire(keys: readonly string[]): Promise<() => void> {
    const unique = [...new Set(keys)].sort();
    const releases: (() => void)[] = [];
    for (const key of unique) releases.push(await this.acquireOne(key));
    return () => {
      for (const release of releases) release();
    };
  }

  private async acquireOne(key: string): Promise<() => void> {
    const previous = this.tails.get(key);
    let release!: () => void;
    const current = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous === undefined ? current : previous.then(() => current);
    this.tails.set(key, tail);
    if (previous !== undefined) await previous;
    return () => {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}
