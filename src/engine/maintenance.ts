/**
 * The queue's background work, on one lifecycle: the reaper, which hands
 * expired leases back (Pending behind a backoff gate, or Dead at the
 * attempt ceiling), and the maintenance runner, which schedules and runs the
 * server's own `system:` jobs, retention pruning among them.
 */
import type { Clock } from '../core/clock.ts';
import type { TelhaConfig } from '../core/config.ts';
import { ErrorCode, isTelhaError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import * as transitions from '../core/transitions.ts';
import { JobState, SYSTEM_SCOPE, type JobRecord, type LeaseFence, type Micros, type NewJob } from '../core/types.ts';
import type { JobStore } from '../storage/types.ts';
import { PeriodicService } from './periodic.ts';

/** The kind of the retention job the maintenance runner schedules every `retention.prune_interval_secs`. */
export const PRUNE_KIND = 'system:prune';
/** The worker id the maintenance runner leases system jobs under. */
export const MAINTENANCE_WORKER_ID = 'telha:maintenance';
const REAP_BATCH = 1_000;
const PRUNE_BATCH = 1_000;

export interface ReapResult {
  /** Expired leases handed back, Dead ones included. */
  readonly reaped: number;
  /** Of those, jobs that had no attempts left and went to Dead. */
  readonly dead: number;
}

/** A handler of a `system:` job kind, run by the maintenance runner. Its string is logged as the job's summary. */
export type SystemTask = (job: JobRecord) => Promise<string | void>;

/** What the maintenance runner needs of the queue to run system jobs through the normal transitions. */
export interface SystemJobQueue {
  enqueue(job: NewJob, scope: typeof SYSTEM_SCOPE): Promise<unknown>;
  leaseNext(options: {
    workerId: string;
    kinds: readonly string[];
    scope: typeof SYSTEM_SCOPE;
  }): Promise<JobRecord | null>;
  complete(jobId: string, fence: LeaseFence): Promise<unknown>;
  fail(jobId: string, fence: LeaseFence, options: { error: string }): Promise<unknown>;
}

export interface MaintenanceOptions {
  readonly store: JobStore;
  readonly queue: SystemJobQueue;
  readonly config: TelhaConfig;
  readonly policy: transitions.RetryPolicy;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Called with the records a reaper pass changed, so waiters wake and dead-letters are logged. */
  readonly onReaped: (records: readonly JobRecord[], now: Micros) => void;
}

export class Maintenance {
  private readonly reaper: PeriodicService;
  private readonly runner: PeriodicService;
  private readonly tasks = new Map<string, SystemTask>();

  constructor(private readonly options: MaintenanceOptions) {
    const { config, logger } = options;
    this.reaper = new PeriodicService(
      'reaper',
      config.jobs.reaper_interval_secs * 1000,
      async () => void (await this.reapExpired()),
      logger,
    );
    this.runner = new PeriodicService(
      'maintenance',
      config.retention.prune_interval_secs * 1000,
      () => this.runSystemJobs(),
      logger,
    );
    this.tasks.set(PRUNE_KIND, () => this.prune().then((n) => `pruned=${n}`));
  }

  /** Start the reaper, and the maintenance runner if retention is on. Idempotent. */
  start(): void {
    this.reaper.start();
    if (this.options.config.retention.enabled) this.runner.start();
  }

  /** Stop both and wait for a pass in flight. Tolerates a second call. */
  async stop(): Promise<void> {
    await Promise.all([this.reaper.stop(), this.runner.stop()]);
  }

  /**
   * One reaper pass over every scope, tenant and system: each lease whose
   * deadline has passed counts as a failed attempt. Each job is re-checked
   * inside its own atomic update, so a heartbeat that lands first wins.
   */
  async reapExpired(): Promise<ReapResult> {
    const { store, policy, clock } = this.options;
    const now = clock.now();
    let reaped = 0;
    let dead = 0;
    for (;;) {
      const ids = await store.expiredLeases(now, REAP_BATCH);
      // Each job is its own atomic update; running them together lets group
      // commit write a whole batch of reclaims at once instead of one write per job.
      const results = await Promise.all(
        ids.map(async (id) => {
          try {
            return (await store.update(id, (current) => ({ record: transitions.reap(current, now, policy) }), now))
              .record;
          } catch (error) {
            // Extended or finished since it was listed: nothing to reap.
            if (isTelhaError(error, ErrorCode.FailedPrecondition) || isTelhaError(error, ErrorCode.NotFound))
              return null;
            throw error;
          }
        }),
      );
      const changed = results.filter((r): r is JobRecord => r !== null);
      for (const record of changed) {
        reaped++;
        if (record.state === JobState.Dead) dead++;
        else
          this.options.logger.info(
            { jobId: record.jobId, kind: record.kind, tenant: record.tenant, attempts: record.attempts },
            'reaped an expired lease',
          );
      }
      this.options.onReaped(changed, now);
      if (ids.length < REAP_BATCH || changed.length === 0) return { reaped, dead };
    }
  }

  /**
   * Delete Completed, Dead and Cancelled jobs past their retention periods, and transitions log
   * entries past theirs (`watch.retain_secs`, `watch.retain_events`). Returns how many jobs went.
   */
  async prune(): Promise<number> {
    const { completed_secs, dead_secs, cancelled_secs } = this.options.config.retention;
    const now = this.options.clock.now();
    let total = 0;
    for (const [state, secs] of [
      [JobState.Completed, completed_secs],
      [JobState.Dead, dead_secs],
      [JobState.Cancelled, cancelled_secs],
    ] as const) {
      for (;;) {
        const n = await this.options.store.prune({
          state,
          finishedBefore: now - secs * 1_000_000,
          limit: PRUNE_BATCH,
        });
        total += n;
        if (n < PRUNE_BATCH) break;
      }
    }
    const { retain_secs, retain_events } = this.options.config.watch;
    for (;;) {
      const n = await this.options.store.pruneLog({
        before: now - retain_secs * 1_000_000,
        maxEntries: retain_events,
        limit: PRUNE_BATCH,
      });
      if (n < PRUNE_BATCH) break;
    }
    return total;
  }

  /**
   * One maintenance tick: schedule this interval's `system:prune` job in the
   * system scope (once per interval, by its idempotency key), then lease and
   * run every due system job. A crash mid-task leaves the job leased; the
   * reaper hands it back.
   */
  async runSystemJobs(): Promise<void> {
    const { queue, config, clock, logger } = this.options;
    const interval = config.retention.prune_interval_secs * 1_000_000;
    await queue.enqueue(
      { kind: PRUNE_KIND, priority: 0, idempotencyKey: `${PRUNE_KIND}@${Math.floor(clock.now() / interval)}` },
      SYSTEM_SCOPE,
    );
    const lease = { workerId: MAINTENANCE_WORKER_ID, kinds: [...this.tasks.keys()], scope: SYSTEM_SCOPE };
    for (;;) {
      const job = await queue.leaseNext(lease);
      if (job === null) return;
      const fence = { workerId: MAINTENANCE_WORKER_ID, leaseGeneration: job.leaseGeneration };
      const task = this.tasks.get(job.kind);
      try {
        if (task === undefined) throw new Error(`no handler for ${job.kind}`);
        const summary = await task(job);
        await queue.complete(job.jobId, fence);
        logger.info({ jobId: job.jobId, kind: job.kind, summary: summary ?? null }, 'system job done');
      } catch (error) {
        await queue.fail(job.jobId, fence, { error: error instanceof Error ? error.message : String(error) });
      }
    }
  }
}
