/**
 * The worker loop in the engine's own process: the same runner as the SDK's
 * `Worker` (concurrency, prefetch, heartbeats, aborts on lease loss, graceful
 * close), leasing from and settling to a `Queue` directly, with no server in
 * between. The session is the Work stream's server side without the wire:
 * the lease long-poll re-armed while credit remains, results applied as they
 * come.
 */
import { ANY_SCOPE, type ScopeFilter } from '../core/types.ts';
import { sendBatch, splitByType, type PendingResult } from '../worker/pending.ts';
import { WorkerRunner, type RunnerOptions } from '../worker/runner.ts';
import type { CompleteItem, SettleItem, WorkSession, WorkSessionEvents, WorkSource } from '../worker/source.ts';
import { LeasePump } from './lease-pump.ts';
import type { CompleteOptions, LeaseOptions } from './queue-options.ts';
import type { Queue } from './queue.ts';

export interface LocalWorkerOptions extends RunnerOptions {
  /** Lease from one tenant or the system scope; default: every scope (system jobs only for `system:` kinds). */
  readonly scope?: ScopeFilter;
}

/**
 * A worker on a queue in this process. `close()` releases the jobs it has not
 * started and waits for the running ones; it does not close the queue, which
 * stays the caller's.
 */
export class LocalWorker extends WorkerRunner {
  constructor(
    readonly queue: Queue,
    options: LocalWorkerOptions,
  ) {
    // Deadlines are the queue's times: hold them against the queue's clock unless told otherwise.
    super(localSource(queue, options.scope ?? ANY_SCOPE), { ...options, clock: options.clock ?? queue.clock });
  }
}

/** How long one lease call parks; new work wakes it long before. */
const LEASE_WAIT_MS = 30_000;

function localSource(queue: Queue, scope: ScopeFilter): WorkSource {
  const settle = async (item: SettleItem): Promise<void> => {
    switch (item.type) {
      case 'complete':
        await queue.complete(item.jobId, item.fence, completeOptions(item), scope);
        return;
      case 'fail':
        await queue.fail(item.jobId, item.fence, { error: item.error, permanent: item.permanent }, scope);
        return;
      case 'release':
        await queue.release(item.jobId, item.fence, scope);
        return;
    }
  };
  return {
    name: 'the queue in this process',
    open: (params, events) => {
      const batcher = new SettleBatcher(queue, scope);
      return new LocalSession(queue, { workerId: params.workerId, kinds: params.kinds ?? [], scope }, events, (item) =>
        batcher.settle(item),
      );
    },
    heartbeat: async (jobId, fence, progress) =>
      (await queue.heartbeat(jobId, fence, progress === undefined ? {} : { progress }, scope)).leaseDeadline ?? 0,
    checkpoint: async (jobId, fence, continuation) =>
      (await queue.checkpoint(jobId, fence, continuation, scope)).leaseDeadline ?? 0,
    settle,
    close: () => {},
  };
}

class LocalSession implements WorkSession {
  private readonly stop = new AbortController();
  private readonly pump: LeasePump;
  private readonly settling = new Set<Promise<void>>();

  constructor(
    queue: Queue,
    lease: LeaseOptions,
    events: WorkSessionEvents,
    private readonly apply: (item: SettleItem) => Promise<void>,
  ) {
    this.pump = new LeasePump(queue, lease, LEASE_WAIT_MS, this.stop.signal, (jobs) => events.onJobs(jobs));
    // Nothing stands between this worker and the queue: the session is open once the runner holds it.
    queueMicrotask(() => events.onOpen());
    void this.pump.done
      .then(
        () => null,
        (caught: unknown) => (caught instanceof Error ? caught : new Error(String(caught))),
      )
      .then(async (error) => {
        await Promise.all(this.settling);
        events.onEnd(error);
      });
  }

  get writable(): boolean {
    return !this.stop.signal.aborted;
  }

  grant(n: number): void {
    if (this.writable) this.pump.grant(n);
  }

  settle(item: SettleItem): Promise<void> {
    const done = this.apply(item);
    const tracked = done.then(
      () => undefined,
      () => undefined,
    );
    this.settling.add(tracked);
    void tracked.then(() => this.settling.delete(tracked));
    return done;
  }

  end(): void {
    this.stop.abort();
  }

  cancel(): void {
    this.end();
  }
}

/**
 * Results of one event-loop turn go to the queue together, as the Work
 * stream's do through the server: one `completeEach`, one `failEach` and one
 * `releaseEach`, so the store locks and writes them in one pass.
 */
class SettleBatcher {
  private queued: PendingResult[] = [];

  constructor(
    private readonly queue: Queue,
    private readonly scope: ScopeFilter,
  ) {}

  settle(item: SettleItem): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.queued.length === 0) setImmediate(() => void this.flush());
      this.queued.push({ item, resolve, reject });
    });
  }

  private async flush(): Promise<void> {
    const { completes, fails, releases } = splitByType(this.queued);
    this.queued = [];
    await Promise.all([
      sendBatch(completes, () =>
        this.queue.completeEach(
          completes.map(({ item }) => ({ jobId: item.jobId, fence: item.fence, ...completeOptions(item) })),
          this.scope,
        ),
      ),
      sendBatch(fails, () =>
        this.queue.failEach(
          fails.map(({ item }) => ({
            jobId: item.jobId,
            fence: item.fence,
            error: item.error,
            permanent: item.permanent,
          })),
          this.scope,
        ),
      ),
      sendBatch(releases, () =>
        this.queue.releaseEach(
          releases.map(({ item }) => ({ jobId: item.jobId, fence: item.fence })),
          this.scope,
        ),
      ),
    ]);
  }
}

/** A complete item's options for the queue: its successors, and its result when it has one. */
function completeOptions(item: CompleteItem): CompleteOptions {
  return item.result === undefined
    ? { successors: item.successors }
    : { successors: item.successors, result: item.result };
}
