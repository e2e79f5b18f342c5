/**
 * Leasing for a worker that grants credit: the queue's lease long-poll,
 * re-armed for as long as credit remains, each leased batch handed on at
 * once. The Work stream's server side and `LocalWorker`'s session both run
 * on it; they differ only in where the jobs go.
 */
import { MAX_LEASE_BATCH } from '../core/bounds.ts';
import type { JobRecord } from '../core/types.ts';
import type { LeaseManyOptions, LeaseOptions } from './queue-options.ts';
import type { Queue } from './queue.ts';

export class LeasePump {
  private credit = 0;
  private creditArrived: (() => void) | null = null;
  /** Resolves when `signal` aborts and the pump has stopped; rejects with a lease call's error. */
  readonly done: Promise<void>;

  constructor(
    private readonly queue: Queue,
    private readonly lease: LeaseOptions,
    private readonly waitMs: number,
    private readonly signal: AbortSignal,
    private readonly deliver: (jobs: JobRecord[]) => void,
  ) {
    signal.addEventListener('abort', () => this.creditArrived?.(), { once: true });
    this.done = this.run();
  }

  /** Credit granted and not yet used. */
  get outstanding(): number {
    return this.credit;
  }

  /** Allow `n` more jobs. */
  grant(n: number): void {
    if (n <= 0) return;
    this.credit += n;
    this.creditArrived?.();
  }

  /**
   * The lease call's options. Field by field, not `{ ...this.lease, limit, ... }`: on Node 20 a
   * spread with fields added after it costs microseconds (see `withChanges` in core/transitions.ts),
   * and without prefetch a worker makes one lease call a job.
   */
  private leaseOptions(limit: number): LeaseManyOptions {
    const { workerId, kinds, scope } = this.lease;
    return {
      workerId,
      limit,
      waitMs: this.waitMs,
      signal: this.signal,
      ...(kinds === undefined ? {} : { kinds }),
      ...(scope === undefined ? {} : { scope }),
    };
  }

  private async run(): Promise<void> {
    while (!this.signal.aborted) {
      if (this.credit === 0) {
        await new Promise<void>((resolve) => (this.creditArrived = resolve));
        this.creditArrived = null;
        continue;
      }
      const limit = Math.min(this.credit, MAX_LEASE_BATCH);
      const jobs = await this.queue.lease(this.leaseOptions(limit));
      if (jobs.length === 0) continue;
      // Handed on even when the pump is stopping: they are leased to this worker now.
      this.credit -= jobs.length;
      this.deliver(jobs);
    }
  }
}
