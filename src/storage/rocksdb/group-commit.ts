/**
 * Group commit: every write staged during one turn of the event loop goes to
 * RocksDB as one atomic write batch (and, with `fsync` durability, one WAL
 * sync), then every stager is answered. Each staged unit is itself atomic,
 * since a batch is all-or-nothing, so coalescing never splits a transition.
 */
import type { RocksDatabase, WriteOp } from './database.ts';

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

export class GroupCommit {
  private ops: WriteOp[] = [];
  private waiters: Waiter[] = [];
  private scheduled = false;
  private failure: Error | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** Batches written and transitions carried, for benchmarks and metrics. */
  batches = 0;
  units = 0;

  constructor(
    private readonly db: RocksDatabase,
    private readonly sync: boolean,
    /** Called just before a flush, to add ops that summarize the group (counters, sequences). */
    private readonly beforeFlush: () => WriteOp[],
    /** Called once a flush is written, before anyone who staged in it is answered; not after a failure. */
    private readonly afterWrite: (ops: readonly WriteOp[]) => void = () => undefined,
  ) {}

  /** Whether a write failed: the store refuses every write from then on. */
  get failed(): boolean {
    return this.failure !== null;
  }

  /** Stage one atomic unit; resolves once it is durable at the configured level. */
  stage(ops: readonly WriteOp[]): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    for (const op of ops) this.ops.push(op);
    this.units++;
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.flushing = this.flush();
      });
    }
    return done;
  }

  /** Resolves once everything staged so far is written. */
  async drain(): Promise<void> {
    while (this.scheduled || this.ops.length > 0) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      await this.flushing;
    }
    await this.flushing;
  }

  private flush(): Promise<void> {
    const ops = this.ops;
    const waiters = this.waiters;
    this.ops = [];
    this.waiters = [];
    this.scheduled = false;
    try {
      const written = [...ops, ...this.beforeFlush()];
      this.db.write(written, this.sync);
      this.batches++;
      this.afterWrite(written);
      for (const waiter of waiters) waiter.resolve();
    } catch (error) {
      // Fail-stop: in-memory state may now be ahead of the disk, so refuse every later write.
      // Reopening the store rebuilds memory from what RocksDB holds.
      this.failure = error instanceof Error ? error : new Error(String(error));
      for (const waiter of waiters) waiter.reject(this.failure);
    }
    return Promise.resolve();
  }
}
