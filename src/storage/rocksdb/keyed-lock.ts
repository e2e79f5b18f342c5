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
    if (keys.every((key) => !this.tails.has(key))) return this.takeFree(keys);
    const unique = [...new Set(keys)].sort();
    const releases: (() => void)[] = [];
    for (const key of unique) releases.push(await this.acquireOne(key));
    return () => {
      for (const release of releases) release();
    };
  }

  /**
   * Every key is free: take them all at once. The common case (a claim's or a
   * batch's jobs, locked by no one else) then costs no await per key.
   */
  private takeFree(keys: readonly string[]): () => void {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    for (const key of keys) this.tails.set(key, held);
    return () => {
      release();
      for (const key of keys) if (this.tails.get(key) === held) this.tails.delete(key);
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
