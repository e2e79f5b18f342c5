/**
 * The one interface every system in the comparative benchmark implements
 * (bench/peers.ts drives it). Adding a system is one file under bench/peers/
 * exporting a {@link SystemFactory}, plus one line in bench/peers/registry.ts.
 *
 * Jobs are identified by a *tag* the harness chooses (a short string carried
 * in the job's payload); handlers get the tag back, so the harness counts
 * invocations per job without trusting any system's own bookkeeping.
 */

/** Durability tiers, never mixed in one comparison. */
export type TierId = 'process' | 'fsync';

export interface Tier {
  readonly id: TierId;
  readonly title: string;
  /** The PostgreSQL URL peers use in this tier (with `synchronous_commit=off` in the process tier). */
  readonly pgUrl: string;
  /** The Redis AOF settings applied for this tier (`CONFIG SET`), e.g. `appendonly yes, appendfsync everysec`. */
  readonly redis: { readonly appendonly: 'yes' | 'no'; readonly appendfsync: 'always' | 'everysec' | 'no' };
}

/** Where the shared services are and where stores may go. */
export interface Environment {
  readonly redis: { readonly host: string; readonly port: number };
  /** Root temp dir for embedded stores; each instance makes its own subdirectory. */
  readonly tmpRoot: string;
  /** Jobs a system that starts a fresh server process per measurement runs through it first (0: none). */
  readonly warmUpJobs: number;
}

/** Short lease / lock settings for the recovery workload; absent means the system's defaults. */
export interface RecoverySettings {
  /** How long a job may stay taken without a heartbeat before it is considered abandoned. */
  readonly leaseSeconds: number;
  /** How often the system checks for abandoned jobs (reaper, stalled checker, maintenance). */
  readonly checkSeconds: number;
  /**
   * Retry the reclaimed job at once instead of after the system's retry
   * backoff (Telha counts a reaped lease as a failed attempt and waits
   * `jobs.backoff_base_secs`, 10 s by default; the peers here retry at once by default).
   */
  readonly immediateRetry: boolean;
}

export interface OpenOptions {
  readonly recovery?: RecoverySettings;
}

/** Runs one job's work; resolves when the work is done (the system then completes the job). */
export type JobHandler = (tag: string) => Promise<void>;

export interface RunningWorkers {
  /**
   * Resolve once the system reports at least `n` jobs completed since the
   * workers started (by its own signal: an acknowledged call, an event, or
   * its table), or at `deadline` (a `performance.now()` time), with the count seen.
   */
  waitCompleted(n: number, deadline: number): Promise<number>;
  /** Stop taking jobs and release every connection. Jobs still held are abandoned. */
  close(): Promise<void>;
}

/** A peer's note for the no-prefetch column: a free slot fetches its next job itself, so c=1 already is that. */
export const NO_PREFETCH_OF_ITS_OWN = 'fetches for a free slot only: same run as c=1';

export interface WorkerOptions {
  readonly prefetch?: false;
}

/** One system under test, in one tier, with one set of settings. */
export interface System {
  /** Stable id, e.g. `pg-boss-tuned`; used in JSON and to rebuild the system in a child process. */
  readonly id: string;
  /** Row label in the tables. */
  readonly label: string;
  readonly isTelha: boolean;
  /** Every setting that differs from the system's defaults, and why (printed under the tables). */
  readonly settings: readonly string[];
  /** Why a workload cannot run on this system, by workload; absent means it runs. */
  readonly notApplicable: {
    readonly retainedCompleted?: string;
    readonly recovery?: string;
    /** Why `startWorkers(…, { prefetch: false })` would measure nothing its c=1 drain does not. */
    readonly noPrefetch?: string;
  };
  /** How {@link fillCompleted} loads its rows (printed with the results). */
  readonly fillMethod: string;

  /** Fresh state (schema dropped and recreated, keys deleted, new store directory) and connections. */
  open(options?: OpenOptions): Promise<void>;
  /** Close connections and delete the state `open` made. */
  close(): Promise<void>;

  /** Enqueue these jobs with the system's own bulk API, in one call per chunk the harness passes. */
  enqueueBulk(tags: readonly string[], delayMs?: number): Promise<void>;
  /** Enqueue one job with the system's single-job API. */
  enqueueOne(tag: string): Promise<void>;
  /**
   * Start `concurrency` concurrent handlers; `prefetch: false` holds no job beyond them, so each
   * next job waits for a free slot's round trip (a system with no prefetch of its own ignores it).
   */
  startWorkers(concurrency: number, handler: JobHandler, options?: WorkerOptions): Promise<RunningWorkers>;
  /** Leave `n` completed jobs retained in the store (the fastest honest way, see {@link fillMethod}). */
  fillCompleted(n: number, progress: (done: number) => void): Promise<void>;

  /**
   * Strings a child process needs to attach a worker to this same instance
   * (server address, schema, ...), passed to the factory's `attach`.
   */
  attachInfo(): Record<string, string>;
  /**
   * For a store only one process can open (embedded RocksDB): give it up
   * before the recovery child opens it, and take it back after the child died.
   */
  readonly handOver?: { release(): Promise<void>; reacquire(): Promise<void> };
}

export interface SystemFactory {
  /** Build the system for a tier (fresh state comes with `open`). */
  create(tier: Tier, env: Environment): System;
  /** Build a handle on an instance another process opened, from its {@link System.attachInfo}. */
  attach(tier: Tier, env: Environment, info: Record<string, string>, options: OpenOptions): Promise<System>;
}

/**
 * Counts completions as a system reports them one by one, and lets the
 * harness wait for a count without polling.
 */
export class CompletionCounter {
  private done = 0;
  private waiters: { n: number; resolve: (count: number) => void }[] = [];

  get count(): number {
    return this.done;
  }

  add(k = 1): void {
    this.done += k;
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => w.n <= this.done);
    this.waiters = this.waiters.filter((w) => w.n > this.done);
    for (const w of ready) w.resolve(this.done);
  }

  wait(n: number, deadline: number): Promise<number> {
    if (this.done >= n) return Promise.resolve(this.done);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter = {
        n,
        resolve: (count: number) => {
          clearTimeout(timer);
          resolve(count);
        },
      };
      // setTimeout fires at once for delays past 2^31 ms, so an unbounded wait gets no timer at all.
      if (Number.isFinite(deadline)) {
        timer = setTimeout(
          () => {
            this.waiters = this.waiters.filter((w) => w !== waiter);
            resolve(this.done);
          },
          Math.max(0, deadline - performance.now()),
        );
      }
      this.waiters.push(waiter);
    });
  }
}

/**
 * For systems that complete a job after its handler returns without waiting
 * for the write and report nothing (pg-boss, graphile-worker): wait until
 * `handled` handlers have returned, then poll `inFlight` (jobs the system
 * still shows as taken, from its own table) down to zero. Returns how many
 * jobs are known completed by the deadline.
 */
export async function handledThenSettled(
  handled: CompletionCounter,
  n: number,
  deadline: number,
  inFlight: () => Promise<number>,
  intervalMs = 10,
): Promise<number> {
  const seen = await handled.wait(n, deadline);
  for (;;) {
    const taken = await inFlight();
    if (taken === 0 || performance.now() >= deadline) return Math.max(0, seen - taken);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
