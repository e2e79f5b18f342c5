/**
 * The scheduler: every `schedules.interval_ms` it fires the schedules that are due, each in one
 * atomic write of the store (the job and the schedule's next due time together), so several
 * servers on one store, a restart mid-pass or a repeated pass enqueue one job per due time.
 * It holds no state of its own between passes: the store's due index is the whole truth, so
 * its memory stays bounded however many schedules tenants create.
 */
import type { Clock } from '../core/clock.ts';
import type { SchedulesConfig } from '../core/config.ts';
import type { Logger } from '../core/logger.ts';
import { fire } from '../core/schedules.ts';
import type { JobRecord, Micros } from '../core/types.ts';
import type { FiredSchedule, JobStore } from '../storage/types.ts';
import { newJobId } from '../codec/job-ids.ts';
import { PeriodicService } from './periodic.ts';

/** Schedules fired per store call; a pass repeats until fewer were due. */
const FIRE_BATCH = 100;

export interface SchedulerOptions {
  readonly store: JobStore;
  readonly config: SchedulesConfig;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Called with the jobs a pass created, so lease waiters wake and observers hear of them. */
  readonly onEnqueued: (records: readonly JobRecord[], now: Micros) => void;
}

export class Scheduler {
  private readonly service: PeriodicService;

  constructor(private readonly options: SchedulerOptions) {
    this.service = new PeriodicService(
      'scheduler',
      options.config.interval_ms,
      async () => void (await this.tick()),
      options.logger,
    );
  }

  /** Start the timer if `schedules.enabled`. Idempotent. */
  start(): void {
    if (this.options.config.enabled) this.service.start();
  }

  /** Whether the timer runs (started, and `schedules.enabled`). */
  get running(): boolean {
    return this.service.isRunning;
  }

  /** Stop the timer and wait for a pass in flight. Tolerates a second call. */
  stop(): Promise<void> {
    return this.service.stop();
  }

  /**
   * One pass at the clock's time: fire every due schedule, once each. Returns what fired;
   * tests call it after moving a `ManualClock` instead of waiting for the timer.
   */
  async tick(): Promise<FiredSchedule[]> {
    const { store, clock, logger, onEnqueued } = this.options;
    const now = clock.now();
    const all: FiredSchedule[] = [];
    for (;;) {
      const fired = await store.fireDueSchedules(now, FIRE_BATCH, (schedule) => fire(schedule, now, newJobId()));
      all.push(...fired);
      const created = fired.filter((f) => f.job.created).map((f) => f.job.record);
      for (const { schedule, job } of fired) {
        logger.info(
          {
            schedule: schedule.name,
            tenant: schedule.scope.type === 'tenant' ? schedule.scope.tenant : null,
            jobId: job.record.jobId,
            idempotencyKey: job.record.idempotencyKey,
            created: job.created,
          },
          'schedule fired',
        );
      }
      onEnqueued(created, now);
      // Fewer than a batch: nothing more was due (a skipped, locked one is another server's).
      if (fired.length < FIRE_BATCH) return all;
    }
  }
}
