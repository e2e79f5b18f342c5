/**
 * Group commit: every write staged during one turn of the event loop goes to
 * RocksDB as one atomic write batch (and, with `fsync` durability, one WAL
 * sync), then every stager is answered. Each staged unit is itself atomic,
 * since a batch is all-or-nothing, so coalescing never splits a transition.
 *
 * When the store writes on its own thread, a batch is in flight while this
 * thread goes on staging: one batch at a time, so they land in order and the
 * summary ops (absolute counter values) of a later batch never land first.
 * What is staged meanwhile goes in the next batch, started as the last lands.
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
  /** The batch on the write thread, if one is; settles (never rejects) once it landed or failed and the next began. */
  private writing: Promise<void> | null = null;
  /** Callers of `between` waiting for the batch in flight: no new batch starts meanwhile. */
  private holds = 0;
  /** Batches written and transitions carried, for benchmarks and metrics. */
  batches = 0;
  units = 0;

  constructor(
    private readonly db: Pick<RocksDatabase, 'writeBatch'>,
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
        this.scheduled = false;
        this.flush();
      });
    }
    return done;
  }

  /** Resolves once everything staged so far is written (or failed). */
  async drain(): Promise<void> {
    while (this.scheduled || this.writing !== null || this.waiters.length > 0) {
      if (this.writing !== null) await this.writing;
      else await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Run `take` at a moment no batch is being written, and so none half-written: once the batch in
   * flight (if any) has landed, holding back the next. Batches are written on this thread, or
   * started from it, so nothing lands while `take` runs. What is staged meanwhile goes in the
   * next batch, written as soon as `take` returns: the writes' pause is at most one batch's write.
   */
  async between<T>(take: () => T): Promise<T> {
    this.holds++;
    try {
      while (this.writing !== null) await this.writing;
      return take();
    } finally {
      this.holds--;
      this.flush();
    }
  }

  private flush(): void {
    // A batch in flight starts the next when it lands. A unit may have no ops (an enqueue that
    // found its idempotency key taken): it is answered with the batch it was staged in.
    if (this.holds > 0 || this.writing !== null || this.waiters.length === 0) return;
    const ops = this.ops;
    const waiters = this.waiters;
    this.ops = [];
    this.waiters = [];
    if (this.failure !== null) {
      for (const waiter of waiters) waiter.reject(this.failure);
      return;
    }
    let pending: Promise<void> | void;
    try {
      // The summary joins the batch (its array is this flush's own now), rather than a copy of both.
      for (const op of this.beforeFlush()) ops.push(op);
      pending = this.db.writeBatch(ops, this.sync);
    } catch (error) {
      this.fail(error, waiters);
      return;
    }
    if (pending === undefined) {
      this.landed(ops, waiters);
      return;
    }
    this.writing = pending
      .then(
        () => this.landed(ops, waiters),
        (error: unknown) => this.fail(error, waiters),
      )
      .then(() => {
        this.writing = null;
        this.flush();
      });
  }

  private landed(written: readonly WriteOp[], waiters: readonly Waiter[]): void {
    this.batches++;
    try {
      this.afterWrite(written);
    } catch (error) {
      this.fail(error, waiters);
      return;
    }
    for (const waiter of waiters) waiter.resolve();
  }

  private fail(error: unknown, waiters: readonly Waiter[]): void {
    // Fail-stop: in-memory state may now be ahead of the disk, so refuse every later write.
    // Reopening the store rebuilds memory from what RocksDB holds.
    this.failure = error instanceof Error ? error : new Error(String(error));
    for (const waiter of waiters) waiter.reject(this.failure);
  }
}
